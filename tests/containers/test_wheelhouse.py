"""The wheelhouse check (reprokit/containers/wheelhouse.py): every flavour's requirements resolve for the
interpreter of its image, with its environment markers, and every pinned sha256 is the index's.

Most tests run against a small index served from tmp_path by a local HTTP server (range requests
included). `test_every_gpu_wheelhouse_resolves_against_pypi` asks the real PyPI: it is marked
`network` and FAILS when the index cannot be read (CI reaches PyPI; a skip would hide a broken
GPU build).
"""

import hashlib
import http.server
import io
import json
import os
import re
import threading
import time
import zipfile
from pathlib import Path

import pytest
import yaml

from reprokit.containers import build, recipes, wheelhouse
from reprokit.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "images"
PY35 = wheelhouse.Target((3, 5), "3.5.2", "cp", ["cp35m"], ["manylinux1_x86_64"])


# -- a small index on localhost ------------------------------------------------------------------
def wheel_bytes(name, version, requires=(), requires_python=None, tag="py3-none-any"):
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    if requires_python:
        meta += f"Requires-Python: {requires_python}\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{name.replace('-', '_')}/data.bin", os.urandom(300_000))  # > a few range blocks
        z.writestr(f"{dist}/METADATA", meta)
        z.writestr(f"{dist}/WHEEL", f"Wheel-Version: 1.0\nTag: {tag}\n")
    return f"{name.replace('-', '_')}-{version}-{tag}.whl", buf.getvalue()


class Handler(http.server.BaseHTTPRequestHandler):
    root: Path = Path(".")
    ranges: list = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.root / self.path.lstrip("/")
        if self.path.startswith("/simple/"):
            path = path / "index.json"
        if not path.is_file():
            self.send_response(404)
            self.end_headers()
            return
        data = path.read_bytes()
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        if m:
            lo, hi = int(m.group(1)), min(int(m.group(2)), len(data) - 1)
            Handler.ranges.append((self.path, lo, hi))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {lo}-{hi}/{len(data)}")
            data = data[lo:hi + 1]
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def index(tmp_path):
    """(add(name, filename, data, requires_python=None), Index) of a served tmp index."""
    root = tmp_path / "index"
    (root / "files").mkdir(parents=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("H", (Handler,), {"root": root}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def add(name, filename, data, requires_python=None):
        (root / "files" / filename).write_bytes(data)
        page = root / "simple" / name / "index.json"
        page.parent.mkdir(parents=True, exist_ok=True)
        doc = json.loads(page.read_text()) if page.exists() else {"files": []}
        doc["files"].append({"filename": filename, "url": f"{base}/files/{filename}",
                             "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                             "requires-python": requires_python, "size": len(data)})
        page.write_text(json.dumps(doc))
        return hashlib.sha256(data).hexdigest()

    yield add, wheelhouse.Index(base + "/simple")
    server.shutdown()


def fake_images(tmp_path, requirements, extra_files=None, image="2018-keras-tf"):
    """A copy of one real recipe whose gpu requirements are `requirements`."""
    import shutil

    root = tmp_path / "images"
    shutil.copytree(IMAGES / "_blocks", root / "_blocks")
    shutil.copytree(IMAGES / image, root / image, ignore=shutil.ignore_patterns("wheels"))
    (root / image / "requirements-gpu.txt").write_text(requirements)
    if extra_files is not None:
        path = root / image / "recipe.yaml"
        doc = yaml.safe_load(path.read_text())
        doc["flavours"]["gpu"]["wheelhouse"]["extra_files"] = extra_files
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def problems_of(root, idx, image="2018-keras-tf"):
    return wheelhouse.check_flavour(image, "gpu", idx, root).problems


# -- the target, not the host --------------------------------------------------------------------
def test_the_gpu_targets_come_from_the_recipes():
    distros = recipes.load_distros()
    t = wheelhouse.target_for(recipes.load_recipe("2018-keras-tf"), "gpu", distros)
    assert (t.python, t.full, t.abis, t.platforms) == ((3, 5), "3.5.2", ["cp35m"], ["manylinux1_x86_64"])
    t = wheelhouse.target_for(recipes.load_recipe("2019-tensorflow"), "gpu", distros)
    assert t.python == (3, 6) and t.expanded_platforms() == ["manylinux2010_x86_64", "manylinux1_x86_64"]
    t = wheelhouse.target_for(recipes.load_recipe("modern"), "gpu", distros)
    assert t.python == (3, 11) and t.platforms[0] == "manylinux_2_36_x86_64"


def test_markers_are_evaluated_for_the_target_interpreter():
    need = "importlib-metadata ; python_version < '3.8'"
    r = wheelhouse.Resolved("Markdown", "3.2.2", "m.whl", None, "pypi", [need])
    py311 = wheelhouse.Target((3, 11), "3.11.2", "cp", ["cp311"], ["manylinux1_x86_64"])
    assert wheelhouse.closure([r], py311.environment(), "r") == []          # what the host sees
    (problem,) = wheelhouse.closure([r], PY35.environment(), "r")             # what the image needs
    assert "needs importlib-metadata" in problem and "3.5.2" in problem


def test_a_linux_wheel_does_not_install_on_a_manylinux_target():
    order = {t: i for i, t in enumerate(PY35.tags())}
    assert wheelhouse.rank("torch-0.1.12.post2-cp35-cp35m-linux_x86_64.whl", order) is None
    assert wheelhouse.rank("numpy-1.12.1-cp35-cp35m-manylinux1_x86_64.whl", order) == 0
    assert wheelhouse.rank("six-1.17.0-py2.py3-none-any.whl", order) > 0
    assert wheelhouse.rank("numpy-1.12.1-cp36-cp36m-manylinux1_x86_64.whl", order) is None


# -- against the served index --------------------------------------------------------------------
def test_a_sha256_of_another_release_is_found(index, tmp_path):
    add, idx = index
    old = add("markdown", "Markdown-2.6.8.tar.gz", b"old sdist")
    name, data = wheel_bytes("Markdown", "3.2.2", requires_python=">=3.5")
    add("markdown", name, data, ">=3.5")
    root = fake_images(tmp_path, f"Markdown==3.2.2 --hash=sha256:{old}\n")
    (problem,) = problems_of(root, idx)
    assert "Markdown==3.2.2: no file of this release has the pinned sha256" in problem
    assert "that is the sha256 of Markdown-2.6.8.tar.gz" in problem
    assert hashlib.sha256(data).hexdigest() in problem


def test_a_conditional_dependency_of_the_target_must_be_pinned(index, tmp_path):
    add, idx = index
    name, data = wheel_bytes("Markdown", "3.2.2", ['importlib-metadata ; python_version < "3.8"'])
    md = add("markdown", name, data)
    root = fake_images(tmp_path, f"Markdown==3.2.2 --hash=sha256:{md}\n")
    (problem,) = problems_of(root, idx)
    assert "Markdown==3.2.2 needs importlib-metadata" in problem and "not pinned" in problem
    name, data = wheel_bytes("importlib-metadata", "2.1.3", ["zipp>=0.5"])
    im = add("importlib-metadata", name, data)
    name, data = wheel_bytes("zipp", "0.4")
    zp = add("zipp", name, data)
    (root / "2018-keras-tf" / "requirements-gpu.txt").write_text(
        f"Markdown==3.2.2 --hash=sha256:{md}\nimportlib-metadata==2.1.3 --hash=sha256:{im}\n"
        f"zipp==0.4 --hash=sha256:{zp}\n")
    (problem,) = problems_of(root, idx)
    assert "needs zipp>=0.5" in problem and "the pin is zipp==0.4" in problem


def test_metadata_comes_from_byte_ranges_not_the_whole_wheel(index, tmp_path):
    add, idx = index
    name, data = wheel_bytes("big", "1.0")
    sha = add("big", name, data)
    Handler.ranges.clear()
    root = fake_images(tmp_path, f"big==1.0 --hash=sha256:{sha}\n")
    assert problems_of(root, idx) == []
    fetched = sum(hi - lo + 1 for path, lo, hi in Handler.ranges if path.endswith(name))
    assert 0 < fetched < len(data) / 2


def test_wheel_only_pins_without_a_compatible_file_and_python_requires(index, tmp_path):
    add, idx = index
    name, data = wheel_bytes("torch", "0.1.12.post2", tag="cp35-cp35m-linux_x86_64")
    add("torch", name, data)
    name, data = wheel_bytes("newer", "2.0", requires_python=">=3.6")
    nw = add("newer", name, data, ">=3.6")
    root = fake_images(tmp_path, f"torch==0.1.12.post2\nnewer==2.0 --hash=sha256:{nw}\n")
    found = problems_of(root, idx)
    assert any("torch==0.1.12.post2 has no file for CPython 3.5.2" in p for p in found)
    assert any("newer==2.0 has no file for" in p for p in found)


def test_an_sdist_needs_its_dependencies_written_beside_it(index, tmp_path):
    add, idx = index
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        info = tarfile.TarInfo("html5lib-0.9999999/PKG-INFO")
        body = b"Metadata-Version: 1.1\nName: html5lib\nVersion: 0.9999999\n"
        info.size = len(body)
        t.addfile(info, io.BytesIO(body))
    sha = add("html5lib", "html5lib-0.9999999.tar.gz", buf.getvalue())
    name, data = wheel_bytes("six", "1.10.0")
    six = add("six", name, data)
    root = fake_images(tmp_path, f"html5lib==0.9999999 --hash=sha256:{sha}  # sdist\n"
                                 f"six==1.10.0 --hash=sha256:{six}\n")
    (problem,) = problems_of(root, idx)
    assert "the sdist declares no dependencies" in problem
    (root / "2018-keras-tf" / "requirements-gpu.txt").write_text(
        f"html5lib==0.9999999 --hash=sha256:{sha}  # sdist; requires: six [V setup.py]\n"
        f"six==1.10.0 --hash=sha256:{six}\n")
    found = problems_of(root, idx)
    assert found == ["images/2018-keras-tf/requirements-gpu.txt: sdists are built in the image with "
                     "--no-index: pin setuptools",
                     "images/2018-keras-tf/requirements-gpu.txt: sdists are built in the image with "
                     "--no-index: pin wheel"]


def test_extra_files_are_checked_offline(index, tmp_path):
    add, idx = index
    name, data = wheel_bytes("numpy", "1.12.1")
    np_sha = add("numpy", name, data)
    url = "https://download.pytorch.org/whl/cu80/torch-0.1.12.post2-cp35-cp35m-linux_x86_64.whl"
    extra = [{"url": url, "sha256": None, "source": "recorded on first build",
              "requires": ["numpy", "pyyaml"]}]
    root = fake_images(tmp_path, f"numpy==1.12.1 --hash=sha256:{np_sha}\n", extra)
    report = wheelhouse.check_flavour("2018-keras-tf", "gpu", idx, root)
    assert report.problems == ["images/2018-keras-tf/requirements-gpu.txt: torch==0.1.12.post2 needs "
                               "pyyaml on Python 3.5.2, which is not pinned"]
    assert any("download.pytorch.org" in n for n in report.not_checked)
    extra[0]["url"] = url.replace("cp35-cp35m", "cp36-cp36m")
    root = fake_images(tmp_path / "b", f"numpy==1.12.1 --hash=sha256:{np_sha}\n", extra)
    assert any("do not install on CPython 3.5.2" in p for p in problems_of(root, idx))


def test_an_unreachable_index_fails_the_check(monkeypatch, capsys):
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    monkeypatch.setattr(wheelhouse, "INDEX", f"http://127.0.0.1:{port}/simple")
    monkeypatch.setattr(wheelhouse, "RETRIES", 1)
    assert wheelhouse.main(["--check", "--image", "2019-pytorch"]) == 2
    assert "the package index cannot be read" in capsys.readouterr().err


# -- the build fetches every file a recipe names -------------------------------------------------
def test_every_extra_file_is_installed_by_path_and_not_pinned_twice():
    for image in recipes.image_dirs(IMAGES):
        spec = recipes.load_recipe(image)["flavours"]["gpu"]
        extra = wheelhouse.extra_file_pins(spec)
        text = (IMAGES / image / "Dockerfile").read_text()
        for e in extra:
            assert f"/wheels/{e['filename']}" in text, (image, e["filename"])
            pins = wheelhouse.parse_requirements((IMAGES / image / spec["requirements"]).read_text())
            assert e["name"] not in {p.key for p in pins}
            assert e["sha256"] or "recorded on first build" in e["source"]


def test_the_build_fetches_extra_files_and_records_then_enforces_their_sha256(tmp_path):
    from reprokit.containers import images

    payload = tmp_path / "torch-0.1.12.post2-cp35-cp35m-linux_x86_64.whl"
    payload.write_bytes(b"not really a wheel")
    real = hashlib.sha256(payload.read_bytes()).hexdigest()
    root = fake_images(tmp_path, "numpy==1.12.1\n", [{"url": payload.as_uri(), "sha256": None,
                                                      "source": "recorded on first build",
                                                      "requires": []}], image="legacy-2017-pytorch")
    rec = images.recipe("legacy-2017-pytorch", root)
    say = []
    dest = tmp_path / "w1"
    dest.mkdir()
    (first,) = build.fetch_extra_files(rec, "gpu", dest, None, None, say.append)
    assert first["sha256"] == real and first["source"] == "recorded on first build"
    assert (dest / payload.name).read_bytes() == payload.read_bytes()
    dest = tmp_path / "w2"
    dest.mkdir()
    (second,) = build.fetch_extra_files(rec, "gpu", dest, None, {first["file"]: real}, say.append)
    assert second["source"] == "enforced: recorded by an earlier build"
    with pytest.raises(UserError, match="sha256 mismatch.*recorded by an earlier build"):
        build.fetch_extra_files(rec, "gpu", tmp_path, None, {first["file"]: "0" * 64}, say.append)
    house = tmp_path / "house"
    house.mkdir()
    with pytest.raises(UserError, match="has no torch-0.1.12.post2"):
        build.fetch_extra_files(rec, "gpu", dest, house, None, say.append)


# -- the real index ------------------------------------------------------------------------------
@pytest.mark.network
def test_every_gpu_wheelhouse_resolves_against_pypi():
    """Every GPU flavour, for its own interpreter, against https://pypi.org (metadata only)."""
    started = time.monotonic()
    idx = wheelhouse.Index()
    reports = wheelhouse.check(None, ("gpu",), index=idx)  # raises (fails) when PyPI is unreachable
    seconds = time.monotonic() - started
    assert {r.image for r in reports} == {d for d in recipes.image_dirs(IMAGES) if d != "smoke-python"}
    problems = [p for r in reports for p in r.problems]
    assert problems == []
    assert seconds < 180, f"took {seconds:.0f} s ({idx.requests} requests, {idx.bytes / 1e6:.0f} MB)"
    assert idx.bytes < 200e6  # metadata and small sdists only, never the multi-GB wheels
