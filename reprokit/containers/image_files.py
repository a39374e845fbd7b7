"""The identity of an image file (an Apptainer SIF, an enroot squashfs): its sha256, computed on first use.

A Docker image has an ID the engine gives; an image file made from it (`apptainer build`, `enroot
import`) has none the kit can read without its tool. Its sha256 is what the GPU probe cache
(reprokit/plan/probe_cache.py) keys a Slurm probe by, and what a cell's runner record says it ran:
"sha256:<hex>", the form of a Docker image ID, so both read alike.

Hashing a multi-GB file takes seconds per GB, so the digest is kept in
`~/.cache/reprokit/image-files.json` (`$REPROKIT_IMAGE_FILE_IDS` overrides) under the file's real
path with its size, modification time and inode: a file that changed in any of them is hashed again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from reprokit import files
from reprokit.containers.images import file_sha256

CACHE_ENV = "REPROKIT_IMAGE_FILE_IDS"


def cache_path() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "reprokit" / "image-files.json"


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _load(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: hashed again and rewritten
    return doc if isinstance(doc, dict) else {}


def file_id(path: str | Path) -> str:
    """"sha256:<hex>" of the file at `path` (OSError when it cannot be read), from the cache when the
    file's size, modification time and inode are those recorded with it."""
    real = Path(path).resolve()
    st = real.stat()
    store = cache_path()
    known = _load(store)
    got = known.get(str(real))
    if isinstance(got, dict) and got.get("stamp") == _stamp(st) and isinstance(got.get("id"), str):
        return got["id"]
    ident = f"sha256:{file_sha256(real)}"
    known[str(real)] = {"id": ident, "stamp": _stamp(st), "hashed": files.utcnow()}
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        files.write_json_atomic(store, known)
    except OSError:
        pass  # a read-only home: the digest is right, only the next run hashes again
    return ident
