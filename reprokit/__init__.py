"""reprokit: re-run published deep-learning benchmarks in their original stacks.

`STAGES`: the host package's stages, in the order the data passes through them. A module may import
its own stage and earlier ones, never a later one (tests/core/test_import_cycles.py holds every import
to it; docs/architecture.md's module tree is drawn in this order by tools/module_tree.py). The first
stage is the flat modules of reprokit/ and the formats.
"""

__version__ = "0.1.0"

STAGES: tuple[tuple[str, ...], ...] = (
    ("errors", "formats", "files", "kitdata", "validate", "console", "printable", "checks", "results",
     "schemas", "data"),
    ("catalog",),  # the kit's data: suites, stacks, published numbers, claims
    ("probes",),  # this host: fingerprints, peaks, GPU state
    ("reader",),  # a stored run read back into the model (reprokit/reader/model.py)
    ("analysis",),  # pure: statistics, verdicts, claims, what a run can decide
    ("plan",),  # a run planned: cells, preflight, design
    ("containers",),
    ("runners",),
    ("run",),  # a plan executed; run/record.py writes run.json
    ("report",),  # a run's report, from the model alone
    ("crate",),
    ("ledger",),  # runs of many machines put together (reads crates through crate/)
    ("commands",),
    ("cli",),
)
