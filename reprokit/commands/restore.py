"""`reproduce.py restore FILE`: load an archive's images and verify them against its lock.

Checks, in order, failing with one line that names the first mismatch. Before the Docker engine
is asked anything (`check_archive`): the file exists and is a complete tar archive (every member's
data inside the file and the end-of-archive marker present, or a gzip stream that ends with its
checksum), holding a valid manifest, the lock with the sha256 the manifest records, and every image
tarball the manifest lists at its recorded size. Then, while loading: the lock's sha256 against
the manifest; per image the sha256 of its `docker save` tarball, the sha256 of every layer tar (and
that they equal the image config's diff_ids), then after `docker load` the loaded image ID against
the manifest and the lock. Verified lock entries are merged into the local lock file and the
alias tag (reprokit/<dir>:<flavour>) is set.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
import tarfile
import tempfile
import time
import zlib
from pathlib import Path

from reprokit import checks, images, validate
from reprokit.commands.archive import LOCK, MANIFEST, image_tar_checksums
from reprokit.commands.build import client
from reprokit.errors import UserError


def add_arguments(p) -> None:
    p.add_argument("file", type=Path, help="archive written by `reproduce.py archive`")
    p.add_argument("--lock", type=Path, help="lock file to merge into (default images/lock.json)")


def _member(tar: tarfile.TarFile, name: str, archive: Path) -> bytes:
    try:
        return tar.extractfile(name).read()
    except (KeyError, AttributeError):
        raise UserError(f"{archive}: no {name} inside; not a reprokit archive") from None


def _extract(tar: tarfile.TarFile, name: str, dest: Path, archive: Path) -> str:
    try:
        src = tar.extractfile(name)
    except KeyError:
        raise UserError(f"{archive}: {name} is listed in the manifest but missing") from None
    h = hashlib.sha256()
    with open(dest, "wb") as f:
        for chunk in iter(lambda: src.read(1 << 20), b""):
            h.update(chunk)
            f.write(chunk)
    return h.hexdigest()


def _complete(tar: tarfile.TarFile, archive: Path) -> list[tarfile.TarInfo]:
    """Every member, reading the whole archive's structure; a truncated file is a UserError."""
    remake = "copy it again, or make it again with `reproduce.py archive`"
    try:
        members = tar.getmembers()
        if not members:
            raise UserError(f"{archive} is an empty tar archive, not a reprokit archive; {remake}")
        if isinstance(tar.fileobj, gzip.GzipFile):  # the gzip trailer (length, CRC) is at the end
            while tar.fileobj.read(1 << 20):
                pass
        else:  # tarfile takes a file cut short for the end of the archive: check the offsets
            size = archive.stat().st_size
            end = max(m.offset_data + -(-m.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
                      for m in members)
            if end + 2 * tarfile.BLOCKSIZE > size:
                last = max(members, key=lambda m: m.offset_data)
                raise UserError(f"{archive} is truncated: it stops after its member {last.name} "
                                f"without the end-of-archive marker ({size} bytes); {remake}")
    except (EOFError, zlib.error, gzip.BadGzipFile, tarfile.TarError) as e:
        raise UserError(f"{archive} is truncated or damaged ({type(e).__name__}: "
                        f"{' '.join(str(e).split())}); {remake}") from None
    return members


def check_archive(archive: Path) -> dict:
    """The archive's structure, manifest and lock, checked before the Docker engine is asked
    anything; returns the manifest. The image tarballs' sha256 are checked while loading."""
    checks.input_file(archive, "archive", "give the file `reproduce.py archive -o FILE` wrote")
    try:
        tar = tarfile.open(archive, "r:*")
    except (tarfile.TarError, EOFError, zlib.error, OSError):
        raise UserError(f"{archive} is not a tar archive (nor a gzip, bzip2 or xz compressed one); "
                        "give the file `reproduce.py archive -o FILE` wrote") from None
    with tar:
        members = {m.name: m for m in _complete(tar, archive)}
        if MANIFEST not in members:
            raise UserError(f"{archive}: no {MANIFEST} inside; not a reprokit archive (or one cut "
                            "short while it was written): make it again with `reproduce.py archive`")
        try:
            manifest = json.loads(_member(tar, MANIFEST, archive))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise UserError(f"{archive}: {MANIFEST} is not JSON ({e}); the archive is damaged: "
                            "make it again with `reproduce.py archive`") from None
        validate.check("image_archive", manifest, f"{archive}: {MANIFEST}")
        lock_bytes = _member(tar, LOCK, archive)
        got = hashlib.sha256(lock_bytes).hexdigest()
        if got != manifest["lock_sha256"]:
            raise UserError(f"{archive}: {LOCK} sha256 {got[:16]} != manifest "
                            f"{manifest['lock_sha256'][:16]}; the archive is damaged: make it again "
                            "with `reproduce.py archive`")
        try:
            lock_entries = json.loads(lock_bytes)["images"]
        except (ValueError, KeyError, TypeError) as e:
            raise UserError(f"{archive}: {LOCK} is not an image lock ({type(e).__name__}: {e}); make "
                            "the archive again with `reproduce.py archive`") from None
        for im in manifest["images"]:
            entry = lock_entries.get(im["key"]) if isinstance(lock_entries, dict) else None
            if entry is None or entry.get("image_id") != im["image_id"]:
                raise UserError(f"{archive}: {im['key']}: image ID {im['image_id'][:19]} of the "
                                "manifest is not the lock's "
                                f"{(entry or {}).get('image_id', 'none')[:19]}; make the archive "
                                "again with `reproduce.py archive`")
            m = members.get(im["file"])
            if m is None:
                raise UserError(f"{archive}: {im['file']} is listed in the manifest but missing; "
                                "make the archive again with `reproduce.py archive`")
            if m.size != im["size"]:
                raise UserError(f"{archive}: {im['file']} holds {m.size} bytes, the manifest says "
                                f"{im['size']}; make the archive again with `reproduce.py archive`")
    return manifest


def verify_and_load(c, archive: Path, lock: Path | None, say) -> list[dict]:
    if not archive.is_file():
        raise UserError(f"{archive} does not exist")
    try:
        tar = tarfile.open(archive, "r:*")
    except tarfile.TarError as e:
        raise UserError(f"{archive} is not a tar archive ({e})") from None
    loaded = []
    with tar, tempfile.TemporaryDirectory(prefix="reprokit-restore-") as tmp:
        try:
            manifest = json.loads(_member(tar, MANIFEST, archive))
        except json.JSONDecodeError as e:
            raise UserError(f"{archive}: {MANIFEST} is not JSON ({e}); the archive is damaged: "
                            "make it again with `reproduce.py archive`") from None
        validate.check("image_archive", manifest, f"{archive}: {MANIFEST}")
        lock_bytes = _member(tar, LOCK, archive)
        got = hashlib.sha256(lock_bytes).hexdigest()
        if got != manifest["lock_sha256"]:
            raise UserError(f"{archive}: {LOCK} sha256 {got[:16]} != manifest "
                            f"{manifest['lock_sha256'][:16]}")
        lock_entries = json.loads(lock_bytes)["images"]
        for im in manifest["images"]:
            entry = lock_entries.get(im["key"])
            if entry is None or entry["image_id"] != im["image_id"]:
                raise UserError(f"{archive}: {im['key']}: image ID {im['image_id'][:19]} of the "
                                "manifest is not the lock's "
                                f"{(entry or {}).get('image_id', 'none')[:19]}")
            path = Path(tmp) / Path(im["file"]).name
            got = _extract(tar, im["file"], path, archive)
            if got != im["sha256"]:
                raise UserError(f"{archive}: {im['file']} sha256 {got[:16]} != manifest "
                                f"{im['sha256'][:16]}")
            sums = image_tar_checksums(path)
            for layer, want in im["layers"].items():
                if sums["layers"].get(layer) != want:
                    raise UserError(f"{archive}: {im['file']}: layer {layer} sha256 "
                                    f"{(sums['layers'].get(layer) or 'missing')[:16]} != "
                                    f"manifest {want[:16]}")
            t = time.monotonic()
            with open(path, "rb") as f:
                imgs = c.images.load(f)
            ids = {i.id for i in imgs}
            if im["image_id"] not in ids:
                raise UserError(f"{archive}: {im['file']} loaded as {', '.join(sorted(ids))[:19]} "
                                f"but the lock says {im['image_id'][:19]}")
            repo, tag = im["alias"].split(":")
            c.api.tag(im["image_id"], repo, tag)
            say(f"  loaded {im['tag']} ({im['image_id'][:19]}) in {time.monotonic() - t:.0f} s; "
                "sha256 of the tarball and of its layers verified")
            path.unlink()
            loaded.append(entry)
    images.update_lock({images.lock_key(e["image_dir"], e["flavour"]): e for e in loaded}, lock)
    return loaded


def run(args) -> int:
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    check_archive(args.file)  # before the engine: a truncated archive is the user's to fix
    checks.output_file(images.lock_path(args.lock), "--lock", "pass --lock PATH naming a file in "
                       "a directory you can write to")
    c = client()
    loaded = verify_and_load(c, args.file, args.lock, say)
    for e in loaded:
        print(f"{e['tag']} {e['image_id']}")
    say(f"restored {len(loaded)} image(s); lock: {images.lock_path(args.lock)}")
    return 0
