"""Which GPU architectures a stack's CUDA binaries carry code for, read from the binaries themselves.

`reproduce.py audit-binaries` takes every binary of compat.yaml that says where a public registry serves
it (`fetch`: a pip requirement for a target interpreter and platform, and the files in the wheel that
hold device code), downloads the wheel (pip download, cached), and for each of those files:

- lists its device code (reprokit/containers/fatbin.py reads the fatbins: NVIDIA's cuobjdump from
  PyPI refuses files with sm_30 code): the SASS architectures (ELF cubins) and PTX versions
  (compute_XX), and the modules (fatbins);
- for every requested architecture, says how its GPU runs each module (reprokit/containers/fatbin.py
  runs_on: SASS of its major version at or below it, "native"; else its highest PTX at or below it,
  JIT-compiled; else "other_archs"), and compiles the PTX to JIT with ptxas (`-arch=sm_90 -o
  /dev/null`, whole-program as the driver loads a module, then `-c`, a relocatable object, so a
  module of separately compiled code whose externs resolve at the link, as NCCL's in TensorFlow 2.0,
  is not counted as failing): compiles yes/no, the kernels
  (`.entry`) and the compile seconds, which is the JIT cost a first start on that GPU pays (the
  driver's JIT compiles the same PTX; the seconds are this machine's CPU's), within a time limit per
  architecture (`complete` false when it ran out).

The records go to reprokit/data/binary_audit.json (schema binary_audit), with the command, the date,
the tools' versions and the wheel's sha256; compat.yaml's `binaries:` entries cite them (evidence V)
and tests/containers/test_binary_audit.py keeps the two equal. Binaries nothing here can fetch
(cuDNN and cuBLAS from NVIDIA's repositories, torch 0.1 from download.pytorch.org) keep their own
evidence, with the reason.

ptxas comes from PATH or PyPI's nvidia-cuda-nvcc wheel.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprokit.containers import fatbin
from reprokit.containers.images import file_sha256
from reprokit.errors import UserError

TOOL_WHEELS = {"ptxas": "nvidia-cuda-nvcc", "fatbinary": "nvidia-cuda-nvcc", "nvcc": "nvidia-cuda-nvcc",
               "cuobjdump": "nvidia-cuda-cuobjdump"}  # PyPI wheels that carry NVIDIA's CUDA tools


@dataclass(frozen=True)
class Tools:
    ptxas: str

    def versions(self) -> dict[str, str]:
        out = subprocess.run([self.ptxas, "--version"], capture_output=True, text=True, timeout=60).stdout
        m = re.search(r"release \S+, V(\S+)", out)
        return {"ptxas": m.group(1) if m else "unknown", "reader": "reprokit/containers/fatbin.py"}


def cuda_tool(name: str, cache: Path) -> str:
    """A CUDA tool (ptxas, fatbinary, cuobjdump): from PATH, else from the PyPI wheel that carries it,
    fetched into `cache`; one line naming what is missing and the fix otherwise."""
    path = shutil.which(name)
    if path:
        return path
    wheel = TOOL_WHEELS[name]
    where = cache / "tools" / wheel
    hits = sorted(where.rglob(f"bin/{name}")) if where.is_dir() else []
    if not hits:
        where.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                               "--only-binary=:all:", wheel, "-d", str(where)],
                              capture_output=True, text=True, timeout=1800)
        for whl in where.glob("*.whl"):
            with zipfile.ZipFile(whl) as z:
                z.extractall(where / "x")
        hits = sorted(where.rglob(f"bin/{name}"))
        if not hits:
            raise UserError(f"{name} not found on PATH and PyPI's {wheel} wheel gave none "
                            f"({proc.stderr.strip()[-200:] or 'no error'}); install the CUDA toolkit's "
                            f"{name} or make PyPI reachable")
    for hit in hits[0].parent.iterdir():  # a wheel keeps no file modes
        hit.chmod(0o755)
    return str(hits[0])


def find_tools(cache: Path) -> Tools:
    return Tools(ptxas=cuda_tool("ptxas", cache))


def fetch(spec: dict[str, Any], cache: Path) -> Path:
    """The wheel of a binary's `fetch` spec (pip download for its interpreter and platform), cached."""
    cache.mkdir(parents=True, exist_ok=True)
    name, version = spec["requirement"].split("==")
    prefix = f"{name.lower().replace('-', '_')}-{version}-"
    have = [w for w in cache.glob("*.whl") if w.name.lower().startswith(prefix)]
    if have:
        return have[0]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
           spec["requirement"], "-d", str(cache)]
    for flag in ("python_version", "implementation", "abi", "platform"):
        if spec.get(flag):
            cmd += [f"--{flag.replace('_', '-')}", str(spec[flag])]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    have = [w for w in cache.glob("*.whl") if w.name.lower().startswith(prefix)]
    if proc.returncode or not have:
        raise UserError(f"pip could not download {spec['requirement']} ({proc.stderr.strip()[-300:]}); "
                        "make the registry reachable, or leave the binary out with --binary")
    return have[0]


def compile_ptx(tools: Tools, path: Path, found: list[fatbin.Entry], archs: list[str],
                limit_s: float) -> dict[str, Any]:
    """Per arch in `archs` ('sm_90'): how its GPU runs each module (fatbin.runs_on), and the PTX it must
    JIT-compile, compiled by ptxas within `limit_s` seconds: {arch: {native, other_archs, modules (to
    JIT), compiled, failed, kernels, seconds, complete, errors}}."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="reprokit-ptx-") as tmp:
        for arch in archs:
            native, modules, other_archs = fatbin.runs_on(found, int(arch.split("_")[1].rstrip("af")))
            rec = {"native": len(native), "other_archs": len(other_archs), "modules": len(modules),
                   "compiled": 0, "failed": 0, "kernels": 0, "seconds": 0.0, "complete": True, "errors": []}
            for entry in modules:
                if rec["seconds"] > limit_s:
                    rec["complete"] = False
                    break
                text = fatbin.ptx_text(path, entry)
                ptx = Path(tmp) / f"m{entry.fatbin}.ptx"
                ptx.write_text(text)
                t0 = time.monotonic()
                # whole-program first, as the driver JIT-compiles a module it loads (a kernel with a
                # register cap may call a function needing more: only a relocatable compile refuses
                # that); then -c, a relocatable object, as it compiles a module of separately compiled
                # code (NCCL's) before linking it: its extern symbols resolve at the link
                for flags in ([], ["-c"]):
                    run = subprocess.run([tools.ptxas, *flags, f"-arch={arch}", "-o", os.devnull, str(ptx)],
                                         capture_output=True, text=True, timeout=max(600.0, limit_s))
                    if run.returncode == 0:
                        break
                rec["seconds"] += time.monotonic() - t0
                if run.returncode == 0:
                    rec["compiled"] += 1
                    rec["kernels"] += len(re.findall(r"^\s*(?:\.(?:visible|weak)\s+)?\.entry\s", text, re.M))
                else:
                    rec["failed"] += 1
                    if len(rec["errors"]) < 3:
                        rec["errors"].append(f"module {entry.fatbin} (compute_{entry.arch}): "
                                             f"{run.stderr.strip()[-200:]}")
            rec["seconds"] = round(rec["seconds"], 2)
            out[arch] = rec
    return out


def audit_file(path: Path, name: str, tools: Tools, archs: list[str], limit_s: float, say,
               found: list[fatbin.Entry] | None = None) -> dict[str, Any]:
    """The record of one file's device code (deleted after): its SASS and PTX, and per arch how its
    GPU runs each module, the PTX to JIT compiled (compile_ptx). `found`: its entries, if read."""
    found = fatbin.entries(path) if found is None else found
    info = {"sass": fatbin.archs(found, fatbin.ELF), "ptx": fatbin.archs(found, fatbin.PTX),
            "modules": len({e.fatbin for e in found}),
            "modules_with_ptx": len({e.fatbin for e in found if e.kind == fatbin.PTX})}
    per = {"file": name, "bytes": path.stat().st_size, **info}
    if found and archs:
        per["compile"] = compile_ptx(tools, path, found, archs, limit_s)
        for c in per["compile"].values():  # nothing the arch runs: is there anything to run at all?
            if c["native"] + c["modules"] == 0:
                c["kernelless"] = not fatbin.has_kernels(path, found)
    said = "".join(f"; {a}: {c['native']} modules native, {c['compiled']}/{c['modules']} to JIT "
                   f"compile ({c['kernels']} kernels, {c['seconds']:.0f} s"
                   f"{'' if c['complete'] else ', time limit'}), {c['other_archs']} for other archs only"
                   for a, c in (per.get("compile") or {}).items())
    say(f"  {name}: SASS {', '.join(info['sass']) or 'none'}; PTX {', '.join(info['ptx']) or 'none'}{said}")
    path.unlink()
    return per


def sums(files_out: list[dict[str, Any]], archs: list[str]) -> dict[str, dict[str, Any]]:
    """Per arch, the files' compile records added up; `all_compile`: every PTX to JIT compiled, none
    left by the time limit; `covered`: every file has code the architecture runs (native SASS, or PTX
    to JIT), EasyBuild's CUDA sanity check per file (easybuild-framework #5008), or defines no kernel
    at all (`kernelless`: an empty module, as libcufftw's, has nothing to run)."""
    compiled: dict[str, dict[str, Any]] = {}
    for arch in archs:
        per_file = [f["compile"][arch] for f in files_out if "compile" in f]
        compiled[arch] = {k: sum(c[k] for c in per_file)
                          for k in ("native", "other_archs", "modules", "compiled", "failed", "kernels")}
        compiled[arch].update(seconds=round(sum(c["seconds"] for c in per_file), 2),
                              complete=all(c["complete"] for c in per_file),
                              all_compile=bool(per_file) and all(c["complete"] and not c["failed"]
                                                                 for c in per_file),
                              covered=bool(per_file) and all(c["native"] + c["modules"] > 0
                                                             or c.get("kernelless") for c in per_file))
    return compiled


def _shared_library(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base.endswith(".so") or ".so." in base


def audit_wheelhouse(image_dir: str, flavour: str, wheelhouse: Path, tools: Tools, archs: list[str],
                     limit_s: float, say=print) -> dict[str, Any]:
    """The audit of an image flavour's wheelhouse: every pin of its requirement file found in
    `wheelhouse` (the directory `reproduce.py build` or `pip download` filled), every shared library in
    each wheel read, and those with device code audited (audit_file). `passes` per arch: every library
    has code that GPU runs (native SASS or PTX at or below it) and no PTX it must JIT failed to compile
    (`ptx_compile.complete` says whether the time limit left some untried). A
    module with code for other architectures only is counted (`other_archs`), not failed: a library
    that picks its kernels by architecture (cuBLAS, cuDNN) never loads it there."""
    from reprokit.containers import images
    from reprokit.containers import wheelhouse as wh

    rec = images.recipe(image_dir)
    reqs = rec.requirements(flavour)
    if not reqs:
        raise UserError(f"images/{image_dir} {flavour} has no requirement file: nothing to audit")
    have = {w.name.lower(): w for w in wheelhouse.glob("*.whl")}
    wheels_out = []
    for pin in (p for r in reqs for p in wh.parse_requirements(r.read_text(), str(r))):
        prefix = f"{pin.name.lower().replace('-', '_')}-{pin.version}-"
        wheel = next((w for n, w in sorted(have.items()) if n.startswith(prefix)), None)
        if wheel is None:
            raise UserError(f"{wheelhouse} has no wheel of {pin.name}=={pin.version} (images/{image_dir} "
                            f"{flavour}); fill it with: pip download -r {reqs[0]} -d {wheelhouse}")
        files_out = []
        with tempfile.TemporaryDirectory(prefix="reprokit-wheel-") as tmp, zipfile.ZipFile(wheel) as z:
            for name in (n for n in z.namelist() if _shared_library(n)):
                path = Path(z.extract(name, tmp))
                found = fatbin.entries(path)
                if not found:
                    path.unlink()
                    continue
                if not files_out:
                    say(f"{wheel.name}")
                files_out.append(audit_file(path, name, tools, archs, limit_s, say, found))
        if files_out:
            wheels_out.append({"wheel": wheel.name, "sha256": file_sha256(wheel), "files": files_out,
                               "ptx_compile": sums(files_out, archs)})
    total = sums([f for w in wheels_out for f in w["files"]], archs)
    return {"image": image_dir, "flavour": flavour, "wheels": wheels_out, "ptx_compile": total,
            "passes": {a: total[a]["covered"] and not total[a]["failed"] for a in archs},
            "date": dt.date.today().isoformat()}


def audit_binary(binary_id: str, entry: dict[str, Any], tools: Tools, cache: Path, archs: list[str],
                 limit_s: float, say=print) -> dict[str, Any]:
    """The audit record of one compat.yaml binary with a `fetch` spec."""
    spec = entry["fetch"]
    wheel = fetch(spec, cache / "wheels")
    say(f"{binary_id}: {wheel.name}")
    files_out = []
    with tempfile.TemporaryDirectory(prefix="reprokit-wheel-") as tmp, zipfile.ZipFile(wheel) as z:
        members = [n for n in z.namelist() if any(fnmatch.fnmatch(n, g) for g in spec["files"])]
        if not members:
            raise UserError(f"compat.yaml binary {binary_id}: no file of {wheel.name} matches "
                            f"{spec['files']}; correct its fetch.files")
        for name in members:
            files_out.append(audit_file(Path(z.extract(name, tmp)), name, tools, archs, limit_s, say))

    def union(key: str) -> list[str]:
        return sorted({c for f in files_out for c in f[key]},
                      key=lambda c: tuple(int(x) for x in c.split(".")))

    compiled = sums(files_out, archs)
    return {"binary": binary_id, "wheel": wheel.name, "sha256": file_sha256(wheel),
            "requirement": spec["requirement"], "files": files_out, "sass": union("sass"),
            "ptx": union("ptx"), "ptx_compile": compiled, "date": dt.date.today().isoformat()}
