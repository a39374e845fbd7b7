"""The formats whose steps only keep the document, and the crate's own mark.

Each change of one of them is an optional field: a version with its history line and a step that keeps
the document. A format whose change needs a real step moves to a module of its own, as run.py.
"""

from __future__ import annotations

from reprokit.formats.chain import Format


def _keep(doc: dict) -> dict:
    return doc


FORMATS = (
    Format("job", {1: "2026-11-21 (4a18297): the job file bench/harness.py reads; fields added since "
                      "(`facts`, a cell's `precision`, `device`, `timeout_jit_allowance_s`) are optional, "
                      "and a job is written again by every run that uses it",
                   2: "2026-11-29: a cell's `code`, its code version (reprokit/plan/code_version.py), "
                      "which the harness copies into the cell result"},
           {2: _keep}),
    Format("crate", {1: "2026-11-26 (41a11e4): a run as a zipped RO-Crate 1.1 (Process Run Crate 0.5), "
                        "root identifier reprokit-run-crate:<run id>",
                     2: "2026-11-28: the root dataset states the crate's format `version`"},
           {2: _keep}),
    Format("image_lock", {1: "2026-11-22 (f174d56): first version",
                          2: "2026-11-29: `partial`, a GPU flavour built only as far as the machine "
                             "reaches (its wheelhouse), with what stopped it"},
           {2: _keep}),
    Format("image_archive", {1: "2026-11-22 (f174d56): first version"}),
    Format("data_lock", {1: "2026-11-22 (0b62e5e): first version"}),
    Format("data_check", {1: "2026-11-24: first version (`reproduce.py data --check --json`; no schema)"}),
    Format("data_sets", {1: "2026-11-24: first version (`reproduce.py data --json`; no schema)"}),
    Format("probe_cache", {1: "2026-11-24 (e6fabb5): first version"}),
    Format("rerun_coverage", {1: "2026-11-24 (c564cf4): first version"}),
    Format("binary_audit", {1: "2026-11-29: first version (`reproduce.py audit-binaries`)"}),
    Format("cell_times", {1: "2026-11-24 (e34c25d): first version"}),
    Format("stack_attempts", {1: "2026-11-24 (6308c98): first version"}),
    Format("published", {1: "2026-11-21: first version (reprokit/catalog/published_csv.py writes it from "
                            "the reference CSV)"}),
)
