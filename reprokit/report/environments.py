"""The environments section of a report: the run's host and each stack as its cells recorded it.

`host(run)`: OS, CPU (with the peak the verdicts use and its derivation), memory, Python, NVIDIA
driver and GPUs, the allow-listed environment. `stack(name, cells, spec)`: the framework and
libraries its fingerprint names, what its cells implemented and substituted, and which candidate
environment ran it (reprokit/runners/venvs.py).
"""

from __future__ import annotations

from reprokit.analysis import cpus, devices
from reprokit.reader.frozen import mapping
from reprokit.reader.model import Machine, Run
from reprokit.reader.result import CellResult
from reprokit.report.filters import flat


def host(run: Run) -> dict:
    """The run host's summary."""
    fp = run.host
    osi, cpu, mem = mapping(fp.get("os")), mapping(fp.get("cpu")), mapping(fp.get("memory"))
    nv = mapping(fp.get("nvidia"))
    peak = run.machine.measured_cpu_peak
    gpus = [{k: g.get(k) for k in ("index", "name", "memory_total_bytes", "compute_capability",
                                   "architecture", "driver_version", "cuda_driver_version")}
            for g in run.machine.gpus]
    total = mem.get("total_bytes")
    governor = mapping(cpu.get("scaling_governor"))
    return {
        "os": mapping(osi.get("distro")).get("PRETTY_NAME") or osi.get("name"),
        "kernel": osi.get("release"), "machine": osi.get("machine"), "libc": osi.get("libc"),
        "cpu": cpu.get("model_name"), "logical_cores": cpu.get("logical_cores"),
        "physical_cores": cpu.get("physical_cores"), "usable_cores": cpu.get("usable_cores"),
        "governor": governor.get("per_cpu") or governor.get("reason"),
        "memory_gib": round(total / 2 ** 30, 1) if total else None,
        "python": mapping(fp.get("python")).get("version"),
        "nvidia_available": nv.get("available"), "nvidia_reason": nv.get("reason"),
        "nvidia_driver": nv.get("driver_version"), "gpus": gpus, "env": mapping(fp.get("env")),
        "host_id": fp.get("host_id"),
        "cpu_label": cpus.short_label(cpu),
        "cpu_peak_theoretical": _cpu_theoretical(fp, peak),
        "cpu_peak_gflops": peak["gflops"] if peak else None,
        "cpu_peak_method": peak.get("method") if peak else None,
    }


def _cpu_theoretical(fp: dict, cpu_peak: dict | None) -> str:
    """The peak CPU verdicts use, with its derivation (the theoretical figure, or the measured GEMM rate
    where that exceeds it: reprokit.analysis.devices.measured_device)."""
    d = devices.machine_cpu(Machine.of(fp, cpu_peak))
    return d.get("peak_source") or f"unknown: {d.get('reason')}"


def _environment(cells: list[CellResult]) -> dict | None:
    """Which candidate environment ran the stack (reprokit/runners/venvs.py), or the stand-in and why, and
    every candidate tried for it on the measuring machine."""
    env = next((c.environment for c in cells if c.environment), None)
    if not env:
        return None
    ch = env["chosen"]
    if ch.get("fallback"):
        used = f"stand-in on Python {ch['python']}"
    elif ch["candidate"].startswith("kit "):  # a stack without candidates: the kit's interpreter
        kind = "interpreter" if ch["candidate"] == "kit host" else "venv"
        used = f"the kit's {kind} on Python {ch['python']}"
    else:
        used = f"candidate {ch['candidate']} on Python {ch['python']}"
    if ch.get("requirements"):
        used += f" ({', '.join(ch['requirements'])})"
    attempts = [f"{a['candidate']} (Python {a.get('interpreter_version') or a['python']}): {a['outcome']}"
                + (f": {a['error']}" if a.get("error") else "") for a in env.get("attempts") or []]
    return {"used": used, "fallback": bool(ch.get("fallback")), "why": ch.get("why"),
            "attempts": attempts}


def _implemented(cells: list[CellResult]) -> dict[str, list]:
    """What the stack's cells implemented: substitutes, notes, framework/API labels, scan loops (each
    once, in the cells' order)."""
    out: dict[str, list] = {"substitutes": [], "notes": [], "implementations": [], "scan_loops": []}
    for c in cells:
        impl = c.implementation
        for key, values in (("substitutes", impl.substitutes), ("notes", impl.notes),
                            ("implementations", [impl.label()]), ("scan_loops", [impl.scan_loop])):
            out[key] += [v for v in values if v and v not in out[key]]
    return out


def stack(name: str, cells: list[CellResult], spec: dict) -> dict:
    """One stack's summary, from the first of its cells that recorded a fingerprint."""
    with_fp = [c for c in cells if c.stack_fingerprint]
    fp = with_fp[0].stack_fingerprint if with_fp else mapping(None)
    fw, libs = mapping(fp.get("framework")), mapping(fp.get("cuda_libraries"))
    numpy, image = mapping(fp.get("numpy")), mapping(fp.get("image"))

    def lib(lib_name: str) -> str | None:
        d = mapping(libs.get(lib_name))
        return d.get("version_str") or (f"none ({d['reason']})" if d.get("reason") else None)

    details = [{"key": k, "value": flat(v)} for k, v in fw.items()
               if k not in ("name", "version", "errors") and v not in (None, "", [], {})]
    done = _implemented(cells)
    env = _environment(cells)
    return {
        "stack": name, "original": spec.get("original"), "image": spec.get("image"),
        "fingerprint_from": with_fp[0].cell_id if with_fp else None,
        "fingerprint_error": fp.get("error"),
        "framework": fw.get("name"), "framework_version": fw.get("version"),
        "framework_error": fw.get("error"),
        "python": mapping(fp.get("python")).get("version"),
        "numpy": " ".join(str(x) for x in (numpy.get("version"), numpy.get("blas")) if x) or None,
        "cuda_runtime": lib("cuda_runtime"), "cudnn": lib("cudnn"), "cuda_driver": lib("cuda_driver"),
        "image_id": image.get("id") or image.get("digest") or image.get("reason"),
        "details": details, "implementations": done["implementations"], "substitutes": done["substitutes"],
        "notes": done["notes"], "scan_loops": done["scan_loops"],
        **({"environment": env} if env else {}),
        "cells": [c.cell_id for c in cells],
    }
