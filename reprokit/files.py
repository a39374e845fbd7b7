"""Files: where the kit's parts are, how a file is written and read, and each format's version.

- Paths: `REPO` (the checkout), `BENCH`, `IMAGES`, `COMPOSE`, `DATA`, `SCHEMAS`, each defined once here.
- Atomic writes (temp file in the same directory, fsync, rename; validated against a schema first when
  one is named) and strict JSON reads (NaN, Infinity and overflowing numbers are errors).
- `utcnow` and `kit_info`, the time stamp and the kit identity every record carries.
- `FORMATS`: the current `schema_version` of every file format the kit writes, with the history of
  each (pyperf keeps one the same way); a test holds them equal to the schemas' `const`.

Only the standard library and reprokit.validate (imported where a write names a schema) are used, so
any module may import this one without pulling in pandas, jinja2 or docker.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from reprokit import __version__
from reprokit.errors import UserError

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "reprokit"
DATA = PACKAGE / "data"
SCHEMAS = PACKAGE / "schemas"
BENCH = REPO / "bench"
IMAGES = REPO / "images"
COMPOSE = REPO / "compose"

# schema_version of each format the kit writes: the current one and what each version changed.
# Bump a version here and in its schema's `const` together; tests/test_files.py checks they agree.
FORMATS: dict[str, tuple[int, dict[int, str]]] = {
    "run": (1, {1: "first version (issue 1)"}),
    "cell_result": (1, {1: "first version (issue 1); bench/harness.py SCHEMA_VERSION writes it"}),
    "job": (1, {1: "first version (issue 1)"}),
    "report": (2, {1: "report.json of the first kits, not validated",
                   2: "validated against report.schema.json (verdicts, intervals, claims)"}),
    "image_lock": (1, {1: "first version"}),
    "image_archive": (1, {1: "first version"}),
    "data_lock": (1, {1: "first version"}),
    "data_check": (1, {1: "first version (`reproduce.py data --check --json`; no schema)"}),
    "data_sets": (1, {1: "first version (`reproduce.py data --json`; no schema)"}),
    "probe_cache": (1, {1: "first version"}),
    "rerun_coverage": (1, {1: "first version"}),
    "cell_times": (1, {1: "first version"}),
    "stack_attempts": (1, {1: "first version"}),
}


def version(fmt: str) -> int:
    """The current schema_version of format `fmt` (a key of FORMATS)."""
    return FORMATS[fmt][0]


def utcnow() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def kit_info() -> dict:
    """Kit version and the git commit of the checkout (null outside a git checkout)."""
    commit, dirty = None, None
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip() or None
        status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "reprokit",
                                 "bench"], capture_output=True, text=True, timeout=10).stdout
        dirty = bool(status.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return {"version": __version__, "git_commit": commit, "git_dirty": dirty}


def _write_atomic(path: Path, write: Any, sync: bool) -> None:
    """Create `path` through a temp file beside it (mode 0644: results are meant to be shared),
    `write(file)` filling it, then a rename; the temp file is removed if anything fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600
        with os.fdopen(fd, "w") as f:
            write(f)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, doc: Any, schema: str | None = None) -> None:
    if schema:
        from reprokit import validate
        errs = validate.errors(schema, doc)
        if errs:
            raise ValueError(f"refusing to write {path}: {schema} schema: {errs[0]}")
    _write_atomic(path, lambda f: json.dump(doc, f, indent=1, sort_keys=False, allow_nan=False),
                  sync=True)


def write_text_atomic(path: Path, text: str) -> None:
    _write_atomic(path, lambda f: f.write(text), sync=False)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    v = float(text)
    if v != v or v in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is not a finite number")
    return v


def loads_strict(text: str) -> Any:
    """JSON as the standard has it: NaN, Infinity and numbers too large for a double are errors
    (Python's json module accepts them by default)."""
    return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)


def read_json(path: Path, schema: str) -> dict:
    """A result file, strictly parsed and validated; a missing or unreadable file is a UserError."""
    from reprokit import validate
    try:
        doc = loads_strict(path.read_text())
    except FileNotFoundError as e:
        raise UserError(f"{path} does not exist; give a run directory under results/") from e
    except (OSError, ValueError) as e:  # JSONDecodeError is a ValueError
        raise UserError(f"{path} is unreadable ({e}); re-run the cell or remove the file") from e
    validate.check(schema, doc, str(path))
    return doc
