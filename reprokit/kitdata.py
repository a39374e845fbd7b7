"""The kit's data as a value: the data files a run is planned and judged with, where they lie, read once.

`KitData(root)` is one set of the kit's data files (reprokit/data's layout): the packaged ones
(`KitData.packaged()`), or a snapshot a run or a crate carries (kit-data/). Each validated document
(`load(name)`) and each object a catalog builds from them (`memoized`) is kept in the value itself, so
two sets never mix and nothing is forgotten or swapped to change data. Who judges a run chooses its
data and passes it (`reprokit/report/report.py`: the run's snapshot, or the packaged data for a run
that kept none; `report --rejudge`: today's); `using(data)` makes it the data every loader below
reads for the duration of that call (a context variable, scoped, never a module global); outside
one, loaders read the packaged data.

- `load(name)`: reprokit/data/<name>.yaml (or a .json named with its suffix) of the current data,
  validated against its schema (`schema_of`), parsed once per KitData and shared (callers must not
  modify it: `copy.deepcopy` first); a missing file, a syntax error or a schema violation is a
  one-line UserError naming the file and the fix. A validated document is also kept between
  processes, addressed by the sha256 of the file and of its schema (`~/.cache/reprokit/data`,
  `$REPROKIT_DATA_CACHE` overrides, empty turns it off) and authenticated with a random key of the
  cache's own (`key` beside the blobs, 0600), so a command that only reads data neither parses YAML
  nor imports jsonschema when nothing changed, and an entry not made with that key is a miss.
- `load_path(path, schema)`: a data file outside any set (a user's own file), validated the same way.
- `reads`: a KitData may record the relative path of every file it reads (a crate's export keeps
  those files, and only those).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import hmac
import marshal
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprokit import files
from reprokit.errors import UserError

PACKAGED = files.PACKAGE / "data"
# A file in one of these folders is validated against the folder's schema; any other file against the
# schema named like the file (stacks.yaml -> stacks.schema.json).
_FOLDER_SCHEMAS = {"suites": "suite", "published": "published"}
# How to repair a file a tool writes, where that is not "fix the file" by hand.
_REPAIR = {"rerun_coverage.json": "re-write it with scripts/bench_rerun_coverage.py --write"}


def relpath(name: str) -> str:
    """'stacks' -> 'stacks.yaml', 'suites/smoke' -> 'suites/smoke.yaml'; a name with its suffix
    ('rerun_coverage.json') is kept."""
    return name if name.endswith((".yaml", ".json")) else f"{name}.yaml"


def schema_of(name: str) -> str:
    """The schema of data file `name` (see _FOLDER_SCHEMAS)."""
    folder, _, stem = relpath(name).rpartition("/")
    return _FOLDER_SCHEMAS.get(folder) or stem.rsplit(".", 1)[0]


@dataclass(frozen=True, eq=False)
class KitData:
    """One set of the kit's data files, read once (compared by identity: two values are two sets)."""
    root: Path
    reads: list[str] | None = None  # relative paths of the files read, when recorded
    _memo: dict = field(default_factory=dict, repr=False)

    @classmethod
    def packaged(cls) -> KitData:
        """reprokit/data, one value per process."""
        return _packaged()

    @property
    def is_packaged(self) -> bool:
        return self.root == PACKAGED

    def where(self, rel: str) -> str:
        """How a file of this set is named in a message."""
        return f"reprokit/data/{rel}" if self.is_packaged else str(self.root / rel)

    def exists(self, name: str) -> bool:
        return (self.root / relpath(name)).is_file()

    def load(self, name: str) -> Any:
        """Data file `name`, validated against its schema (see the module doc)."""
        return self.load_file(relpath(name), schema_of(name))

    def load_file(self, rel: str, schema: str | None = None) -> Any:
        """The file `rel` of this set, validated against `schema` when one is given; read once."""
        return self.memo(("file", rel, schema), lambda: self._read_validated(rel, schema))

    def memo(self, key: Any, build: Callable[[], Any]) -> Any:
        """What `build()` makes of this set's data, made once per key."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    def forget(self) -> None:
        """Forget what was read (a tool or test that rewrote the files)."""
        self._memo.clear()

    def _read_validated(self, rel: str, schema: str | None) -> Any:
        raw = self._read(rel)
        if not schema:
            return parse(rel, raw, self.where(rel))
        key = _validated_key(rel, raw, schema)
        doc = _cached_validated(key)
        if doc is None:
            from reprokit import validate
            doc = parse(rel, raw, self.where(rel))
            validate.check(schema, doc, self.where(rel))
            _store_validated(key, doc)
        return doc

    def _read(self, rel: str) -> bytes:
        if self.reads is not None:
            self.reads.append(rel)
        try:
            return files.read_bounded(self.root / rel, "data")
        except files.UnreadableFile as e:
            raise UserError(f"{self.root / rel} is unreadable ({e.strerror}); restore it from the "
                            "repository") from e
        except FileNotFoundError as e:
            if not self.is_packaged:
                raise UserError(f"{rel} is missing from the data snapshot {self.root}; the snapshot "
                                "holds only the files the report read when it was made") from e
            raise UserError(f"reprokit/data/{rel} is missing; restore it from the repository") from e


@functools.cache
def _packaged() -> KitData:
    return KitData(PACKAGED)


_current: contextvars.ContextVar[KitData | None] = contextvars.ContextVar("reprokit_kit_data", default=None)


def current() -> KitData:
    """The data the caller chose (`using`), else the packaged data."""
    return _current.get() or KitData.packaged()


@contextlib.contextmanager
def using(data: KitData) -> Iterator[KitData]:
    """Read the kit's data from `data` until the block ends (in this context only)."""
    token = _current.set(data)
    try:
        yield data
    finally:
        _current.reset(token)


def load(name: str) -> Any:
    """Data file `name` of the current data (see the module doc)."""
    return current().load(name)


def load_file(rel: str, schema: str | None = None) -> Any:
    return current().load_file(rel, schema)


def exists(name: str) -> bool:
    return current().exists(name)


def memoized(fn: Callable) -> Callable:
    """A catalog function of hashable arguments, made once per set of data and arguments."""
    @functools.wraps(fn)
    def wrapper(*args: Any) -> Any:
        return current().memo((fn.__module__, fn.__qualname__, args), lambda: fn(*args))
    return wrapper


def forget() -> None:
    """Forget what the packaged data's value read (for tools and tests that rewrite reprokit/data)."""
    KitData.packaged().forget()


def load_path(path: Path | str, schema: str | None = None) -> Any:
    """A data file outside any set (an edited copy under test, a user's own file): parsed and, with
    `schema`, validated exactly as `load` does it, with the same one-line errors, but not kept."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise UserError(f"cannot read {path} ({e.strerror or e}); check the path") from e
    doc = parse(path.name, raw, str(path))
    if schema:
        from reprokit import validate
        validate.check(schema, doc, str(path))
    return doc


def parse(rel: str, raw: bytes, where: str) -> Any:
    """The document in `raw`, the bytes of data file `rel` (JSON or YAML by its suffix), named
    `where` in a message."""
    repair = _REPAIR.get(rel, "fix the file")
    try:
        text = raw.decode()
    except UnicodeDecodeError as e:  # found by tests/fuzz (data_yaml): was an internal error, exit 3
        raise UserError(f"{where} is not UTF-8 text (byte {e.start}: {e.reason}); {repair}") from e
    if rel.endswith(".json"):
        try:
            return files.loads_strict(text)
        except ValueError as e:
            raise UserError(f"{where} is not valid JSON ({e}); {repair}") from e
    import yaml
    try:
        return files.load_yaml(text)
    except yaml.YAMLError as e:
        raise UserError(f"{where} is not valid YAML ({' '.join(str(e).split())}); {repair}") from e
    except files.DuplicateKey as e:
        raise UserError(f"{where}: {e}; keep one of the two ({repair})") from e
    except files.NotFinite as e:
        raise UserError(f"{where}: {e}; write the number itself ({repair})") from e
    except (ValueError, OverflowError) as e:  # found by tests/fuzz (data_yaml): a date such as
        # 1021-13-25 parses as YAML but its constructor raises: was an internal error, exit 3
        raise UserError(f"{where} holds a value YAML cannot build ({e}); {repair}") from e


# -- validated documents kept between processes ---------------------------------------------------
CACHE_ENV = "REPROKIT_DATA_CACHE"
# Change it when the cached form changes. Form 4: the header, the key the blob was stored under
# (64 hex digits), an HMAC-SHA256 of the payload under the cache's own secret key (64 hex digits),
# then the marshalled document. The secret is 32 random bytes in `key` beside the blobs, readable by
# its owner only (0600), made once per cache directory. A MAC keyed with anything public (the data
# file's bytes, which every clone holds) can be recomputed by whoever edits a blob; this one cannot
# without reading the key file, and a blob that does not carry it is ignored and rebuilt.
_CACHE_FORMAT = b"reprokit-data-cache 4\0"
_KEY_FILE = "key"
_KEY_BYTES = 32


def cache_dir() -> Path | None:
    """Where validated data documents are kept; None when $REPROKIT_DATA_CACHE is set empty."""
    env = os.environ.get(CACHE_ENV)
    if env is not None:
        return Path(env) if env else None
    return Path.home() / ".cache" / "reprokit" / "data"


@functools.cache
def _rules_digest() -> bytes:
    """sha256 of the modules whose code decides what a data file parses and validates to (the YAML
    loader in files.py, validate.py, this module's `parse`): a kit whose loader is stricter or looser
    misses every entry another kit made. An entry made between two commits of one day, by a loader
    that took a key given twice, once stood for the duplicated file in every later kit."""
    h = hashlib.sha256()
    for name in ("files.py", "validate.py", "kitdata.py"):
        h.update((files.PACKAGE / name).read_bytes())
    return h.digest()


def _validated_key(rel: str, raw: bytes, schema: str) -> str | None:
    """sha256 over the data file's bytes, the schema's name and its file, and the parsing and
    validating code (`_rules_digest`): any change to one is a miss. None when the schema file cannot
    be read (validation then reports it)."""
    h = hashlib.sha256(_CACHE_FORMAT + _rules_digest())
    h.update(rel.encode() + b"\0" + raw)
    try:
        h.update(b"\0" + schema.encode() + b"\0" + (files.SCHEMAS / f"{schema}.schema.json").read_bytes())
    except OSError:
        return None
    return h.hexdigest()


def _read_secret(path: Path) -> bytes | None:
    """The key in `path` if it is a regular file of ours that only we can read or write, not a link,
    and holds exactly _KEY_BYTES bytes; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077
                or st.st_size != _KEY_BYTES):
            return None
        secret = os.read(fd, _KEY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return secret if len(secret) == _KEY_BYTES else None


@functools.cache
def _secret(where: Path) -> bytes | None:
    """The cache's secret key (see _CACHE_FORMAT), made on first use: written 0600 to a file of its own
    and linked into place, so two processes racing agree on one key; None when it cannot be read or
    made (the cache is then not used: every document is parsed and validated)."""
    path = where / _KEY_FILE
    secret = _read_secret(path)
    if secret is not None or path.is_symlink() or path.exists():
        return secret
    try:
        where.mkdir(parents=True, exist_ok=True)
        tmp = where / f".{_KEY_FILE}.{os.getpid()}.{os.urandom(4).hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, os.urandom(_KEY_BYTES))
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # fails if another process linked its key first: that one is read
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    except OSError:
        return None
    return _read_secret(path)


def _mac(secret: bytes, payload: bytes) -> bytes:
    return hmac.new(secret, payload, hashlib.sha256).hexdigest().encode()


def _cached_validated(key: str | None) -> Any:
    """The document stored under `key`, or None (no cache, no key file, no entry, or an entry
    unreadable, forged or stored under another key)."""
    where = cache_dir()
    if key is None or where is None:
        return None
    secret = _secret(where)
    if secret is None:
        return None
    try:
        blob = files.read_bounded(where / f"{key}.marshal", "data")
    except OSError:
        return None
    head = len(_CACHE_FORMAT)
    stored_key, digest, payload = blob[head:head + 64], blob[head + 64:head + 128], blob[head + 128:]
    # a blob from another key (copied or planted under this name) or edited since it was written is
    # ignored, and the file is parsed and validated again: it is checked before marshal reads it
    if (not blob.startswith(_CACHE_FORMAT) or stored_key != key.encode()
            or not hmac.compare_digest(digest, _mac(secret, payload))):
        return None
    try:
        doc = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    return doc if isinstance(doc, dict | list) else None


def _store_validated(key: str | None, doc: Any) -> None:
    """Keep a validated document (marshal: data types only) for the next process; any failure to
    write (read-only home, full disk, a type marshal cannot hold, no key) only costs that process a
    parse."""
    where = cache_dir()
    if key is None or where is None:
        return
    secret = _secret(where)
    if secret is None:
        return
    try:
        payload = marshal.dumps(doc)
        blob = _CACHE_FORMAT + key.encode() + _mac(secret, payload) + payload
        files.write_bytes_atomic(where / f"{key}.marshal", blob)
    except (OSError, ValueError):
        pass
