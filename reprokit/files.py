"""Files: where the kit's parts are, and how a file is written and read.

- Paths: `REPO` (the checkout), `BENCH`, `IMAGES`, `COMPOSE`, `SCHEMAS`, each defined once here (the
  kit's data files: reprokit/kitdata.py).
- Atomic writes (temp file in the same directory, fsync, rename; validated against a schema first when
  one is named) and strict JSON reads (NaN, Infinity and overflowing numbers are errors).
- `utcnow` and `kit_info`, the time stamp and the kit identity every record carries.
- `bench_module(name)`: the one way host code loads a module of bench/ (by path, privately: bench/ is
  stack-side code and never on the host's sys.path).
- `read_json`: a stored document read, brought to its format's current version (reprokit/formats/)
  and validated.
Only the standard library and reprokit.validate and reprokit.formats (imported where they are needed)
are used, so any module may import this one without pulling in pandas, jinja2 or docker.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import json
import os
import signal
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from reprokit import __version__
from reprokit.errors import UserError

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parent
SCHEMAS = PACKAGE / "schemas"
BENCH = REPO / "bench"
IMAGES = REPO / "images"
COMPOSE = REPO / "compose"

# schema_version of each format the kit writes: the current one and what each version changed.
# Bump a version here and in its schema's `const` together; tests/core/test_files.py checks they agree.
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


@cache
def bench_module(name: str) -> Any:
    """bench/<name>.py (e.g. 'corpora') as a private module `reprokit_bench_<name>`, loaded once. The
    host uses it to read what the stack-side code reads (the same loaders, the same counts)."""
    spec = importlib.util.spec_from_file_location(f"reprokit_bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write_atomic(path: Path, write: Any, sync: bool, mode: str = "w") -> None:
    """Create `path` through a temp file beside it (mode 0644: results are meant to be shared),
    `write(file)` filling it, then a rename; the temp file is removed if anything fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600
        with os.fdopen(fd, mode) as f:
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


def write_bytes_atomic(path: Path, data: bytes) -> None:
    _write_atomic(path, lambda f: f.write(data), sync=False, mode="wb")


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


class DuplicateKey(ValueError):
    """A YAML mapping that gives one key twice (YAML forbids it; PyYAML keeps the later silently)."""

    def __init__(self, key: Any, first_line: int, line: int):
        super().__init__(f"key {key!r} is given twice (lines {first_line} and {line}): the second "
                         "would silently replace the first")
        self.key, self.first_line, self.line = key, first_line, line


class NotFinite(ValueError):
    """A YAML float that is not a finite number (.nan, .inf, or too large for a double)."""

    def __init__(self, text: str, line: int):
        super().__init__(f"{text!r} on line {line} is not a finite number")
        self.text, self.line = text, line


@cache
def yaml_loader() -> type:
    """The one YAML loader of the kit's data: the safe loader (libyaml's when present) that refuses a
    key given twice in one mapping (DuplicateKey) and a float that is not finite (NotFinite)."""
    import yaml
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Strict(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen: dict = {}
                for key_node, _ in node.value:  # as written: a merged key (<<) may be overridden
                    tag = key_node.tag
                    if tag == "tag:yaml.org,2002:merge":
                        continue
                    key = key_node.value if tag == "tag:yaml.org,2002:str" else self.construct_object(
                        key_node, deep=True)  # a plain string key (nearly all) needs no constructor
                    line = key_node.start_mark.line + 1
                    try:
                        if key in seen:
                            raise DuplicateKey(key, seen[key], line)
                        seen[key] = line
                    except TypeError:
                        continue  # an unhashable key: the base class reports it
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_float(self, node):
            value = super().construct_yaml_float(node)
            if value != value or value in (float("inf"), float("-inf")):
                raise NotFinite(node.value, node.start_mark.line + 1)
            return value

    Strict.add_constructor("tag:yaml.org,2002:float", Strict.construct_yaml_float)
    Strict.__name__ = Strict.__qualname__ = f"Strict{base.__name__}"
    return Strict


def load_yaml(text: str) -> Any:
    """`text` read by the kit's YAML loader (`yaml_loader`): raises yaml.YAMLError, DuplicateKey,
    NotFinite, or ValueError/OverflowError for a value YAML cannot build (a date such as 2021-13-01)."""
    import yaml
    return yaml.load(text, Loader=yaml_loader())


# The largest file each kind of reader takes, in bytes: one table for every reader of a file the kit
# did not just write itself. A bigger file, or one that is not a regular file (a device, a FIFO, a
# symlink to /dev/zero), is refused before a byte is read (unbounded, a cell file linked to /dev/zero
# was read until MemoryError). The figures leave room above the largest legitimate file: a cell
# result holds at most ~100,000 samples of ~20 metrics at ~40 bytes (80 MB), run.json one entry per
# cell, a data file the kit's YAML.
READ_LIMITS: dict[str, int] = {
    "cell_result": 256 * 2**20,
    "run": 64 * 2**20,
    "job": 64 * 2**20,
    "report": 256 * 2**20,
    "record": 16 * 2**20,  # a Slurm task record, a probe's node fingerprint
    "data": 64 * 2**20,  # reprokit/data/* and a run's data snapshot
    "crate": 256 * 2**20,  # a member of an exported run (RO-Crate)
    "archive": 16 * 2**20,  # an image archive's manifest and lock (reprokit/containers/archive.py)
}


class UnreadableFile(OSError):
    """A file a bounded reader refuses: not a regular file, or above its READ_LIMITS."""


def read_bounded(path: Path | str, kind: str) -> bytes:
    """The bytes of `path` when it is a regular file (symlinks followed) of at most READ_LIMITS[kind]
    bytes; else UnreadableFile saying why. Opened without blocking, so a FIFO cannot hang it."""
    import errno
    import stat

    limit = READ_LIMITS[kind]
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(errno.EINVAL, "not a regular file (a device, FIFO or socket; a symlink "
                                 "to one)", str(path))
        if st.st_size > limit:
            raise UnreadableFile(errno.EFBIG, f"{st.st_size} bytes, above the {limit}-byte limit of a "
                                 f"{kind} file (reprokit/files.py READ_LIMITS)", str(path))
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # it grew while being read
            raise UnreadableFile(errno.EFBIG, f"more than the {limit}-byte limit of a {kind} file "
                                 "(reprokit/files.py READ_LIMITS)", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text_bounded(path: Path | str, kind: str) -> str:
    """read_bounded as UTF-8 text (a UnicodeDecodeError is a ValueError, as a JSON error is)."""
    return read_bounded(path, kind).decode("utf-8")


def loads_bounded(path: Path | str, kind: str) -> Any:
    """Strict JSON of a file read through read_bounded (no schema check)."""
    return loads_strict(read_text_bounded(path, kind))


# What to do about a file of each kind that cannot be read.
_READ_FIX = {
    "run": "run.json is the run's record: restore it from a copy of the run, or start a new run",
    "job": "resume the run (`--resume RUN`) to write its job files again",
    "report": "render it again with `reproduce.py report RUN`",
}


def read_json(path: Path, schema: str) -> dict:
    """A stored document, strictly parsed, brought to its format's current version (an older one through
    reprokit/formats' steps; a newer one is refused) and validated; a missing or unreadable file is a
    UserError."""
    from reprokit import formats, validate
    try:
        doc = loads_strict(read_text_bounded(path, schema if schema in READ_LIMITS else "record"))
    except FileNotFoundError as e:
        raise UserError(f"{path} does not exist; give a run directory under results/") from e
    except (OSError, ValueError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        fix = _READ_FIX.get(schema, "re-run the cell or remove the file")
        raise UserError(f"{path} is unreadable ({e}); {fix}") from e
    doc = formats.upgrade(schema, doc, str(path))
    validate.check(schema, doc, str(path))
    return doc


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextlib.contextmanager
def stop_signals_held():
    """Ctrl-C, SIGTERM and SIGHUP held (blocked) for the block, so a rename or a removal it guards is
    never cut in the middle (nor a library's callback interrupted: a SIGTERM that landed in a weakref
    callback printed a traceback and was lost). Yields `between()`: called between two steps, it lets
    a held signal through there, where it raises as on Ctrl-C; one still held at the end is raised
    once the block is done."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)

    def between() -> None:
        if signal.sigpending() & _STOP_SIGNALS:
            try:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)  # its handler raises here
            finally:  # held again for what the exception unwinds through (a cleanup)
                signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)

    try:
        yield between
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


@contextlib.contextmanager
def temporary_directory(prefix: str):
    """tempfile.TemporaryDirectory that a stop signal (Ctrl-C, SIGTERM, SIGHUP) cannot leave behind:
    the signals are held while the directory is made and while it is removed, and raised at once
    after, inside the block that removes it. (A signal landing between mkdtemp and the removal's
    registration left the directory in $TMPDIR: tests/report/test_crate_safety.py under load.)"""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    tmp = None
    try:
        tmp = tempfile.TemporaryDirectory(prefix=prefix)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a held signal is raised from here on
        yield tmp.name
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            if tmp is not None:
                tmp.cleanup()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
