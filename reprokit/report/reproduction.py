"""What kind of reproduction a measured number is, in the terms ACM's artifact badges use (pure, no I/O).

ACM ("Artifact Review and Badging", version 1.1, 2020) calls a result obtained with the authors' own
artifacts *reproduced* and one obtained with an independently written implementation *replicated*.
Every workload the kit runs (bench/workloads/) is the kit's own implementation of what a source
describes: no source's script is run as published (each cell records what it implements and what it
substitutes, `implementation` in the cell result). So every measured number is a **replication**
attempt in ACM's terms, and the kind says on what: the original stack (the published framework
version, nothing substituted: `verdicts.stack_match`) or a substitute, and the original hardware (the
published device model), another model of the same class, or another class (a CPU for a GPU number:
the verdict's `hardware`). The verdict beside it says whether the attempt held; the kind says what the
attempt was.
"""

from __future__ import annotations

# The code a cell runs: the kit's implementation, for every workload (see the module docstring).
CODE = "kit"
CODE_WHY = ("bench/workloads/ are the kit's own implementations of the sources' workloads; no source's "
            "own script runs as published")
ACM = {"kit": "replication", "original": "reproduction"}
ACM_MEANING = {
    "replication": "ACM 'results replicated': measured with an independent implementation, not the "
                   "authors' artifacts",
    "reproduction": "ACM 'results reproduced': measured with the authors' own artifacts",
}


def kind(analysis: dict, measured: bool) -> dict | None:
    """The kind of a published number's re-measurement from its verdict (`analysis`: the verdict dict
    of reprokit.analysis.verdicts), or None when nothing was measured for it.

    {"acm": "replication", "code": "kit", "stack": "original" | "substitute" | None,
     "hardware": "original" | "same class" | "other class" | None, "label": one line}"""
    if not measured:
        return None
    st = analysis.get("stack")
    stack = None if not st else ("original" if st.get("same") else "substitute")
    hw = analysis.get("hardware") or {}
    if hw.get("same_model"):
        hardware = "original"
    elif hw.get("same_class"):
        hardware = "same class"
    elif hw.get("same_class") is False:
        hardware = "other class"
    else:
        hardware = None
    acm = ACM[CODE]
    parts = ["kit code", f"{stack or 'unknown'} stack",
             {"original": "original hardware", "same class": "other model, same class",
              "other class": "other hardware class", None: "hardware unknown"}[hardware]]
    return {"acm": acm, "code": CODE, "stack": stack, "hardware": hardware,
            "label": f"{acm}: {', '.join(parts)}"}
