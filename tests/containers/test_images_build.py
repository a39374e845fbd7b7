"""Image builds (tags by input hash, lock file, offline wheelhouse) and archive/restore, on a real
engine. Tests that need the engine skip only when no engine answers."""

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest
import yaml
from conftest import docker_client

from reprokit.containers import images
from reprokit.containers.build import build_image, make_context, pip_download
from reprokit.errors import UserError

QUIET = lambda *_: None  # noqa: E731


engine = docker_client  # skips the test when no engine answers


@pytest.fixture
def lock(tmp_path, monkeypatch):
    path = tmp_path / "lock.json"
    monkeypatch.setenv("REPROKIT_IMAGE_LOCK", str(path))
    return path


def cli(repo, *args, env=None, timeout=900):
    return subprocess.run([sys.executable, str(repo / "reproduce.py"), *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=timeout)


def tiny_wheel(folder, name="reprokit_tiny", version="1.0"):
    """A minimal pure-Python wheel, written by hand (no build backend, no network)."""
    dist = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": b"VALUE = 1\n",
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
             f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n"}
    record = "".join(f"{n},,\n" for n in files) + f"{dist}/RECORD,,\n"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
        z.writestr(f"{dist}/RECORD", record)
    return path


# -- without an engine ---------------------------------------------------------------------------
def test_dockerfile_args_are_parsed():
    text = "ARG BASE_IMAGE=reprokit/base:bookworm\nFROM ${BASE_IMAGE}\nARG FLAVOUR\n" \
           "ARG GPU_BASE_IMAGE=\"nvidia/cuda:9.0\"\nARG FLAVOUR=gpu\n"
    assert images.dockerfile_args(text) == {"BASE_IMAGE": "reprokit/base:bookworm",
                                             "FLAVOUR": None, "GPU_BASE_IMAGE": "nvidia/cuda:9.0"}


def test_the_tag_hash_covers_files_build_args_and_base():
    files = {"Dockerfile": "a" * 64, "wheels/x.whl": "b" * 64}
    h = images.inputs_hash(files, {"FLAVOUR": "cpu"}, "sha256:1")
    assert h == images.inputs_hash(dict(reversed(files.items())), {"FLAVOUR": "cpu"}, "sha256:1")
    assert h != images.inputs_hash({**files, "wheels/x.whl": "c" * 64}, {"FLAVOUR": "cpu"},
                                   "sha256:1")
    assert h != images.inputs_hash(files, {"FLAVOUR": "gpu"}, "sha256:1")
    assert h != images.inputs_hash(files, {"FLAVOUR": "cpu"}, "sha256:2")
    assert images.exact_tag("smoke-python", "cpu", h) == f"reprokit/smoke-python:cpu-{h[:12]}"


def test_pip_download_takes_wheels_offline_from_a_wheelhouse(tmp_path):
    house = tmp_path / "house"
    house.mkdir()
    tiny_wheel(house)
    req = tmp_path / "requirements-cpu.txt"
    req.write_text("reprokit-tiny==1.0\n")
    dest = tmp_path / "dest"
    dest.mkdir()
    pip_download([req], dest, images.BASE_IMAGE, house, QUIET)
    assert [p.name for p in dest.iterdir()] == ["reprokit_tiny-1.0-py3-none-any.whl"]
    req.write_text("reprokit-tiny==2.0\n")
    with pytest.raises(UserError, match="pip download failed"):
        pip_download([req], tmp_path / "dest", images.BASE_IMAGE, house, QUIET)


def test_an_offline_wheelhouse_is_the_only_source(tmp_path, monkeypatch):
    """The machine's pip configuration may name other places (this one's PIP_FIND_LINKS holds CPU
    builds, torch 2.13.0+cpu, which == 2.13.0 matches): offline, the wheelhouse alone is read, so a
    pinned hash meets the file it was taken from."""
    house, other = tmp_path / "house", tmp_path / "other"
    house.mkdir()
    other.mkdir()
    sha = hashlib.sha256(tiny_wheel(house).read_bytes()).hexdigest()
    tiny_wheel(other, version="1.0+cpu")
    req = tmp_path / "requirements-gpu.txt"
    req.write_text(f"reprokit-tiny==1.0 --hash=sha256:{sha}\n")
    monkeypatch.setenv("PIP_FIND_LINKS", str(other))
    dest = tmp_path / "dest"
    dest.mkdir()
    pip_download([req], dest, images.BASE_IMAGE, house, QUIET)
    assert [p.name for p in dest.iterdir()] == ["reprokit_tiny-1.0-py3-none-any.whl"]


def test_every_recipe_builds_args_the_kit_passes(repo):
    """The cpu flavour of each recipe is FROM the base image given by the kit."""
    recipes = sorted(p.parent.name for p in (repo / "images").glob("*/Dockerfile"))
    assert recipes, "no recipes under images/: the directory moved or is empty"
    for d in recipes:
        rec = images.recipe(d, repo / "images")
        args = rec.build_args("cpu", images.BASE_IMAGE)
        assert args.get("BASE_IMAGE") == images.BASE_IMAGE, d
        assert args.get("FLAVOUR") == "cpu", d
        declared = rec.args
        assert set(args) <= set(declared), f"{d}: build args {set(args) - set(declared)} not ARGs"
        for flavour in ("cpu", "gpu"):
            for req in rec.requirements(flavour):
                assert req.is_file()
            assert rec.base_for(flavour, images.BASE_IMAGE)


def test_the_context_holds_the_shared_files_and_the_tag_hash_covers_them(tmp_path):
    """A file the Dockerfile COPYs from images/_blocks/ (fetch_sha256.sh) is copied into the build
    context and hashed like the recipe's own files: changing it gives another tag."""
    root = tmp_path / "images"
    (root / "_blocks").mkdir(parents=True)
    shared = root / "_blocks" / "fetch_sha256.sh"
    shared.write_text("#!/bin/sh\necho one\n")
    (root / "fetcher").mkdir()
    (root / "fetcher" / "extra.txt").write_text("own file\n")
    (root / "fetcher" / "Dockerfile").write_text(
        "ARG BASE_IMAGE=reprokit/base:bookworm\nFROM ${BASE_IMAGE} AS build\nFROM ${BASE_IMAGE}\n"
        "COPY fetch_sha256.sh extra.txt /opt/reprokit/build/\nCOPY --from=build /etc/hostname /x\n")
    rec = images.recipe("fetcher", root)
    assert rec.shared_files() == [shared]
    hashes = []
    for text in ("#!/bin/sh\necho one\n", "#!/bin/sh\necho two\n"):
        shared.write_text(text)
        ctx = tmp_path / f"ctx{len(hashes)}"
        ctx.mkdir()
        files = make_context(rec, "cpu", images.BASE_IMAGE, None, ctx, QUIET)
        assert (ctx / "fetch_sha256.sh").read_text() == text
        assert files["fetch_sha256.sh"] == images.file_sha256(shared)
        assert "extra.txt" in files and "Dockerfile" in files
        hashes.append(images.inputs_hash(files, {"FLAVOUR": "cpu"}, "sha256:base"))
    assert hashes[0] != hashes[1]


# -- on the engine -------------------------------------------------------------------------------
@pytest.mark.docker
def test_build_tags_by_inputs_and_locks_every_file(lock, tmp_path, repo):
    c = engine()
    lines = []
    entry = build_image(c, "smoke-python", say=lines.append)
    assert re.fullmatch(r"reprokit/smoke-python:cpu-[0-9a-f]{12}", entry["tag"])
    assert entry["tag"].endswith(entry["inputs_hash"][:12])
    assert c.images.get(entry["tag"]).id == c.images.get("reprokit/smoke-python:cpu").id \
        == entry["image_id"]
    doc = json.loads(lock.read_text())
    assert doc["images"]["smoke-python:cpu"]["image_id"] == entry["image_id"]
    recipe_dir = images.recipe("smoke-python").path
    assert entry["files"]["Dockerfile"] == images.file_sha256(recipe_dir / "Dockerfile")
    assert entry["base_image"] == {"name": images.BASE_IMAGE, "id": c.images.get(images.BASE_IMAGE).id,
                                   "repo_digests": c.images.get(images.BASE_IMAGE).attrs["RepoDigests"]}
    for name, digest in entry["files"].items():
        if name.startswith("wheels/") and name.endswith(".whl"):
            assert re.fullmatch(r"[0-9a-f]{64}", digest)
    # the same inputs again: found, not rebuilt; the lock keeps the real build time
    again = []
    second = build_image(c, "smoke-python", say=again.append)
    assert second["tag"] == entry["tag"] and second["image_id"] == entry["image_id"]
    assert any("up to date" in line for line in again)
    assert second["build_seconds"] == entry["build_seconds"]
    # one changed byte in the recipe: another tag
    root = tmp_path / "recipes"
    shutil.copytree(recipe_dir, root / "smoke-python")
    with open(root / "smoke-python" / "Dockerfile", "a") as f:
        f.write("\n# changed\n")
    changed = build_image(c, "smoke-python", root=root, lock=tmp_path / "other.json", say=QUIET)
    assert changed["tag"] != entry["tag"]
    c.images.remove(changed["tag"])


@pytest.mark.docker
def test_a_failing_step_is_named_in_one_line(lock, tmp_path):
    c = engine()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "Dockerfile").write_text(
        "ARG BASE_IMAGE=reprokit/base:bookworm\nFROM ${BASE_IMAGE}\n"
        "RUN echo the-recipe-broke >&2 && false\n")
    lines = []
    with pytest.raises(UserError) as e:
        build_image(c, "broken", root=tmp_path, say=lines.append)
    msg = str(e.value)
    assert "\n" not in msg and "Step 3/" in msg and "non-zero code" in msg
    assert "last output: the-recipe-broke" in msg
    assert any("the-recipe-broke" in line for line in lines)  # the error output was streamed


@pytest.mark.docker
def test_a_gpu_flavour_without_its_base_is_built_as_far_as_it_goes(lock, tmp_path, repo):
    """No registry here serves NVIDIA's bases: build_image refuses, in one line; `build` goes as far
    as the machine reaches (the wheelhouse, every sha256 checked), records that in the lock's
    `partial` with what stopped it, and exits 2 naming it. A wheelhouse that cannot be filled is
    recorded as reaching nothing, with the failure."""
    c = engine()
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "Dockerfile").write_text(
        "ARG BASE_IMAGE=reprokit/base:bookworm\nFROM ${BASE_IMAGE}\nARG FLAVOUR=cpu\n")
    # a valid recipe.yaml (every reader validates it): smoke-python's, its gpu flavour FROM NVIDIA's
    doc = yaml.safe_load((repo / "images" / "smoke-python" / "recipe.yaml").read_text())
    doc.update(image="gpu", tag="reprokit/gpu:{flavour}", context="images/gpu")
    doc["flavours"]["gpu"]["build_args"]["BASE_IMAGE"] = "ubuntu:16.04"
    doc["flavours"]["gpu"]["requirements"] = "requirements-gpu.txt"
    (tmp_path / "gpu" / "recipe.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    wheel = tiny_wheel(tmp_path)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (tmp_path / "gpu" / "requirements-gpu.txt").write_text(f"reprokit-tiny==1.0 --hash=sha256:{sha}\n")
    with pytest.raises(UserError, match="cannot be built on this machine.*ubuntu:16.04"):
        build_image(c, "gpu", "gpu", root=tmp_path, say=QUIET)
    env = {"REPROKIT_IMAGES_DIR": str(tmp_path)}
    out = cli(repo, "build", "--image", "gpu", "--flavour", "gpu", "--wheelhouse", str(tmp_path), env=env)
    assert out.returncode == 2, out.stderr
    assert "built only in part here: gpu (to wheelhouse)" in out.stderr.splitlines()[-1]
    assert "built to wheelhouse (1 wheels" in out.stdout and "ubuntu:16.04" in out.stdout
    part = json.loads(lock.read_text())["partial"]["gpu:gpu"]
    assert part["reached"] == "wheelhouse" and "ubuntu:16.04 is not on this engine" in part["stopped_by"]
    assert part["wheels"] == {"wheels/reprokit_tiny-1.0-py3-none-any.whl": sha}
    assert json.loads(lock.read_text())["images"] == {}
    # a pin whose hash does not match: pip refuses it, and the build reached nothing
    (tmp_path / "gpu" / "requirements-gpu.txt").write_text(f"reprokit-tiny==1.0 --hash=sha256:{'0' * 64}\n")
    out = cli(repo, "build", "--image", "gpu", "--flavour", "gpu", "--wheelhouse", str(tmp_path), env=env)
    assert out.returncode == 2, out.stderr
    part = json.loads(lock.read_text())["partial"]["gpu:gpu"]
    assert part["reached"] == "nothing" and "pip download failed" in part["stopped_by"]
    for recipe in sorted((repo / "images").glob("*/Dockerfile")):  # the real recipes too
        rec = images.recipe(recipe.parent.name, repo / "images")
        if images.get_image(c, rec.base_for("gpu", images.BASE_IMAGE)) is not None:
            continue  # e.g. smoke-python: its gpu flavour is FROM the local base
        with pytest.raises(UserError, match="cannot be built on this machine"):
            build_image(c, recipe.parent.name, "gpu", root=repo / "images", say=QUIET)


def test_a_lock_of_the_first_version_is_read_as_the_current_one(tmp_path):
    old = {"schema_version": 1, "kind": "image_lock", "images": {}}
    (tmp_path / "lock.json").write_text(json.dumps(old))
    assert images.load_lock(tmp_path / "lock.json")["schema_version"] == 2
    images.update_lock({"x:gpu": {"image_dir": "x", "flavour": "gpu", "reached": "nothing",
                                  "stopped_by": "a test", "attempted": "2026-11-29T00:00:00Z"}},
                       tmp_path / "lock.json", partial=True)
    doc = json.loads((tmp_path / "lock.json").read_text())
    assert doc["schema_version"] == 2 and doc["partial"]["x:gpu"]["reached"] == "nothing"


@pytest.mark.docker
def test_build_command_streams_progress(repo, lock, tmp_path):
    c = engine()
    root = tmp_path / "recipes"  # a copy with one more line: a real build, a tag of its own
    shutil.copytree(images.recipe("smoke-python").path, root / "smoke-python")
    with open(root / "smoke-python" / "Dockerfile", "a") as f:
        f.write(f"\n# build {tmp_path.name}\n")
    out = cli(repo, "build", "--image", "smoke-python", env={"REPROKIT_IMAGES_DIR": str(root)})
    assert out.returncode == 0, out.stderr
    assert "Step 1/" in out.stderr and "lock:" in out.stderr
    tag, image_id = out.stdout.split()[:2]
    assert json.loads(lock.read_text())["images"]["smoke-python:cpu"]["image_id"] == image_id
    c.images.remove(tag)


def _rewrite(src, dst, change):
    """Copy tar src to dst, passing each member's bytes through change(name, data)."""
    with tarfile.open(src) as t, tarfile.open(dst, "w") as out:
        for m in t.getmembers():
            data = change(m.name, t.extractfile(m).read())
            m.size = len(data)
            out.addfile(m, io.BytesIO(data))


@pytest.mark.docker
def test_archive_and_restore_round_trip_with_checksums(repo, lock, tmp_path):
    c = engine()
    entry = build_image(c, "smoke-python", say=QUIET)
    archive = tmp_path / "smoke.tar"
    out = cli(repo, "archive", "--image", "smoke-python", "-o", str(archive))
    assert out.returncode == 0, out.stderr
    with tarfile.open(archive) as t:
        manifest = json.load(t.extractfile("reprokit-archive.json"))
        assert hashlib.sha256(t.extractfile("lock.json").read()).hexdigest() == \
            manifest["lock_sha256"]
    (im,) = manifest["images"]
    assert im["image_id"] == entry["image_id"] and im["layers"]

    c.images.remove(entry["image_id"], force=True)  # every tag of it
    assert not [i for i in c.images.list() if i.id == entry["image_id"]]
    new_lock = tmp_path / "new-machine-lock.json"
    out = cli(repo, "restore", str(archive), "--lock", str(new_lock))
    assert out.returncode == 0, out.stderr
    assert "verified" in out.stderr
    assert c.images.get(entry["tag"]).id == c.images.get("reprokit/smoke-python:cpu").id \
        == entry["image_id"]
    assert json.loads(new_lock.read_text())["images"]["smoke-python:cpu"] == entry

    # one flipped byte in the image tarball
    bad = tmp_path / "flipped.tar"

    def flip(name, data):
        if name == im["file"]:
            i = len(data) // 2
            return data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
        return data

    _rewrite(archive, bad, flip)
    out = cli(repo, "restore", str(bad), "--lock", str(tmp_path / "x.json"))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert f"{im['file']} sha256" in out.stderr and "!= manifest" in out.stderr

    # a lock (consistently re-hashed) that names another image ID
    other = tmp_path / "other-id.tar"
    fake = "sha256:" + "0" * 64

    def swap_id(name, data):
        if name == "lock.json":
            doc = json.loads(data)
            doc["images"]["smoke-python:cpu"]["image_id"] = fake
            swap_id.lock = (json.dumps(doc, indent=1) + "\n").encode()
            return swap_id.lock
        if name == "reprokit-archive.json":
            doc = json.loads(data)
            doc["images"][0]["image_id"] = fake
            doc["lock_sha256"] = hashlib.sha256(swap_id.lock).hexdigest()
            return json.dumps(doc).encode()
        return data

    _rewrite(archive, other, swap_id)
    out = cli(repo, "restore", str(other), "--lock", str(tmp_path / "y.json"))
    assert out.returncode == 2 and "loaded as" in out.stderr and "lock says sha256:000" in out.stderr
