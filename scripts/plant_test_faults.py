"""Show that six tests which once passed or skipped vacuously now fail when what they test is gone.

Six tests could not fail: a `pytest.importorskip` of the kit's own module, early
returns and skips when a file or directory was missing, and an `except Exception` turned into a skip.
They were rewritten; this script runs each one in a copy of the working tree (git ls-files, so
nothing untracked), first unchanged (it must pass, not skip), then with the fault it must catch
planted (it must fail), and prints both outcomes and the failure's first error line.
The copy is removed afterwards; this tree is never touched.

    python scripts/plant_test_faults.py          # all six; exit 1 if any test did not fail

Every fault is a one-line edit or a removal, named in the output beside pytest's last line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _break_import(path: str):
    def plant(root: Path) -> None:
        f = root / path
        f.write_text(f.read_text() + "\nraise ImportError('planted: this module is broken')\n")
    return plant


def _remove(path: str):
    def plant(root: Path) -> None:
        target = root / path
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    return plant


def _no_dockerfiles(root: Path) -> None:
    for f in (root / "images").glob("*/Dockerfile"):
        f.unlink()


def _engine_client_raises(root: Path) -> None:
    f = root / "reprokit" / "containers" / "engine.py"
    text = f.read_text()
    marker = "def client("
    head, tail = text.split(marker, 1)
    sig, body = tail.split("\n", 1)
    # an unexpected error inside the client (not "no engine answers"): the old test skipped on it
    f.write_text(head + marker + sig + "\n    raise TypeError('planted: the Docker SDK changed')\n" + body)


FAULTS = [
    ("tests/analysis/test_roofline.py::test_publication_device_carries_bandwidth",
     "reprokit/analysis/devices.py fails to import", _break_import("reprokit/analysis/devices.py")),
    ("tests/analysis/test_cpus.py::test_devices_use_cpus",
     "reprokit/analysis/devices.py fails to import", _break_import("reprokit/analysis/devices.py")),
    ("tests/analysis/test_cpus.py::test_sample_run_fingerprint",
     "docs/sample-run is gone", _remove("docs/sample-run")),
    ("tests/containers/test_images_build.py::test_every_recipe_builds_args_the_kit_passes",
     "no images/*/Dockerfile", _no_dockerfiles),
    ("tests/report/test_rerun_coverage.py::test_the_packaged_measurement_is_valid_and_quoted",
     "reprokit/data/rerun_coverage.json is gone", _remove("reprokit/data/rerun_coverage.json")),
    ("tests/catalog/test_data_command.py::test_docker_runner_mounts_the_data_read_only",
     "the Docker client raises an unexpected TypeError", _engine_client_raises),
]


def copy_tree(dest: Path) -> None:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, names.decode().split("\0")):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def run_one(test: str, plant) -> tuple[str, str, str]:
    """(outcome, pytest's last line, the first error line) of `test` in a copy of the tree, with
    `plant` applied (None: the control, unchanged)."""
    with tempfile.TemporaryDirectory(prefix="reprokit-plant-") as tmp:
        root = Path(tmp)
        copy_tree(root)
        if plant:
            plant(root)
        env = dict(os.environ, PYTHONPATH=str(root), REPROKIT_DATA_CACHE="")
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "-n", "0", test], cwd=root, env=env,
                              capture_output=True, text=True, timeout=900)
        lines = proc.stdout.strip().splitlines() or ["(no output)"]
        why = next((ln[1:].strip() for ln in lines if ln.startswith("E ")), "")
        failed = proc.returncode == 1 and " failed" in lines[-1]
        passed = proc.returncode == 0 and " passed" in lines[-1] and "skipped" not in lines[-1]
        return ("FAILED" if failed else "passed" if passed else "neither"), lines[-1], why


def main() -> int:
    bad = 0
    for test, fault, plant in FAULTS:
        control, control_last, _ = run_one(test, None)
        outcome, last, why = run_one(test, plant)
        ok = control == "passed" and outcome == "FAILED"
        bad += not ok
        print(f"{'ok' if ok else 'NOT SHOWN':10s} {test}\n{'':10s} unchanged: {control_last}\n"
              f"{'':10s} planted {fault}: {last}\n{'':10s} {why[:160]}", flush=True)
    print(f"{len(FAULTS) - bad} of {len(FAULTS)} tests pass unchanged and fail on their planted fault")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
