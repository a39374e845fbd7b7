"""A run as an RO-Crate research object: `reproduce.py export RUN` writes it, `verify FILE` checks it
anywhere, offline and without the kit's checkout data, `report FILE` renders from it (docs/CRATE.md).

The crate is a zip (RO-Crate 1.1, Process Run Crate profile 0.5) holding:

- `ro-crate-metadata.json`: every file below with its sha256 and size; one CreateAction per cell
  process (`#cell-...`: the stack as instrument, the container image by ID where one ran, the job
  file as object, the cell result and log as result, start/end, status and the reason of a failure,
  the reproduction kind of its numbers); `#report`, the rendering of the report (the kit that
  exported as instrument, the run's results and the data snapshot as object, the report as result);
  the kit that made the run (`#kit-run`) and the one that exported it (`#kit-export`) with version
  and git commit; the host (and Slurm nodes) from their fingerprints.
- `run/`: every file of the run directory (run.json, cells/, jobs/, logs/, report.*, plots/) as it is.
- `kit-data/`: the snapshot of the kit's data files the report read (reprokit/data's relative layout:
  suites, published numbers, sources, claims, peaks, cpus, policies, ...). `verify` and `report FILE`
  read the data from there (a `reprokit.kitdata.KitData` of it), never from reprokit/data.
- `images/images.tar` (`export --with-images`): the image archive of `reproduce.py archive` holding the
  images the cells ran in, each the ContainerImage entity of its actions by image ID.

Modules: `export` (write), `archive` (open a crate file), `checks` (verify), `profile` (the profile
checks: roc-validator where installed, the kit's own otherwise).
"""

from __future__ import annotations

from reprokit.errors import UserError

RUN_DIR = "run"
DATA_DIR = "kit-data"
METADATA = "ro-crate-metadata.json"
PROCESS_RUN_CRATE = "https://w3id.org/ro/wfrun/process/0.5"
RO_CRATE = "https://w3id.org/ro/crate/1.1"
WFRUN_TERMS = "https://w3id.org/ro/terms/workflow-run"
# Written in the root dataset's `identifier`: what tells a crate of this kit from any other RO-Crate.
KIT_MARK = "reprokit-run-crate"
# The report files render() writes (plots/*.svg besides); verify re-renders and compares them.
REPORT_FILES = ("report.md", "report.html", "report.json")
IMAGE_ARCHIVE = "images/images.tar"


class CrateInvalid(UserError):
    """The crate is tampered, truncated or incomplete: one line naming what, exit status 1."""

    exit_code = 1
