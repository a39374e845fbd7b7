"""Image archives: a suite's images in one file (`reproduce.py archive`), and loading one back,
verified against its lock (`reproduce.py restore`).

An archive is a tar (gzip when it ends in .gz/.tgz) holding
  reprokit-archive.json   manifest: per image its tag, image ID, the sha256 and size of its
                          `docker save` tarball and the sha256 of every layer tar inside it;
                          the sha256 of lock.json
  lock.json               the lock entries of these images (build inputs, base image, wheel hashes)
  images/<dir>-<flavour>.tar   `docker save` of each image (docker SDK get_image)

Restoring checks, in order, failing with one line that names the first mismatch. Before the Docker
engine is asked anything (`check_archive`): the file exists and is a complete tar archive (every
member's data inside the file and the end-of-archive marker present, or a gzip stream that ends
with its checksum), holding a valid manifest, the lock with the sha256 the manifest records, and
every image tarball the manifest lists at its recorded size. Then, while loading
(`verify_and_load`): the lock's sha256 against the manifest; per image the sha256 of its `docker
save` tarball, the sha256 of every layer tar (and that they equal the image config's diff_ids),
then after `docker load` the loaded image ID against the manifest and the lock. Verified lock
entries are merged into the local lock file and the alias tag (reprokit/<dir>:<flavour>) is set.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import time
import zlib
from pathlib import Path

from reprokit import checks, files, formats, validate
from reprokit.containers import images
from reprokit.errors import UserError

MANIFEST = "reprokit-archive.json"
LOCK = "lock.json"


def _sha256_stream(f) -> str:
    h = hashlib.sha256()
    while chunk := f.read(1 << 20):
        h.update(chunk)
    return h.hexdigest()


def image_tar_checksums(path: Path) -> dict:
    """sha256 of every layer tar in a `docker save` tarball, and its layers' order and config."""
    layers: dict[str, str] = {}
    with tarfile.open(path) as t:
        manifest = json.load(t.extractfile("manifest.json"))
        for m in t.getmembers():
            if m.isfile() and m.name.endswith("layer.tar"):
                layers[m.name] = _sha256_stream(t.extractfile(m))
        config = json.load(t.extractfile(manifest[0]["Config"]))
    order = manifest[0]["Layers"]
    diff_ids = [d.split(":", 1)[1] for d in config["rootfs"]["diff_ids"]]
    if [layers.get(name) for name in order] != diff_ids:
        raise UserError(f"{path.name}: layer checksums do not match the image config's diff_ids")
    return {"layers": layers, "layer_order": order, "config": manifest[0]["Config"],
            "repo_tags": manifest[0].get("RepoTags") or []}


def _save(c, tag: str, dest: Path, say) -> None:
    t = time.monotonic()
    size = 0
    with open(dest, "wb") as f:
        for chunk in c.images.get(tag).save(named=tag):
            f.write(chunk)
            size += len(chunk)
    say(f"  saved {tag}: {size / 2**20:.0f} MB in {time.monotonic() - t:.0f} s")


def write_archive(c, dirs: list[str], flavour: str, out: Path, lock: Path | None, say,
                  suite: str | None = None) -> dict:
    entries = images.load_lock(lock)["images"]
    chosen, missing = {}, []
    for d in dirs:
        key = images.lock_key(d, flavour)
        found = images.find_image(c, d, flavour, lock)
        if found is None or key not in entries or found.image_id != entries[key]["image_id"]:
            missing.append(d)
        else:
            chosen[key] = entries[key]
    if missing:
        raise UserError(f"not built (or not in the lock): {', '.join(missing)}; run `reproduce.py "
                        f"build --image {' '.join(missing)}` first")
    lock_doc = {"schema_version": formats.version("image_lock"), "kind": "image_lock",
                "images": chosen}
    lock_bytes = (json.dumps(lock_doc, indent=1) + "\n").encode()
    manifest = {"schema_version": formats.version("image_archive"), "kind": "image_archive",
                "created": files.utcnow(), "suite": suite, "flavour": flavour,
                "kit": files.kit_info(), "lock_sha256": hashlib.sha256(lock_bytes).hexdigest(),
                "images": []}
    mode = "w:gz" if out.name.endswith((".gz", ".tgz")) else "w"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_name(f".{out.name}.partial")
    with files.temporary_directory("reprokit-archive-") as tmp, \
            tarfile.open(tmp_out, mode) as tar:
        for key, entry in chosen.items():
            name = f"images/{entry['image_dir']}-{entry['flavour']}.tar"
            path = Path(tmp) / Path(name).name
            _save(c, entry["tag"], path, say)
            sums = image_tar_checksums(path)
            manifest["images"].append({
                "key": key, "tag": entry["tag"], "alias": entry["alias"],
                "image_id": entry["image_id"], "file": name,
                "sha256": images.file_sha256(path), "size": path.stat().st_size, **sums})
            tar.add(path, arcname=name)
            path.unlink()
        validate.check("image_archive", manifest, "the archive manifest being written")
        for arcname, data in ((LOCK, lock_bytes),
                              (MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())):
            info = tarfile.TarInfo(arcname)
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            tar.addfile(info, io.BytesIO(data))
    tmp_out.replace(out)
    return manifest


def check_output(out: Path, dirs: list[str], flavour: str, lock: Path | None) -> None:
    """Before the engine is asked anything: -o names a file in a writable directory with room for
    the images as the lock records them (their uncompressed size: an upper bound)."""
    fix = "pass -o FILE in a directory you can write to"
    checks.output_file(out, "-o", fix)
    entries = images.load_lock(lock)["images"]
    sizes = [(entries.get(images.lock_key(d, flavour)) or {}).get("size_bytes") or 0 for d in dirs]
    need = sum(sizes) // 2**20 + 10
    checks.free_space(out.parent, need, "the archive", f"the {len(dirs)} image(s) as the lock "
                      "records them, uncompressed", "free space there or pass -o FILE on another disk")


def _member(tar: tarfile.TarFile, name: str, archive: Path) -> bytes:
    """A small member (the manifest, the lock), read only up to files.READ_LIMITS['archive']."""
    limit = files.READ_LIMITS["archive"]
    try:
        f = tar.extractfile(name)
        data = f.read(limit + 1)
    except (KeyError, AttributeError):
        raise UserError(f"{archive}: no {name} inside; not a reprokit archive") from None
    if len(data) > limit:
        raise UserError(f"{archive}: {name} holds more than the {limit}-byte limit of an archive's "
                        "manifest or lock (reprokit/files.py READ_LIMITS); the archive is damaged or "
                        "not one `reproduce.py archive` wrote: make it again")
    return data


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


def _manifest_and_lock(tar: tarfile.TarFile, archive: Path) -> tuple[dict, dict]:
    """The archive's manifest (validated) and its lock's entries, the lock's sha256 checked
    against the manifest and every image's ID against the lock."""
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
        lock_entries = files.loads_strict(lock_bytes.decode())["images"]
    except (ValueError, KeyError, TypeError) as e:
        raise UserError(f"{archive}: {LOCK} is not an image lock ({type(e).__name__}: {e}); make "
                        "the archive again with `reproduce.py archive`") from None
    for im in manifest["images"]:
        entry = lock_entries.get(im["key"]) if isinstance(lock_entries, dict) else None
        # an entry that is not an object, or an image ID that is not a string, was exit 3 (tests/fuzz)
        theirs = entry.get("image_id") if isinstance(entry, dict) else None
        if not isinstance(theirs, str) or theirs != im["image_id"]:
            raise UserError(f"{archive}: {im['key']}: image ID {im['image_id'][:19]} of the "
                            f"manifest is not the lock's {str(theirs or 'none')[:19]}; make the "
                            "archive again with `reproduce.py archive`")
    return manifest, lock_entries


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
        manifest, _ = _manifest_and_lock(tar, archive)
        for im in manifest["images"]:
            m = members.get(im["file"])
            if m is None:
                raise UserError(f"{archive}: {im['file']} is listed in the manifest but missing; "
                                "make the archive again with `reproduce.py archive`")
            if m.size != im["size"]:
                raise UserError(f"{archive}: {im['file']} holds {m.size} bytes, the manifest says "
                                f"{im['size']}; make the archive again with `reproduce.py archive`")
    return manifest


def verify_and_load(c, archive: Path, lock: Path | None, say) -> list[dict]:
    """Load the archive's images, each verified on the way (docstring of this module); merge
    their lock entries into the local lock and set their alias tags."""
    if not archive.is_file():
        raise UserError(f"{archive} does not exist")
    try:
        tar = tarfile.open(archive, "r:*")
    except tarfile.TarError as e:
        raise UserError(f"{archive} is not a tar archive ({e})") from None
    loaded = []
    with tar, files.temporary_directory("reprokit-restore-") as tmp:
        manifest, lock_entries = _manifest_and_lock(tar, archive)
        for im in manifest["images"]:
            entry = lock_entries[im["key"]]
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
