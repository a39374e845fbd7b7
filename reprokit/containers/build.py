"""The build engine: one stack image built with the docker SDK and recorded in the lock file.

A build context is assembled in a temporary directory: every file of images/<dir>/, the shared
files of images/_blocks/ the Dockerfile COPYs (e.g. fetch_sha256.sh; hashed into the tag like every
context file) and a wheelhouse (`wheels/`) that `pip download` fills on the host with exactly the
wheels the flavour's requirement file needs (from PyPI and the pip configuration's find-links; with
--wheelhouse DIR, offline from DIR only). Inside the build pip installs from that wheelhouse with
--no-index: no package index is needed. Tags and the lock file: reprokit/containers/images.py.
`reproduce.py build` (reprokit/commands/build.py) parses its arguments and calls build_image.
"""

from __future__ import annotations

import io
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

from reprokit import files
from reprokit.containers import images, recipes
from reprokit.containers.images import (
    BASE_IMAGE,
    FLAVOURS,
    WHEELS,
    Recipe,
    alias_tag,
    context_files,
    exact_tag,
    get_image,
    inputs_hash,
    load_lock,
    lock_key,
    python_for_base,
    update_lock,
)
from reprokit.errors import UserError

SKIP = {WHEELS, "__pycache__", ".git", "lock.json"}
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
DOWNLOADS = "/opt/reprokit/provenance/downloads.sha256"  # written by the recipes' fetch_sha256.sh


# -- building ------------------------------------------------------------------------------------
def host_matches(py: str, glibc: int) -> bool:
    """True when this interpreter chooses exactly what the image's would: same CPython version,
    Linux x86_64, a glibc no newer than the image's. Then sdists (e.g. Theano) can be fetched too."""
    libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    m = re.fullmatch(r"glibc 2\.(\d+)", libc or "")
    return (sys.platform == "linux" and platform.machine() == "x86_64"
            and sys.implementation.name == "cpython" and f"{sys.version_info[0]}.{sys.version_info[1]}" == py
            and m is not None and int(m.group(1)) <= glibc)


def pip_download(reqs: list[Path], dest: Path, base: str, wheelhouse: Path | None, say,
                 flags: list[str] | None = None, cpu: bool = True) -> None:
    """Fill dest with the wheels of reqs: for the base's Python on manylinux x86_64, or for the
    interpreter that `flags` (recipe.yaml's --python-version/--abi/--platform) name."""
    py, glibc = python_for_base(base)
    cmd = [sys.executable, "-m", "pip", "download", "--dest", str(dest), "--progress-bar", "off"]
    if flags:
        py = flags[flags.index("--python-version") + 1] if "--python-version" in flags else py
        cmd += flags + ([] if "--only-binary=:all:" in flags or "--no-deps" in flags
                        else ["--only-binary=:all:"])
    elif not host_matches(py, glibc):  # for another interpreter: the file pins every dependency,
        # so --no-deps (which pip needs to target another Python) resolves nothing; it also lets a
        # pure-Python sdist pin (Theano 1.0.5 for reprokit/base:bullseye) through, where
        # --only-binary=:all: would refuse it
        cmd += ["--no-deps", "--python-version", py, "--implementation", "cp",
                "--abi", "cp" + py.replace(".", "")]
        for minor in range(glibc, 16, -1):
            cmd += ["--platform", f"manylinux_2_{minor}_x86_64"]
        cmd += ["--platform", "manylinux2014_x86_64", "--platform", "manylinux2010_x86_64",
                "--platform", "manylinux1_x86_64"]
    env = None
    if wheelhouse is not None:  # from DIR only: the machine's pip configuration (its find-links, its
        # constraints) would offer other files of the same version, e.g. torch 2.13.0+cpu for 2.13.0
        cmd += ["--no-index", "--find-links", str(wheelhouse)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env["PIP_CONFIG_FILE"] = os.devnull
    for r in reqs:
        cmd += ["-r", str(r)]
    names = " ".join(str(r.relative_to(files.REPO)) if r.is_relative_to(files.REPO) else str(r)
                     for r in reqs)
    say(f"pip download for Python {py}: {names}"
        + (f" (offline, from {wheelhouse})" if wheelhouse else ""))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    tail: list[str] = []
    for line in proc.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-20:]
        if line.startswith(("Collecting", "Saved", "Successfully", "ERROR", "File was")):
            say(f"  pip: {line}")
    if proc.wait() != 0:
        err = next((x for x in reversed(tail) if x.startswith("ERROR")), tail[-1] if tail else "")
        raise UserError(f"pip download failed for images/{reqs[0].parent.name}: {err}")
    cuda = sorted(p.name for p in dest.iterdir() if p.name.startswith("nvidia_") or "+cu" in p.name)
    if cpu and cuda:
        raise UserError(f"the CPU wheelhouse pulled CUDA wheels ({', '.join(cuda[:3])}); pin the "
                        "CPU build (e.g. torch==X+cpu) in the requirement file")


def fetch_extra_files(rec: Recipe, flavour: str, dest: Path, wheelhouse: Path | None,
                      recorded: dict[str, str] | None, say) -> list[dict]:
    """The recipe's `extra_files` (wheels not on PyPI, e.g. download.pytorch.org's torch builds)
    into dest, each checked against its sha256: recipe.yaml's, else the one an earlier build
    recorded in the lock (`recorded`: wheels/<file> -> sha256), else recorded now (first build).
    With --wheelhouse DIR the file is taken from DIR (offline), with the same check."""
    from reprokit.containers import wheelhouse as wh

    spec = rec.flavour(flavour) or {}
    out = []
    for e in wh.extra_file_pins(spec):
        target = dest / e["filename"]
        key = f"{WHEELS}/{e['filename']}"
        want = e.get("sha256") or (recorded or {}).get(key)
        if wheelhouse is not None:
            local = wheelhouse / e["filename"]
            if not local.is_file():
                raise UserError(f"--wheelhouse {wheelhouse} has no {e['filename']} (recipe.yaml "
                                f"extra_files of images/{rec.image_dir}); download {e['url']} there")
            shutil.copy2(local, target)
        else:
            say(f"fetching {e['url']}")
            try:
                with urllib.request.urlopen(e["url"], timeout=600) as r, open(target, "wb") as f:
                    shutil.copyfileobj(r, f, 1 << 20)
            except (OSError, ValueError) as err:
                raise UserError(f"cannot download {e['url']} (recipe.yaml extra_files of "
                                f"images/{rec.image_dir}): {err}") from None
        got = images.file_sha256(target)
        if want and got != want:
            raise UserError(f"sha256 mismatch for {e['url']}: expected {want} ("
                            f"{'recipe.yaml' if e.get('sha256') else 'recorded by an earlier build'}), "
                            f"got {got}")
        source = ("recipe.yaml" if e.get("sha256") else
                  "enforced: recorded by an earlier build" if want else "recorded on first build")
        say(f"  {e['filename']}: sha256 {got} ({source})")
        out.append({"url_arg": None, "url": e["url"], "sha256_arg": None, "sha256": got,
                    "file": key, "source": source})
    return out


def make_context(rec: Recipe, flavour: str, base: str, wheelhouse: Path | None, ctx: Path,
                 say, recorded: dict[str, str] | None = None,
                 fetched: list[dict] | None = None) -> dict[str, str]:
    """Copy the recipe and the shared files it uses into ctx, download its wheels into ctx/wheels
    (and its extra_files, sha256-checked; their records appended to `fetched`); return
    {file: sha256}."""
    for p in rec.path.iterdir():
        if p.name in SKIP:
            continue
        if p.is_dir():
            shutil.copytree(p, ctx / p.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(p, ctx / p.name)
    for p in rec.shared_files():
        shutil.copy2(p, ctx / p.name)
    (ctx / WHEELS).mkdir()
    extra = fetch_extra_files(rec, flavour, ctx / WHEELS, wheelhouse, recorded, say)
    if fetched is not None:
        fetched.extend(extra)
    reqs = rec.requirements(flavour)
    if reqs:
        flags = rec.pip_flags(flavour) if flavour != "cpu" else None
        pip_download(reqs, ctx / WHEELS, base, wheelhouse, say, flags, cpu=flavour == "cpu")
    (ctx / WHEELS / ".keep").touch()  # COPY of an empty directory still works
    t = time.monotonic()
    files = context_files(ctx)
    say(f"hashed {len(files)} context files in {time.monotonic() - t:.1f} s")
    return files


def image_file(client, image_id: str, path: str) -> str | None:
    """Text of one file inside an image (read from a created, never started container)."""
    import docker

    container = client.containers.create(image_id, command=["true"], network_disabled=True)
    try:
        stream, _ = container.get_archive(path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as t:
            member = t.getmembers()[0]
            return t.extractfile(member).read().decode("utf-8", "replace")
    except docker.errors.NotFound:
        return None
    finally:
        container.remove(force=True)


def recorded_downloads(client, image_id: str) -> list[dict]:
    """The sha256 of every file the recipe downloaded during the build (fetch_sha256.sh)."""
    text = image_file(client, image_id, DOWNLOADS) or ""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            out.append({"sha256": parts[0], "file": parts[1], "url": parts[2]})
    return out


def match_downloads(specs: list[dict], recorded: list[dict], build_args: dict,
                    declared: dict) -> list[dict]:
    """Each download of recipe.yaml with the sha256 the build recorded for its URL."""
    out = []
    for d in specs:
        url = build_args.get(d["url_arg"]) or declared.get(d["url_arg"]) or ""
        hit = next((r for r in recorded if url and (r["url"] == url or (
            r["url"].startswith(url.rstrip("/") + "/") and r["url"].endswith(d.get("file") or "")))),
            None)
        out.append({"url_arg": d["url_arg"], "url": hit["url"] if hit else url,
                    "sha256_arg": d.get("sha256_arg"),
                    "sha256": hit["sha256"] if hit else d.get("sha256"),
                    "source": "recipe.yaml" if d.get("sha256") else
                    ("recorded on first build" if hit else "not downloaded by this build")})
    known = {o["url"] for o in out}
    out += [{"url_arg": None, "url": r["url"], "sha256_arg": None, "sha256": r["sha256"],
             "source": "recorded by the build"} for r in recorded if r["url"] not in known]
    return out


def _engine(client) -> dict:
    v = client.version()
    return {"version": v.get("Version"), "api": v.get("ApiVersion")}


def _short(text: str, n: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else f"{text[:n // 2 - 2]} ... {text[-(n // 2 - 3):]}"


def stream_build(client, ctx: Path, tag: str, build_args: dict, labels: dict, say) -> str:
    """docker build through the SDK, streaming its output line by line; returns the image ID or
    raises a one-line UserError naming the failing step."""
    image_id, last_step, last_out, pending = None, "", "", ""

    def emit(line: str) -> None:
        nonlocal last_step, last_out
        line = line.rstrip()
        if line:
            if line.startswith("Step "):
                last_step, last_out = line, ""
            elif not line.lstrip().startswith(("---> ", "Removing intermediate")) and \
                    line.strip(" ^~"):
                last_out = line
            say(f"  {line}")

    for chunk in client.api.build(path=str(ctx), tag=tag, buildargs=build_args, labels=labels,
                                  rm=True, forcerm=True, pull=False, decode=True):
        if "stream" in chunk:  # chunks may end mid-line: print whole lines only
            *lines, pending = (pending + ANSI.sub("", chunk["stream"])).split("\n")
            for line in lines:
                emit(line)
        elif "status" in chunk:
            say(f"  {chunk['status']} {chunk.get('progress', '')}".rstrip())
        if "aux" in chunk and "ID" in chunk["aux"]:
            image_id = chunk["aux"]["ID"]
        if "error" in chunk:
            emit(pending)
            msg = chunk["error"].strip().splitlines()
            out = f" (last output: {_short(last_out, 160)})" if last_out else ""
            raise UserError(f"build of {tag} failed at {_short(last_step) or 'start'}: "
                            f"{_short(msg[-1] if msg else 'unknown error', 160)}{out}")
    emit(pending)
    if image_id is None:
        image_id = client.images.get(tag).id
    return image_id


def gpu_base_out_of_reach(image_dir: str, from_image: str) -> str:
    """What stops a GPU flavour whose base image is not on this engine, in words."""
    return (f"the gpu flavour of {image_dir} cannot be built on this machine: its base {from_image} is "
            "not on this engine and no registry is reachable (no NVIDIA/Ubuntu base images here)")


def check_base(client, image_dir: str, flavour: str, base: str = BASE_IMAGE,
               root: Path | None = None):
    """(recipe, FROM image, its engine image) or a one-line UserError when the base is missing."""
    if flavour not in FLAVOURS:
        raise UserError(f"unknown flavour {flavour!r}; use cpu or gpu")
    rec = images.recipe(image_dir, root)
    from_image = rec.base_for(flavour, base)
    base_img = get_image(client, from_image)
    if base_img is None:
        if flavour == "gpu":
            raise UserError(f"{gpu_base_out_of_reach(image_dir, from_image)}; build it where the engine "
                            f"has {from_image}")
        raise UserError(f"base image {from_image} is not on this engine; run .ci/docker-setup.sh "
                        "(debootstrap + docker import) first")
    return rec, from_image, base_img


def build_image(client, image_dir: str, flavour: str = "cpu", base: str = BASE_IMAGE,
                wheelhouse: Path | None = None, force: bool = False, lock: Path | None = None,
                root: Path | None = None, say=print) -> dict:
    """Build one image (or find it already built from identical inputs); update the lock."""
    rec, from_image, base_img = check_base(client, image_dir, flavour, base, root)
    if recipes.is_stale(rec.image_dir, rec.path.parent):
        say(f"warning: images/{image_dir}/Dockerfile differs from what its recipe.yaml generates; "
            "building it as it is (regenerate: python -m reprokit.containers.recipes)")
    old = load_lock(lock)["images"].get(lock_key(image_dir, flavour)) or {}
    recorded = {d["sha256_arg"]: d["sha256"] for d in old.get("downloads", [])
                if d.get("sha256_arg") and d.get("sha256")}
    recorded_files = {d["file"]: d["sha256"] for d in old.get("downloads", [])
                      if d.get("file") and d.get("sha256")}
    build_args = rec.build_args(flavour, from_image, recorded)
    extra: list[dict] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"reprokit-ctx-{image_dir}-") as tmp:
        ctx = Path(tmp)
        files = make_context(rec, flavour, from_image, wheelhouse, ctx, say, recorded_files, extra)
        digest = inputs_hash(files, build_args, base_img.id)
        tag = exact_tag(image_dir, flavour, digest)
        existing = get_image(client, tag)
        reused = existing is not None and not force
        if reused:
            say(f"{tag} is up to date ({existing.id[:19]}): same inputs, not rebuilt")
            image_id = existing.id
        else:
            say(f"building {tag} from {from_image} ({len(files)} context files)")
            labels = {"org.reprokit.image-dir": image_dir, "org.reprokit.flavour": flavour,
                      "org.reprokit.inputs-hash": digest}
            image_id = stream_build(client, ctx, tag, build_args, labels, say)
    seconds = time.monotonic() - started
    alias_repo, alias = alias_tag(image_dir, flavour).split(":")
    client.api.tag(image_id, alias_repo, alias)
    img = client.images.get(image_id)
    entry = {
        "image_dir": image_dir, "flavour": flavour, "tag": tag,
        "alias": alias_tag(image_dir, flavour), "image_id": image_id,
        "repo_digests": img.attrs.get("RepoDigests") or [],
        "size_bytes": img.attrs.get("Size"), "inputs_hash": digest,
        "base_image": {"name": from_image, "id": base_img.id,
                       "repo_digests": base_img.attrs.get("RepoDigests") or []},
        "build_args": build_args, "files": files,
        "downloads": match_downloads(rec.downloads(flavour), recorded_downloads(client, image_id),
                                     build_args, rec.args) + extra,
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "build_seconds": round(seconds, 1), "engine": _engine(client),
    }
    if reused and old.get("image_id") == image_id:  # keep when and how long it really took
        entry["built"], entry["build_seconds"] = old["built"], old["build_seconds"]
    p = update_lock({lock_key(image_dir, flavour): entry}, lock)
    say(f"{tag}: {image_id[:19]} in {seconds:.0f} s; lock: {p}")
    return entry


def build_partial(image_dir: str, flavour: str, base: str, stopped_by: str,
                  wheelhouse: Path | None = None, lock: Path | None = None, root: Path | None = None,
                  say=print) -> dict:
    """A flavour whose base image is out of reach, built as far as this machine goes: its build
    context assembled in a temporary directory, so its wheelhouse is downloaded with every sha256
    checked (pip's hash checking; extra_files against their sums), then recorded in the lock's
    `partial` with what stopped the build (`stopped_by`). A download that fails ends it earlier
    (reached "nothing", the failure as what stopped it). The Dockerfile's own downloads need the base
    and are not tried."""
    rec = images.recipe(image_dir, root)
    from_image = rec.base_for(flavour, base)
    entry: dict = {"image_dir": image_dir, "flavour": flavour, "base_image": from_image,
                   "attempted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"reprokit-ctx-{image_dir}-") as tmp:
        try:
            hashed = make_context(rec, flavour, from_image, wheelhouse, Path(tmp), say)
        except UserError as e:
            entry.update(reached="nothing", stopped_by=str(e).splitlines()[0])
        else:
            wheels = {k: v for k, v in hashed.items()
                      if k.startswith(f"{WHEELS}/") and k != f"{WHEELS}/.keep"}
            size = sum((Path(tmp) / k).stat().st_size for k in wheels)
            entry.update(reached="wheelhouse", stopped_by=stopped_by, wheels=wheels, wheelhouse_bytes=size)
    entry["seconds"] = round(time.monotonic() - started, 1)
    update_lock({lock_key(image_dir, flavour): entry}, lock, partial=True)
    return entry


def build_images(client, dirs: list[str], flavour: str, base: str = BASE_IMAGE,
                 wheelhouse: Path | None = None, force: bool = False, lock: Path | None = None,
                 say=print):
    """Build the image dirs one after the other, every base checked before the first (long) build
    starts; yields (lock entry, seconds) as each is done. A GPU flavour whose base is not on this
    engine (no registry reaches NVIDIA's) is built as far as it goes (build_partial): its entry has
    `reached`."""
    out_of_reach = {}
    for d in dirs:
        from_image = images.recipe(d).base_for(flavour, base)
        if flavour == "gpu" and get_image(client, from_image) is None:
            out_of_reach[d] = gpu_base_out_of_reach(d, from_image)
        else:
            check_base(client, d, flavour, base)
    for d in dirs:
        t = time.monotonic()
        say(f"== {d} ({flavour})")
        if d in out_of_reach:
            entry = build_partial(d, flavour, base, out_of_reach[d], wheelhouse, lock, say=say)
        else:
            entry = build_image(client, d, flavour, base=base, wheelhouse=wheelhouse, force=force,
                                lock=lock, say=say)
        yield entry, time.monotonic() - t


def check_wheelhouses(dirs: list[str], flavour: str, say) -> None:
    """The wheelhouse check of reprokit/containers/wheelhouse.py for these images; a UserError listing the
    first problems when any wheelhouse would not resolve for its target interpreter."""
    from reprokit.containers import wheelhouse as wh

    try:
        reports = wh.check(dirs, (flavour,), say=say)
    except wh.IndexError_ as e:
        raise UserError(f"the wheelhouse check cannot read the package index ({e}); "
                        "it needs https://pypi.org") from None
    problems = [line for r in reports for line in r.problems]
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise UserError(f"the {flavour} wheelhouse does not resolve for its target interpreter: "
                        + "; ".join(problems[:3]) + more + " (python -m "
                        "reprokit.containers.wheelhouse --check lists them all)")
