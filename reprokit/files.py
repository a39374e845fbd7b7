"""Files: where the kit's parts are, and how a file is written and read.

- Paths: `REPO` (the checkout), `BENCH`, `IMAGES`, `COMPOSE`, `DATA`, `SCHEMAS`, each defined once here.
- Atomic writes (temp file in the same directory, fsync, rename; validated against a schema first when
  one is named) and strict JSON reads (NaN, Infinity and overflowing numbers are errors).
- `utcnow` and `kit_info`, the time stamp and the kit identity every record carries.
- `bench_module(name)`: the one way host code loads a module of bench/ (by path, privately: bench/ is
  stack-side code and never on the host's sys.path).
- `read_json`: a stored document read, brought to its format's current version (reprokit/formats/)
  and validated.
- `load_data(name)`: the one loader of the kit's data files (reprokit/data/), validated against their
  schema, parsed once per process (libyaml's C loader where PyYAML has it) and shared. A validated
  document is also kept between processes in a cache addressed by the sha256 of the file and of its
  schema (`~/.cache/reprokit/data`, `$REPROKIT_DATA_CACHE` overrides, empty turns it off), so a
  command that only reads data neither parses YAML nor imports jsonschema when nothing changed.

Only the standard library, PyYAML and reprokit.validate (these two imported where they are needed)
are used, so any module may import this one without pulling in pandas, jinja2 or docker.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import hmac
import importlib.util
import json
import marshal
import os
import signal
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from reprokit import __version__
from reprokit.errors import UserError

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parent
DATA = PACKAGE / "data"
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


# The largest file each kind of reader takes, in bytes: one table for every reader of a file the kit
# did not just write itself. A bigger file, or one that is not a regular file (a device, a FIFO, a
# symlink to /dev/zero), is refused before a byte is read (issue 23: a cell file linked to /dev/zero
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


# -- the kit's data files (reprokit/data) ---------------------------------------------------------
# A file in one of these folders is validated against the folder's schema; any other file against the
# schema named like the file (stacks.yaml -> stacks.schema.json).
_FOLDER_SCHEMAS = {"suites": "suite", "published": "published"}
# How to repair a file a tool writes, where that is not "fix the file" by hand.
_REPAIR = {"rerun_coverage.json": "re-write it with scripts/bench_rerun_coverage.py --write"}


def data_relpath(name: str) -> str:
    """'stacks' -> 'stacks.yaml', 'suites/smoke' -> 'suites/smoke.yaml'; a name with its suffix
    ('rerun_coverage.json') is kept."""
    return name if name.endswith((".yaml", ".json")) else f"{name}.yaml"


def data_schema(name: str) -> str:
    """The schema of data file `name` (see _FOLDER_SCHEMAS)."""
    folder, _, stem = data_relpath(name).rpartition("/")
    return _FOLDER_SCHEMAS.get(folder) or stem.rsplit(".", 1)[0]


def data_exists(name: str) -> bool:
    return (DATA / data_relpath(name)).is_file()


def load_data(name: str) -> Any:
    """reprokit/data/<name>.yaml (or a .json named with its suffix), validated against its schema
    (`data_schema`), parsed and validated once per process. The document is shared by every caller,
    who must not modify it (`copy.deepcopy` first). A missing file, a syntax error or a schema
    violation is a one-line UserError naming the file and the fix."""
    return load_data_file(data_relpath(name), data_schema(name))


@cache
def load_data_file(relpath: str, schema: str | None = None) -> Any:
    """reprokit/data/<relpath>, validated against `schema` when one is given (once per process and
    schema; from the cache between processes); shared like `load_data`."""
    raw = _read_data(relpath)
    if not schema:
        return _parse_data(relpath, raw)
    key = _validated_key(relpath, raw, schema)
    doc = _cached_validated(key, raw)
    if doc is None:
        from reprokit import validate
        doc = _parse_data(relpath, raw)
        validate.check(schema, doc, f"reprokit/data/{relpath}")
        _store_validated(key, doc, raw)
    return doc


def load_data_path(path: Path | str, schema: str | None = None) -> Any:
    """A data file outside reprokit/data (an edited copy under test, a user's own file): parsed and,
    with `schema`, validated exactly as `load_data` does it, with the same one-line errors, but
    neither cached nor shared."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise UserError(f"cannot read {path} ({e.strerror or e}); check the path") from e
    doc = _parse_data(path.name, raw, where=str(path))
    if schema:
        from reprokit import validate
        validate.check(schema, doc, str(path))
    return doc


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


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


# -- validated documents kept between processes ---------------------------------------------------
DATA_CACHE_ENV = "REPROKIT_DATA_CACHE"
# Change it when the cached form changes. Form 3: the header, the key the blob was stored under
# (64 hex digits), an HMAC-SHA256 of the payload keyed with the data file's own bytes (64 hex
# digits), then the marshalled document. A plain sha256 of the payload could be recomputed by anyone
# who edits a blob (issue 35: a forged blob was used silently, a forged garbage one was exit 3); the
# HMAC cannot be made without the data file the blob claims to come from, and a blob that does not
# carry it is ignored and rebuilt.
_DATA_CACHE_FORMAT = b"reprokit-data-cache 3\0"


def data_cache_dir() -> Path | None:
    """Where validated data documents are kept; None when $REPROKIT_DATA_CACHE is set empty."""
    env = os.environ.get(DATA_CACHE_ENV)
    if env is not None:
        return Path(env) if env else None
    return Path.home() / ".cache" / "reprokit" / "data"


def _validated_key(relpath: str, raw: bytes, schema: str) -> str | None:
    """sha256 over the data file's bytes, the schema's name and its file: any change to either is a
    miss. None when the schema file cannot be read (validation then reports it)."""
    h = hashlib.sha256(_DATA_CACHE_FORMAT)
    h.update(relpath.encode() + b"\0" + raw)
    try:
        h.update(b"\0" + schema.encode() + b"\0" + (SCHEMAS / f"{schema}.schema.json").read_bytes())
    except OSError:
        return None
    return h.hexdigest()


def _mac(raw: bytes, payload: bytes) -> bytes:
    return hmac.new(raw, payload, hashlib.sha256).hexdigest().encode()


def _cached_validated(key: str | None, raw: bytes) -> Any:
    """The document stored under `key` for the data file whose bytes are `raw`, or None (no cache,
    no entry, or an entry unreadable, forged or from other bytes)."""
    where = data_cache_dir()
    if key is None or where is None:
        return None
    try:
        blob = read_bounded(where / f"{key}.marshal", "data")
    except OSError:
        return None
    head = len(_DATA_CACHE_FORMAT)
    stored_key, digest, payload = blob[head:head + 64], blob[head + 64:head + 128], blob[head + 128:]
    # a blob from another key (copied or planted under this name) or edited since it was written is
    # ignored, and the file is parsed and validated again: it is checked before marshal reads it
    if (not blob.startswith(_DATA_CACHE_FORMAT) or stored_key != key.encode()
            or not hmac.compare_digest(digest, _mac(raw, payload))):
        return None
    try:
        doc = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    return doc if isinstance(doc, (dict, list)) else None


def _store_validated(key: str | None, doc: Any, raw: bytes) -> None:
    """Keep a validated document (marshal: data types only) for the next process; any failure to
    write (read-only home, full disk, a type marshal cannot hold) only costs that process a parse."""
    where = data_cache_dir()
    if key is None or where is None:
        return
    try:
        payload = marshal.dumps(doc)
        blob = _DATA_CACHE_FORMAT + key.encode() + _mac(raw, payload) + payload
        _write_atomic(where / f"{key}.marshal", lambda f: f.write(blob), sync=False, mode="wb")
    except (OSError, ValueError):
        pass


def _read_data(relpath: str) -> bytes:
    if _reads is not None:
        _reads.append(relpath)
    try:
        return read_bounded(DATA / relpath, "data")
    except UnreadableFile as e:
        raise UserError(f"{DATA / relpath} is unreadable ({e.strerror}); restore it from the "
                        "repository") from e
    except FileNotFoundError as e:
        if DATA != PACKAGE / "data":
            raise UserError(f"{relpath} is missing from the data snapshot {DATA}; the snapshot holds "
                            "only the files the report read when it was made") from e
        raise UserError(f"reprokit/data/{relpath} is missing; restore it from the repository") from e


def _parse_data(relpath: str, raw: bytes, where: str | None = None) -> Any:
    """The document in `raw`, the bytes of reprokit/data/<relpath> (JSON or YAML by its suffix), or
    of the file named `where`."""
    where = where or f"reprokit/data/{relpath}"
    repair = _REPAIR.get(relpath, "fix the file")
    try:
        text = raw.decode()
    except UnicodeDecodeError as e:  # found by tests/fuzz (data_yaml): was an internal error, exit 3
        raise UserError(f"{where} is not UTF-8 text (byte {e.start}: {e.reason}); {repair}") from e
    if relpath.endswith(".json"):
        try:
            return loads_strict(text)
        except ValueError as e:
            raise UserError(f"{where} is not valid JSON ({e}); {repair}") from e
    import yaml
    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        raise UserError(f"{where} is not valid YAML ({' '.join(str(e).split())}); {repair}") from e
    except (ValueError, OverflowError) as e:  # found by tests/fuzz (data_yaml): a date such as
        # 1021-13-25 parses as YAML but its constructor raises: was an internal error, exit 3
        raise UserError(f"{where} holds a value YAML cannot build ({e}); {repair}") from e


def clear_data_cache() -> None:
    """Forget every data file loaded in this process (for tests and tools that rewrite reprokit/data)."""
    load_data_file.cache_clear()


_reads: list[str] | None = None  # relative paths of the data files read, while data_root records them


@contextlib.contextmanager
def data_root(root: Path, reads: list[str] | None = None):
    """Read the kit's data files from `root` (a snapshot with reprokit/data's relative layout, e.g. the
    one a crate carries: reprokit/crate) instead of reprokit/data until the block ends; with `reads`,
    append the relative path of every data file read meanwhile. Every cached result in the kit's
    modules (functools caches: parsed files, suites, sources) is forgotten on entry and on exit, so
    nothing read from one root is used under the other and every file used is read (and recorded)."""
    global DATA, _reads
    saved = DATA, _reads
    DATA, _reads = Path(root), reads
    _forget_cached()
    try:
        yield DATA
    finally:
        DATA, _reads = saved
        _forget_cached()


def _forget_cached() -> None:
    for name, mod in list(sys.modules.items()):
        if not (name == "reprokit" or name.startswith("reprokit.")):
            continue
        for obj in list(vars(mod).values()):
            if callable(getattr(obj, "cache_clear", None)) and getattr(obj, "__module__", None) == name:
                obj.cache_clear()
