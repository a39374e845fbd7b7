"""The commands of the command line, one module each; only the one given is imported.

COMMANDS names them with their one-line help, in the order `reproduce.py --help` lists them (the
parser is built in reprokit/cli.py; docs/commands.md's option tables by options_doc.py)."""

COMMANDS = {
    "run": "run a suite and write its report (the default command)",
    "list": "list suites, their cells and the published numbers they map to",
    "report": "re-render the report of a run from its stored results",
    "fingerprint": "print this host's fingerprint as JSON",
    "preflight": "say, per cell, whether it can run here and why not",
    "build": "build the stack images and write the lock file",
    "audit-binaries": "read the GPU code in the stacks' CUDA binaries; compile their PTX for today's GPUs",
    "archive": "save a suite's images with their lock file into one file",
    "restore": "load an archive on another machine and verify it",
    "export": "write a run as an RO-Crate a reviewer can verify offline",
    "verify": "check a run's RO-Crate offline: checksums, schemas, profile, report re-rendered",
    "compare": "compare two runs: fingerprint diff and per-cell changes with p-values",
    "ledger": "put verified runs and crates of many machines together: per published number and claim",
    "data": "describe the data sets and check a data directory",
    "status": "where a run's cells are; re-attaches a Slurm run to its jobs",
    "generate": "regenerate every committed generated file (Dockerfiles, compose files, published data)",
    "new-benchmark": "scaffold a new published source: its table, entry, suite, FLOP model, claim, workload",
    "check-benchmark": "name every missing or inconsistent piece of a source, one line each with the fix",
}


def module(name: str):
    """The module of command `name` (`check-benchmark` -> reprokit/commands/check_benchmark.py)."""
    import importlib

    return importlib.import_module(f"reprokit.commands.{name.replace('-', '_')}")
