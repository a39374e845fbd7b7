"""Which libcuda a GPU cell loaded (bench/driver_load.py) and preflight's glibc check, with stand-in
driver libraries built here by gcc: no NVIDIA driver has been available to these tests. The stand-ins
are real ELF shared objects that the real loader maps and refuses, so the parsing of .gnu.version_r
and the load test run for real; only the driver is a stand-in."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import files
from reprokit.plan import compat, preflight
from reprokit.probes import fingerprint

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))  # record() imports gpu_runtime beside it, as in a stack
load = files.bench_module("driver_load")

# arc4random is versioned GLIBC_2.36 (new in glibc 2.36), so the stand-in needs the C library of
# this machine (Debian 12: glibc 2.36) and nothing newer
SOURCE = "#include <stdlib.h>\nunsigned int cuDriverGetVersion_standin(void) { return arc4random(); }\n"


@pytest.fixture(scope="module")
def standin(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed to build the stand-in driver library (scripts/test.sh installs it)")
    where = tmp_path_factory.mktemp("driver")
    (where / "standin.c").write_text(SOURCE)
    lib = where / "libcuda.so.999.12.3"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(where / "standin.c")], check=True,
                   capture_output=True, timeout=120)
    return lib


def _future(standin: Path, where: Path) -> Path:
    """The stand-in as built against a glibc 2.99: its requirement's name rewritten in .dynstr (same
    length; the loader then finds no such version in this C library and refuses the file)."""
    data = standin.read_bytes()
    assert b"GLIBC_2.36" in data, "the stand-in should require GLIBC_2.36"
    out = where / "libcuda.so.999.12.3"
    out.write_bytes(data.replace(b"GLIBC_2.36", b"GLIBC_2.99"))
    (where / "libcuda.so.1").symlink_to(out.name)
    return out


def _maps(tmp_path: Path, *paths: Path) -> Path:
    m = tmp_path / "maps"
    m.write_text("".join(f"7f0000000000-7f0000001000 r-xp 00000000 08:01 1 {p}\n" for p in paths))
    return m


def test_glibc_needs_reads_the_version_requirements_of_a_real_shared_object(standin):
    needs = load.glibc_needs(str(standin))
    assert needs[-1] == "2.36" and all(load.version_tuple(v) for v in needs), needs
    with pytest.raises(ValueError):
        load.glibc_needs(__file__)  # not ELF


def test_the_record_of_a_mapped_driver_names_its_file_version_and_glibc_fit(standin, tmp_path):
    compat_dir = tmp_path / "usr" / "local" / "cuda" / "compat"
    compat_dir.mkdir(parents=True)
    shutil.copy(standin, compat_dir / standin.name)
    for path, is_compat in ((standin, False), (compat_dir / standin.name, True)):
        rec = load.record(maps_path=str(_maps(tmp_path, path)), environ={"NVIDIA_VISIBLE_DEVICES": "all",
                                                                        "HOME": "/root"},
                          kernel_module_path=str(tmp_path / "absent"))
        assert rec["libcuda"] == str(path) and rec["driver_version"] == "999.12.3", rec
        assert rec["loaded_by"] == "the workload" and rec["compat"] is is_compat
        assert rec["compat_libraries"] == ([str(path)] if is_compat else [])
        assert rec["glibc"] == load.glibc_version() and rec["glibc_needed"] == "2.36"
        assert rec["glibc_ok"] is True and rec["load_error"] is None
        assert rec["nvidia_env"] == {"NVIDIA_VISIBLE_DEVICES": "all"}  # the toolkit's variables only


def test_the_load_test_says_why_a_driver_built_for_a_newer_glibc_does_not_load(standin, tmp_path):
    future = _future(standin, tmp_path)
    assert load.glibc_needs(str(future))[-1] == "2.99"
    code = ("import json, sys; sys.path.insert(0, %r); import driver_load; "
            "print(json.dumps(driver_load.record(maps_path=%r)))" % (str(REPO / "bench"),
                                                                      str(_maps(tmp_path))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"LD_LIBRARY_PATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=True)
    rec = json.loads(out.stdout)
    # nothing mapped, and the loader refuses libcuda.so.1 with the missing version in its error
    assert rec["libcuda"] is None and rec["loaded_by"] is None, rec
    assert "libcuda.so.1 not loadable" in rec["load_error"] and "GLIBC_2.99" in rec["load_error"], rec


def test_a_cell_result_with_the_record_is_valid(standin, tmp_path):
    from reprokit import validate

    rec = load.record(maps_path=str(_maps(tmp_path, standin)))
    doc = json.loads((REPO / "tests" / "data" / "runs" / "smoke-current" / "cells").glob("*.json")
                     .__next__().read_text())
    from reprokit import formats

    doc = formats.upgrade("cell_result", doc, "a stored cell")  # to the version with driver_load
    doc.setdefault("stack_fingerprint", {})["driver_load"] = rec
    assert validate.errors("cell_result", doc) == []
    doc["stack_fingerprint"]["driver_load"] = {"error": "RuntimeError: boom"}
    assert validate.errors("cell_result", doc) == []


def test_the_host_fingerprint_reads_the_drivers_glibc_need(standin, tmp_path):
    """The host side reads the same libraries the toolkit would inject (here: the stand-in, found by
    its mapping after loading it by path)."""
    got = fingerprint.driver_libraries((str(standin),), str(_maps(tmp_path, standin)))
    assert got["libraries"][str(standin)] == {"path": str(standin), "glibc_needed": "2.36"}
    assert got["glibc_needed"] == "2.36"
    missing = fingerprint.driver_libraries(("libcuda-not-here.so.1",))
    assert missing["glibc_needed"] is None and "error" in missing["libraries"]["libcuda-not-here.so.1"]


def _h100(glibc_needed: str | None) -> dict:
    """The stored H100 fingerprint of docs/gpu-run (which recorded no driver libraries: the stand-in
    requirement is added here)."""
    fp = json.loads((REPO / "docs" / "gpu-run" / "fingerprint.json").read_text())
    fp["nvidia"]["driver_libraries"] = {"libraries": {}, "glibc_needed": glibc_needed}
    return fp


def test_preflight_warns_when_an_images_glibc_is_older_than_the_hosts_driver_needs():
    c = compat.load_compat()
    legacy, modern = (compat.stack_from_compat(s, c, needs_gpu=True) for s in ("torch-1.3", "torch-modern"))
    assert legacy["image_glibc"] == "2.27" and modern["image_glibc"] == "2.36"  # distros.yaml
    host = preflight.host_from_fingerprint(_h100("2.34"), engine_present=True,
                                           images={legacy["image"]: "present", modern["image"]: "present"})
    old = preflight.check_cell(legacy, host, 1, runner="docker", compat=c)
    (check,) = [x for x in old["checks"] if x["name"] == "glibc"]
    assert "glibc 2.27, below 2.34" in check["detail"]
    assert any("glibc 2.27 is older than the 2.34" in r for r in old["reasons"]), old["reasons"]
    new = preflight.check_cell(modern, host, 1, runner="docker", compat=c)
    assert not any("glibc" in r for r in new["reasons"]), new["reasons"]
    # unknown need (a fingerprint from before it was recorded), or the local runner: no glibc check
    unknown = preflight.host_from_fingerprint(_h100(None), engine_present=True,
                                              images={legacy["image"]: "present"})
    assert not [x for x in preflight.check_cell(legacy, unknown, 1, runner="docker", compat=c)["checks"]
                if x["name"] == "glibc"]
    local = preflight.check_cell(legacy, host, 1, runner="local", compat=c)
    assert not [x for x in local["checks"] if x["name"] == "glibc"]
