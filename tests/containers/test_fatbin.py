"""The kit's fatbin reader (reprokit/containers/fatbin.py) against NVIDIA's own tools: fatbins made by
fatbinary from a PTX kernel and its sm_90 cubin, uncompressed, LZ4 (`--compress-mode=speed`, the
2017-2019 wheels' kind) and zstd (`--compress-mode=size`), read by the kit and listed by cuobjdump.
Then the audit of a wheel made of them, end to end (audit-binaries with a local wheel)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from reprokit.containers import binary_audit, fatbin

REPO = Path(__file__).resolve().parents[2]
KERNEL = """.version 7.0
.target sm_75
.address_size 64

.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .b64 \t%rd<3>;
\t.reg .f32 \t%f<2>;
\tld.param.u64 \t%rd1, [k_param_0];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tmov.f32 \t%f1, 0f3F800000;
\tst.global.f32 \t[%rd2], %f1;
\tret;
}
"""
MODES = {"none": None, "speed": "lz4", "size": "zstd"}


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    """One fatbin per compression mode, each holding compute_75 PTX and an sm_90 cubin."""
    where = tmp_path_factory.mktemp("fatbin")
    cache = REPO / "results" / "binary-audit"
    ptxas, fat = binary_audit.cuda_tool("ptxas", cache), binary_audit.cuda_tool("fatbinary", cache)
    (where / "k.ptx").write_text(KERNEL)
    subprocess.run([ptxas, "-arch=sm_90", "-o", str(where / "k.cubin"), str(where / "k.ptx")], check=True,
                   capture_output=True, timeout=120)
    out = {}
    for mode in MODES:
        path = where / f"{mode}.fatbin"
        flags = ["--compress=false"] if mode == "none" else ["--compress=true", f"--compress-mode={mode}"]
        subprocess.run([fat, f"--create={path}", *flags, f"--image3=kind=ptx,sm=75,file={where / 'k.ptx'}",
                        f"--image3=kind=elf,sm=90,file={where / 'k.cubin'}"], check=True,
                       capture_output=True, timeout=120)
        out[mode] = path
    return out


def test_the_reader_finds_each_entry_and_decompresses_the_ptx(made):
    for mode, how in MODES.items():
        found = fatbin.entries(made[mode])
        assert [(e.kind, e.arch) for e in found] == [(fatbin.PTX, 75), (fatbin.ELF, 90)], (mode, found)
        assert found[0].compression == how, (mode, found[0])
        text = fatbin.ptx_text(made[mode], found[0])
        # fatbinary keeps the PTX but not its tabs
        assert " ".join(text.split()) == " ".join(KERNEL.split()), (mode, text)
        assert fatbin.archs(found, fatbin.ELF) == ["9.0"] and fatbin.archs(found, fatbin.PTX) == ["7.5"]


@pytest.mark.network
def test_the_reader_agrees_with_cuobjdump(made):
    """cuobjdump 13 (PyPI's nvidia-cuda-cuobjdump) lists what the reader reads, for each mode."""
    cuobjdump = binary_audit.cuda_tool("cuobjdump", REPO / "results" / "binary-audit")
    for mode, path in made.items():
        listing = subprocess.run([cuobjdump, "-lelf", "-lptx", str(path)], capture_output=True, text=True,
                                 timeout=120, check=True).stdout
        theirs = sorted((1 if kind == "PTX" else 2, int(sm)) for kind, sm in
                        re.findall(r"^(PTX|ELF) file\s+\d+: \S+\.sm_(\d+)\.(?:ptx|cubin)$", listing, re.M))
        assert theirs == sorted((e.kind, e.arch) for e in fatbin.entries(path)), (mode, listing)


def test_not_a_fatbin_and_a_torn_one_read_as_none(made, tmp_path):
    data = made["none"].read_bytes()
    (tmp_path / "torn").write_bytes(data[: len(data) // 2])  # the header says more than there is
    assert fatbin.entries(tmp_path / "torn") == []
    (tmp_path / "text").write_bytes(b"no device code here" * 100)
    assert fatbin.entries(tmp_path / "text") == []


def test_how_a_gpu_runs_each_module_is_the_drivers_choice():
    """SASS of the GPU's major version at or below it runs as it is; else the highest PTX at or below
    the GPU is JIT-compiled; else the module cannot run (EasyBuild's CUDA sanity check, #5008)."""
    def e(module, kind, arch):
        return fatbin.Entry(module, kind, arch, 0, 0, None, 0)

    found = [e(0, fatbin.ELF, 80), e(0, fatbin.ELF, 90), e(0, fatbin.PTX, 90),  # native on 9.0
             e(1, fatbin.ELF, 80), e(1, fatbin.PTX, 75), e(1, fatbin.PTX, 80),  # JIT from compute_80
             e(2, fatbin.ELF, 100), e(2, fatbin.PTX, 120),  # 10.0 only: neither on 9.0
             e(3, fatbin.ELF, 86)]  # 8.6 only
    native, jit, none = fatbin.runs_on(found, 90)
    assert native == {0} and [(x.fatbin, x.arch) for x in jit] == [(1, 80)] and none == {2, 3}
    native, jit, none = fatbin.runs_on(found, 100)
    assert native == {2} and [(x.fatbin, x.arch) for x in jit] == [(0, 90), (1, 80)] and none == {3}
    native, jit, none = fatbin.runs_on(found, 89)  # 8.9 runs 8.0 and 8.6 cubins: same major, lower minor
    assert native == {0, 1, 3} and jit == [] and none == {2}


def test_an_audit_of_a_wheel_records_its_code_and_that_its_ptx_compiles(made, tmp_path):
    """A wheel holding the LZ4 fatbin twice (two modules, as a framework library has hundreds), audited
    through the command: SASS 9.0, PTX 7.5: an sm_90 GPU runs both modules' cubins, an sm_100 GPU
    JIT-compiles both from their PTX, which compiles."""
    blob = made["speed"].read_bytes()
    wheels = tmp_path / "cache" / "wheels"
    wheels.mkdir(parents=True)
    wheel = wheels / "standin_gpu-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("standin/libkernels.so", b"\x7fELF" + b"\0" * 60 + blob + b"\0" * 8 + blob)
        z.writestr("standin/__init__.py", "")
    tools = binary_audit.find_tools(REPO / "results" / "binary-audit")
    entry = {"fetch": {"requirement": "standin-gpu==1.0", "files": ["standin/*.so"]}}
    rec = binary_audit.audit_binary("standin", entry, tools, tmp_path / "cache", ["sm_90", "sm_100"], 60.0,
                                    say=lambda m: None)
    assert rec["sass"] == ["9.0"] and rec["ptx"] == ["7.5"], rec
    (f,) = rec["files"]
    assert f["modules"] == f["modules_with_ptx"] == 2
    native = rec["ptx_compile"]["sm_90"]
    assert native["native"] == 2 and native["modules"] == native["compiled"] == 0 and native["covered"]
    c = rec["ptx_compile"]["sm_100"]
    assert c["native"] == 0 and c["other_archs"] == 0
    assert c["compiled"] == c["modules"] == 2 and c["failed"] == 0 and c["kernels"] == 2, c
    assert c["complete"] and c["all_compile"] and c["covered"]
    from reprokit import validate

    doc = {"schema_version": 1, "kind": "binary_audit",
           "audits": {"standin": {**rec, "command": "test", "tools": tools.versions()}}}
    assert validate.errors("binary_audit", doc) == []
    bad = json.loads(json.dumps(doc))
    bad["audits"]["standin"]["sass"] = ["sm_90"]
    assert validate.errors("binary_audit", bad) != []


def test_an_images_wheelhouse_is_audited_library_by_library(made, tmp_path):
    """`audit-binaries --image DIR --wheelhouse W`: every pin of the image's GPU requirement file found
    in W, every shared library with device code audited, wheels without any left out; the image passes
    for an architecture when every module runs there. A pin missing from W is one line, exit 2."""
    import hashlib

    import yaml

    blob = made["speed"].read_bytes()
    house = tmp_path / "house"
    house.mkdir()
    with zipfile.ZipFile(house / "standin_gpu-1.0-py3-none-any.whl", "w") as z:
        z.writestr("standin/lib/libk.so.1", b"\x7fELF" + b"\0" * 60 + blob)
        z.writestr("standin/lib/notes.txt", blob)  # not a shared library: not read
    with zipfile.ZipFile(house / "plain-2.0-py3-none-any.whl", "w") as z:
        z.writestr("plain/_c.so", b"\x7fELF" + b"\0" * 600)  # a library without device code
    reqs = "".join(f"{n}=={v} --hash=sha256:{hashlib.sha256((house / w).read_bytes()).hexdigest()}\n"
                   for n, v, w in (("standin-gpu", "1.0", "standin_gpu-1.0-py3-none-any.whl"),
                                   ("plain", "2.0", "plain-2.0-py3-none-any.whl")))
    images_dir = tmp_path / "images"
    shutil.copytree(REPO / "images" / "_blocks", images_dir / "_blocks")
    (images_dir / "img").mkdir()
    doc = yaml.safe_load((REPO / "images" / "smoke-python" / "recipe.yaml").read_text())
    doc.update(image="img", tag="reprokit/img:{flavour}", context="images/img")
    doc["flavours"]["gpu"]["requirements"] = "requirements-gpu.txt"
    (images_dir / "img" / "recipe.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    (images_dir / "img" / "requirements-gpu.txt").write_text(reqs)
    (images_dir / "img" / "Dockerfile").write_text("FROM reprokit/base:bookworm\n")
    out = tmp_path / "audit.json"
    env = {**os.environ, "REPROKIT_IMAGES_DIR": str(images_dir)}
    cmd = [sys.executable, str(REPO / "reproduce.py"), "audit-binaries", "--image", "img", "--wheelhouse",
           str(house), "--write", str(out), "--arch", "sm_90,sm_100"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    assert "sm_90 passes, sm_100 passes" in p.stdout
    rec = json.loads(out.read_text())["images"]["img:gpu"]
    assert [w["wheel"] for w in rec["wheels"]] == ["standin_gpu-1.0-py3-none-any.whl"]
    assert [f["file"] for f in rec["wheels"][0]["files"]] == ["standin/lib/libk.so.1"]
    assert rec["ptx_compile"]["sm_90"]["native"] == 1 and rec["ptx_compile"]["sm_100"]["compiled"] == 1
    (house / "plain-2.0-py3-none-any.whl").unlink()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 2 and "has no wheel of plain==2.0" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_a_file_with_no_code_for_the_gpu_fails_its_check_unless_it_defines_no_kernel(made, tmp_path):
    """A library whose only module is an sm_75 cubin has nothing an sm_90 GPU runs: not covered. An
    empty module (a cubin without functions, as libcufftw's) has nothing to run: covered."""
    cache = REPO / "results" / "binary-audit"
    ptxas, fat = binary_audit.cuda_tool("ptxas", cache), binary_audit.cuda_tool("fatbinary", cache)
    tools = binary_audit.find_tools(cache)
    (tmp_path / "empty.ptx").write_text(".version 7.0\n.target sm_75\n.address_size 64\n")
    (tmp_path / "k.ptx").write_text(KERNEL)
    got = {}
    for name in ("empty", "k"):
        subprocess.run([ptxas, "-arch=sm_75", "-o", str(tmp_path / f"{name}.cubin"),
                        str(tmp_path / f"{name}.ptx")], check=True, capture_output=True, timeout=120)
        subprocess.run([fat, f"--create={tmp_path / name}.fatbin", "--compress=false",
                        f"--image3=kind=elf,sm=75,file={tmp_path / name}.cubin"], check=True,
                       capture_output=True, timeout=120)
        lib = tmp_path / f"lib{name}.so"
        lib.write_bytes(b"\x7fELF" + b"\0" * 60 + (tmp_path / f"{name}.fatbin").read_bytes())
        per = binary_audit.audit_file(lib, lib.name, tools, ["sm_90"], 60.0, say=lambda m: None)
        got[name] = binary_audit.sums([per], ["sm_90"])["sm_90"]
    assert got["empty"]["other_archs"] == 1 and got["empty"]["covered"]
    assert got["k"]["other_archs"] == 1 and not got["k"]["covered"]


def test_the_command_refuses_an_unknown_or_unfetchable_binary():
    for argv, said in ((["--binary", "no-such"], "unknown binary 'no-such'"),
                       (["--binary", "cudnn-6.0.21"], "has no `fetch`"),
                       (["--image", "modern"], "needs --wheelhouse DIR"),
                       (["--arch", "90"], "give architectures as sm_NN")):
        p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), "audit-binaries", *argv],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and said in p.stderr and len(p.stderr.strip().splitlines()) == 1, \
            (argv, p.stderr)
