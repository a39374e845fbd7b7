"""An image file's identity (reprokit/containers/image_files.py): its sha256, hashed once per version of
the file, and the images a Slurm container launcher's GPU run is gated by (slurm_setup.launcher_images)."""

import hashlib
import os
from types import SimpleNamespace

import pytest

from reprokit.catalog import suites
from reprokit.containers import image_files
from reprokit.containers.images import alias_tag
from reprokit.runners import slurm_setup
from reprokit.runners.launchers import ApptainerLauncher, LocalLauncher, PyxisLauncher


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = tmp_path / "ids.json"
    monkeypatch.setenv(image_files.CACHE_ENV, str(path))
    return path


def test_the_id_is_the_files_sha256_hashed_once_per_version(tmp_path, store, monkeypatch):
    sif = tmp_path / "a.sif"
    sif.write_bytes(b"SIF" * 1000)
    want = "sha256:" + hashlib.sha256(b"SIF" * 1000).hexdigest()
    assert image_files.file_id(sif) == want and store.exists()
    real_sha = image_files.file_sha256
    monkeypatch.setattr(image_files, "file_sha256", lambda *a: pytest.fail("hashed again"))
    assert image_files.file_id(tmp_path / "." / "a.sif") == want  # same real path, same stamp: cached
    monkeypatch.setattr(image_files, "file_sha256", real_sha)
    sif.write_bytes(b"XYZ" * 1000)  # same size, new content and modification time
    os.utime(sif, ns=(1, 1))
    assert image_files.file_id(sif) == "sha256:" + hashlib.sha256(b"XYZ" * 1000).hexdigest()


def test_an_unreadable_store_is_hashed_again_and_a_missing_file_is_oserror(tmp_path, store):
    sif = tmp_path / "a.sif"
    sif.write_bytes(b"x")
    store.write_text("{not json")
    assert image_files.file_id(sif) == "sha256:" + hashlib.sha256(b"x").hexdigest()
    with pytest.raises(OSError):
        image_files.file_id(tmp_path / "nothere.sif")


def _runner(launcher):
    return SimpleNamespace(name="slurm", launcher=launcher)


def test_launcher_images_of_a_gpu_run_are_the_cells_image_files(tmp_path, store):
    """tf-1.2's cells: its image file hashed; its fallback link tf-modern's file missing; nothing else
    of the registry looked at."""
    cells = [c for c in suites.load_suite("legacy-2017").cells if c.stack == "tf-1.2"][:2]
    stacks = suites.load_stacks()
    image = stacks["tf-1.2"]["image"]
    (tmp_path / f"{image}-gpu.sif").write_bytes(b"tf-1.2 sif")
    got = slurm_setup.launcher_images(_runner(ApptainerLauncher(str(tmp_path), "gpu")), cells, "gpu")
    assert got["launcher"] == "apptainer"
    assert got["images"][alias_tag(image, "gpu")] == {
        "present": True, "image_id": "sha256:" + hashlib.sha256(b"tf-1.2 sif").hexdigest()}
    assert got["images"][alias_tag(stacks["tf-modern"]["image"], "gpu")] == "missing"
    assert set(got["images"]) == {alias_tag(stacks[s]["image"], "gpu") for s in ("tf-1.2", "tf-modern")}
    # pyxis reads .sqsh files; a CPU run, another runner and the local launcher need none
    assert slurm_setup.launcher_images(_runner(PyxisLauncher(str(tmp_path), "gpu")), cells, "gpu")[
        "images"][alias_tag(image, "gpu")] == "missing"
    assert slurm_setup.launcher_images(_runner(ApptainerLauncher(str(tmp_path), "gpu")), cells, "cpu") == {}
    assert slurm_setup.launcher_images(SimpleNamespace(name="docker"), cells, "gpu") == {}
    assert slurm_setup.launcher_images(_runner(LocalLauncher(say=lambda m: None)), cells, "gpu") == {}
