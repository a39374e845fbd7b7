"""Devices and their classes: where a number was published, where a cell ran, and whether the two
can be compared at all.

A device is a dict {"kind": "cpu"|"gpu", "label" (what tells it apart: GPU model, or CPU vendor,
microarchitecture, family/model and cores), "entry" (peaks.yaml GPU id, or cpus.yaml entry), "count"
(GPUs; 1 for a CPU), "peak_tflops" (theoretical fp32, all `count` devices; None when unknown),
"bandwidth_gbs" (memory bandwidth, all devices; None when unknown), "peak_source", "verified",
"reason" (why no peak)}. A measured CPU also carries the run's GEMM probe as context
("probe_tflops", "probe_source"), never as its peak.

The class of a device is its kind plus, for GPUs, the count. Two devices of different classes are not
compared by any verdict (`class_mismatch` says why); two of the same class and model compare raw values
(`same_model`); two of the same class and different models compare efficiency. Pure functions.
"""

from __future__ import annotations

from reprokit.analysis import cpus, flops


def _gpu(label: str, count: int | None = None) -> dict:
    hit = flops.find_gpu(label)
    if hit is None:
        return {"kind": "gpu", "label": label, "entry": None, "count": count, "peak_tflops": None,
                "bandwidth_gbs": None, "peak_source": None, "verified": None,
                "reason": f"no peak for the GPU '{label}' in peaks.yaml"}
    n = hit["count"] if count is None else count
    bw = hit.get("memory_bandwidth_gbs")
    return {"kind": "gpu", "label": label, "entry": hit["entry"], "count": n,
            "peak_tflops": n * hit["fp32_tflops"], "fp32_tflops": hit["fp32_tflops"],
            "bandwidth_gbs": n * bw if bw else None,
            "peak_source": f"peaks.yaml {hit['entry']}", "verified": hit["verified"],
            "sources": hit["sources"], "reason": None}


def publication_hardware(number: dict) -> tuple[str, int]:
    """("cpu", 1) or ("gpu", N): the class of device a published number was measured on, from its data
    alone (environment.gpu: "none (...)" is a CPU; "Nx <model>" N GPUs; a GPU model alone one GPU).
    The device a cell needs comes from this (reprokit.suites), as does `publication_device`'s kind."""
    label = number["environment"].get("gpu") or "unstated"
    if label.lower().startswith("none"):
        return "cpu", 1
    m = flops.GPU_COUNT.match(label)
    return "gpu", int(m.group(1)) if m else 1


def publication_device(number: dict) -> dict:
    """The device a published number was measured on, from its environment in the data."""
    label = number["environment"].get("gpu") or "unstated"
    if publication_hardware(number)[0] == "gpu":
        return _gpu(label)
    cpu = cpus.publication_cpu(label)
    if cpu is None:
        return {"kind": "cpu", "label": label, "entry": None, "count": 1, "peak_tflops": None,
                "bandwidth_gbs": None, "peak_source": None, "verified": None,
                "reason": f"the publication CPU ('{label}') is not in cpus.yaml"}
    return {**cpu, "kind": "cpu", "published_as": label, "count": 1,
            "peak_source": cpu.get("derivation"), "entry": cpu.get("entry") or cpu.get("label")}


def host_gpus(run: dict | None) -> list[str]:
    host = (run or {}).get("host_fingerprint") or {}
    return [str(g.get("name")) for g in host.get("gpus") or [] if isinstance(g, dict) and g.get("name")]


def measured_device(cell: dict, run: dict | None) -> dict:
    """The device a cell ran on, with its theoretical peak (CPU: reprokit.analysis.cpus; GPU:
    peaks.yaml) and, for a CPU, the run's measured GEMM probe as context."""
    host = (run or {}).get("host_fingerprint") or {}
    if (cell.get("device") or "cpu") == "gpu":
        count = int((cell.get("params") or {}).get("gpus") or 1)
        names = host_gpus(run)
        if not names:
            return {"kind": "gpu", "label": "GPU (name not in the host fingerprint)", "entry": None,
                    "count": count, "peak_tflops": None, "bandwidth_gbs": None, "peak_source": None,
                    "verified": None, "reason": "the run's host fingerprint lists no GPU name"}
        return _gpu(names[0], count)
    c = cpus.host_cpu(host)
    probe = flops.cpu_peak_of(run)
    probe_tflops = probe["gflops"] / 1000.0 if probe else None
    d = {**c, "kind": "cpu", "count": 1, "entry": "cpu", "peak_source": c.get("derivation"),
         "probe_tflops": probe_tflops, "probe_source": (probe or {}).get("method")}
    if probe_tflops and d.get("peak_tflops") and probe_tflops > d["peak_tflops"]:
        # a measured rate above the theoretical one proves the figure too low (a VM reports its base
        # clock, boost is not counted): the measured rate is the best lower bound of the peak known
        d["theoretical_tflops"] = d["peak_tflops"]
        d["peak_tflops"] = probe_tflops
        d["peak_is_lower_bound"] = True
        d["verified"] = False
        d["peak_source"] = (f"the run's measured GEMM rate, {1000 * probe_tflops:.4g} GFLOP/s, which exceeds "
                            f"the theoretical {c.get('derivation')}: the clock under load is higher than "
                            "the one reported, so the measured rate is used (a lower bound of the true peak)")
    return d


def _kind(d: dict) -> str:
    return "a GPU" if d["kind"] == "gpu" else "a CPU"


def class_mismatch(pub: dict, meas: dict) -> str | None:
    """Why a number published on `pub` cannot be tested on `meas` (other kind, other GPU count), or
    None when both are of one class."""
    if pub.get("kind") not in ("cpu", "gpu"):
        return f"the publication hardware is not stated in the data ({pub.get('label')}): no verdict"
    if pub["kind"] != meas["kind"]:
        return (f"published on {_kind(pub)} ({pub['label']}), measured on {_kind(meas)} ({meas['label']}): "
                "times and fractions of peak do not carry across device classes")
    if pub["kind"] == "gpu" and pub.get("count") and meas.get("count") and pub["count"] != meas["count"]:
        return f"published on {pub['count']} GPU(s), measured on {meas['count']}"
    return None


def host_mismatch(pub: dict, run: dict | None) -> str | None:
    """For a number without a measurement: why this run's host could not have tested it (no GPU, too
    few GPUs), or None (also when the run, and so its host, is unknown)."""
    if pub["kind"] != "gpu" or not run:
        return None
    have = len(host_gpus(run))
    need = pub.get("count") or 1
    if have == 0:
        return f"published on a GPU ({pub['label']}); this host has no GPU"
    if have < need:
        return f"published on {need} GPUs ({pub['label']}); this host has {have}"
    return None


def same_model(pub: dict, meas: dict) -> bool:
    """The same device model (and count): raw values can be compared."""
    if pub["kind"] != meas["kind"]:
        return False
    if pub["kind"] == "gpu":
        return pub["entry"] is not None and pub["entry"] == meas["entry"] and pub["count"] == meas["count"]
    return cpus.same_model(pub, meas)
