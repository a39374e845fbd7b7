"""run.json, the run record: its versions and the steps between them.

Versions 1 to 5 were all stamped 1 by the kits that wrote them (`stamped_from` = 6): a document
stamped 1 is of any of them, and each step keeps what a document already has. Their additions were
optional fields (absent: not recorded) except where a step says otherwise.
"""

from __future__ import annotations

import re

from reprokit.formats.chain import Format

HISTORY = {
    1: "2026-11-21 (4a18297): the first run record: identity, host fingerprint, kit, stacks, cell entries; "
       "2026-11-22 (6d787c1, bbcc213): `cpu_peak`, `preflight`",
    2: "2026-11-24 (8a3a08a, 1faee71, 0d67eb8): `repeat` (run --repeat K); the driver's lifecycle "
       "(`driver`, `current`, `incidents`); `slurm`",
    3: "2026-11-26 (9d66c33, 26daa5d, a5fda19, 0c6792a, 507a811): `jit_warmups`, `environments`, "
       "`cell_specs`, the default `design`, `data_snapshot`, `gpu_peak`, `options`",
    4: "2026-11-27 (d694835, 746de69): the design's `budget`; the design by role (`design.kind` auto, "
       "`judgment`, `decidability`, per cell `role`, `sequential`, `stopped`); `options.time_limit_s`",
    5: "2026-11-28 (8f2eca6): `rejudged`, written by `report RUN --rejudge OUT` into the copy",
    6: "2026-11-28: versions stamped; every `design` names its `kind` (`fixed`: the Kalibera & Jones "
       "design, or `auto`: by role); a cell entry left or stopped by --time-limit says so as data "
       "(`skip`: by, when, limit_s, left_s, needs_s, ran_s), and a sequential cell that stopped early "
       "its `stop` (by, after, open), instead of in prose alone; every Slurm job array says whether it "
       "held whole nodes (`exclusive`)",
    7: "2026-11-28: `rejudged` is the chain of rejudges, oldest first (a rejudge of a rejudged copy "
       "appends; it overwrote the one before, and with it the way back to the original run and the "
       "digests of the data that run started with)",
    8: "2026-11-29: `history`, this host's earlier runs beside the run when it started (their central "
       "values per cell and the spread of their process medians): the between-run term of its re-run "
       "intervals",
    9: "2026-11-29: a history record's `code`, the code version of the cell in that earlier run "
       "(its cell result's `code`): the between-run term counts runs of one code together",
}


def _keep(doc: dict) -> dict:
    """A version whose additions are optional fields: nothing to change."""
    return doc


# The prose the kits of versions 4 and 5 wrote for a cell --time-limit left (reprokit/run/serial.py,
# reprokit/run/driver.py), read back into `skip`.
_LIMIT = r"left by --time-limit (?P<limit>[\d.e+]+) min: "
_BEFORE = re.compile(_LIMIT + r"(?:(?P<left>\d+) s were left, it needs about (?P<need>\d+) s|"
                     r"(?P<passed>the limit had passed))")
_PLANNED = re.compile(_LIMIT + r"it would take about (?:(?P<min>[\d.]+) min|an unknown time)")
_WHILE = re.compile(r"stopped at the run's --time-limit after (?P<ran>\d+) s \(the limit left it "
                    r"(?P<left>\d+) s of its (?P<own>\d+) s")


def _num(text: str | None) -> float | None:
    return float(text) if text else None


def skip_from_reason(reason: str | None) -> dict | None:
    """The `skip` record of an entry whose reason is one of the old --time-limit sentences, else None."""
    text = str(reason or "")
    if m := _BEFORE.search(text):
        return {"by": "time_limit", "when": "before_start", "limit_s": float(m["limit"]) * 60,
                "left_s": 0.0 if m["passed"] else _num(m["left"]), "needs_s": _num(m["need"]),
                "ran_s": None}
    if m := _PLANNED.search(text):
        need = _num(m["min"])
        return {"by": "time_limit", "when": "planned", "limit_s": float(m["limit"]) * 60, "left_s": None,
                "needs_s": need * 60 if need is not None else None, "ran_s": None}
    if m := _WHILE.search(text):
        return {"by": "time_limit", "when": "while_running", "limit_s": None, "left_s": _num(m["left"]),
                "needs_s": _num(m["own"]), "ran_s": _num(m["ran"])}
    return None


_DECIDED = re.compile(r"^decided after (?P<n>\d+) processes")
_CAP = re.compile(r"^undecided after (?P<n>\d+) processes \(the design's cap\): (?P<open>.*)$")
_STOPPED = re.compile(r"^stopped by --time-limit after (?P<n>\d+) processes")


def stop_from_text(text: str) -> dict | None:
    """The `stop` record of a sequential cell's old `stopped` sentence, else None."""
    if m := _DECIDED.match(text):
        return {"by": "decided", "after": int(m["n"]), "open": []}
    if m := _CAP.match(text):
        return {"by": "cap", "after": int(m["n"]), "open": [x for x in m["open"].split("; ") if x]}
    if m := _STOPPED.match(text):
        return {"by": "time_limit", "after": int(m["n"]), "open": []}
    return None


def to_6(doc: dict) -> dict:
    """Every design names its kind; --time-limit skips and early stops as data; each Slurm array's
    node sharing as data."""
    design = doc.get("design")
    if isinstance(design, dict):
        design.setdefault("kind", "fixed")
        for entry in (design.get("cells") or {}).values():
            if isinstance(entry, dict) and isinstance(entry.get("stopped"), str) and "stop" not in entry:
                stop = stop_from_text(entry["stopped"])
                if stop is not None:
                    entry["stop"] = stop
    slurm = doc.get("slurm")
    if isinstance(slurm, dict):  # arrays whose sbatch line was not kept held whole nodes by the option
        held = (slurm.get("options") or {}).get("exclusive", True) is not False
        for job in slurm.get("jobs") or []:
            if isinstance(job, dict) and "exclusive" not in job:
                job["exclusive"] = "--exclusive" in job["sbatch"] if "sbatch" in job else held
    for entry in doc.get("cells") or []:
        if isinstance(entry, dict) and entry.get("status") in ("skipped", "pending") and "skip" not in entry:
            skip = skip_from_reason(entry.get("reason"))
            if skip is not None:
                entry["skip"] = skip
    return doc


def to_7(doc: dict) -> dict:
    """`rejudged`: the one rejudge a copy recorded becomes a chain of one."""
    if isinstance(doc.get("rejudged"), dict):
        doc["rejudged"] = [doc["rejudged"]]
    return doc


def to_8(doc: dict) -> dict:
    """A run of version 7 or before recorded no history: its re-run intervals have no between-run
    term and say they cover processes only (reprokit/analysis/run_level.py), which is not the same
    as a host with no earlier runs (an empty history, which takes the device class's default)."""
    return doc


def to_9(doc: dict) -> dict:
    """History records of version 8 name no code version: read as one version together, as the
    kit that wrote them counted them."""
    return doc


FORMAT = Format("run", HISTORY, {2: _keep, 3: _keep, 4: _keep, 5: _keep, 6: to_6, 7: to_7, 8: to_8,
                                 9: to_9}, stamped_from=6)
