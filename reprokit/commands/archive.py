"""`reproduce.py archive (--suite S | --image DIR ...) -o FILE`: a suite's images in one file.

FILE is a tar (gzip when it ends in .gz/.tgz) holding
  reprokit-archive.json   manifest: per image its tag, image ID, the sha256 and size of its
                          `docker save` tarball and the sha256 of every layer tar inside it;
                          the sha256 of lock.json
  lock.json               the lock entries of these images (build inputs, base image, wheel hashes)
  images/<dir>-<flavour>.tar   `docker save` of each image (docker SDK get_image)
`reproduce.py restore FILE` loads it and verifies all of it.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from reprokit import checks, images, results, validate
from reprokit.commands.build import client, image_dirs
from reprokit.errors import UserError

MANIFEST = "reprokit-archive.json"
LOCK = "lock.json"
ARCHIVE_VERSION = 1


def add_arguments(p) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--suite", help="every image the suite's stacks use")
    which.add_argument("--image", nargs="+", metavar="DIR", help="these image dirs")
    p.add_argument("-o", "--output", required=True, type=Path, help="archive file to write")
    p.add_argument("--flavour", choices=images.FLAVOURS, default="cpu")
    p.add_argument("--lock", type=Path, help="lock file (default images/lock.json)")


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
    lock_doc = {"schema_version": images.LOCK_VERSION, "kind": "image_lock", "images": chosen}
    lock_bytes = (json.dumps(lock_doc, indent=1) + "\n").encode()
    manifest = {"schema_version": ARCHIVE_VERSION, "kind": "image_archive",
                "created": results.utcnow(), "suite": suite, "flavour": flavour,
                "kit": results.kit_info(), "lock_sha256": hashlib.sha256(lock_bytes).hexdigest(),
                "images": []}
    mode = "w:gz" if out.name.endswith((".gz", ".tgz")) else "w"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_name(f".{out.name}.partial")
    with tempfile.TemporaryDirectory(prefix="reprokit-archive-") as tmp, \
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


def run(args) -> int:
    say = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    dirs = image_dirs(args.suite, None, args.image)
    check_output(args.output, dirs, args.flavour, args.lock)
    c = client()
    t = time.monotonic()
    manifest = write_archive(c, dirs, args.flavour, args.output, args.lock, say, args.suite)
    size = args.output.stat().st_size / 2**20
    say(f"archive {args.output}: {len(manifest['images'])} image(s), {size:.0f} MB in "
        f"{time.monotonic() - t:.0f} s")
    print(args.output)
    return 0
