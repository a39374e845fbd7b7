"""cells/*.json, a cell's result (bench/harness.py writes it; the host adds what its runner saw): versions.

Versions 1 to 4 were all stamped 1 (`stamped_from` = 5); their additions were optional fields
(absent: not recorded), so a document stamped 1 needs only the last step.
"""

from __future__ import annotations

from reprokit.formats.chain import Format
from reprokit.formats.run import skip_from_reason

HISTORY = {
    1: "2026-11-21 (4a18297): the first cell result: identity, status, metrics with raw samples, "
       "implementation, stack fingerprint, kit",
    2: "2026-11-24 (8a3a08a, 9cbe633, 6308c98, 1faee71): process files and their merge (`process`, "
       "`repeat`, `processes`), a metric's start `state`, `environment`, the host's `runner` record",
    3: "2026-11-26 (ea213c3, 9d66c33, f7c2ba4, e5f5632, 7c99965): `gpus` and `gpus_source`, "
       "`jit_warmup_s`, `gpu_state`, `precision`, `threads`",
    4: "2026-11-27 (29755ac, ff43ca6, b1b19c6): `jit_cache`, `energy`, a metric's `real_work` check",
    5: "2026-11-28: versions stamped (bench/harness.py SCHEMA_VERSION); a cell left or stopped by "
       "--time-limit says so as data (`skip`, as run.json's cell entries)",
    6: "2026-11-28: `cut`, what a process stopped before its result had measured (bench/harness.py "
       "keeps its samples as it goes)",
    7: "2026-11-29: a GPU cell's `stack_fingerprint.driver_load` (bench/driver_load.py: the libcuda it "
       "loaded, compat libraries, glibc fit)",
    8: "2026-11-29: `code`, the cell's code version (the sha256 of the bench/ files its process ran): "
       "a host's history compares only runs of one code",
}


def _keep(doc: dict) -> dict:
    return doc


def to_5(doc: dict) -> dict:
    """A --time-limit skip as data, read back from the old sentence."""
    if doc.get("status") in ("skipped", "pending") and "skip" not in doc:
        skip = skip_from_reason(doc.get("reason"))
        if skip is not None:
            doc["skip"] = skip
    return doc


FORMAT = Format("cell_result", HISTORY,
                {2: _keep, 3: _keep, 4: _keep, 5: to_5, 6: _keep, 7: _keep, 8: _keep}, stamped_from=5)
