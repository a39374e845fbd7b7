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

A measured GPU device also carries "peaks" {"fp32": CUDA-core, "tf32": tensor (None without
TF32)}, all `count` GPUs, scaled by a MIG slice's SM fraction; "gpus" (what it was made of) and
"gpus_source" (where the list came from: the cell's own `gpus`, its Slurm node's fingerprint, or the
driver host's fingerprint as a labelled last resort). `peak_for(device, precision)` is the peak an
efficiency divides by: the one of the precision that ran (`cell_precision`).
"""

from __future__ import annotations

from reprokit.analysis import cpus, flops
from reprokit.catalog.suites import publication_hardware
from reprokit.reader.frozen import mapping
from reprokit.reader.model import Machine
from reprokit.reader.result import CellResult


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


# The precision the published numbers ran in: every source is from 2017-2019, on GPUs without TF32
# (Maxwell, Pascal, Volta, Turing) or on CPUs, in float32 (peaks.yaml header).
PUBLISHED_PRECISION = "fp32"
PRECISIONS = ("fp32", "tf32", "unknown")


def cell_precision(cell: CellResult) -> tuple[str, str]:
    """(precision that ran: "fp32" | "tf32" | "unknown", why) of a cell result, from its `precision`
    record (bench/float_mode.py). A result that recorded none: on a CPU fp32, because the float32 CPU
    paths of these frameworks (Theano, TensorFlow, PyTorch, JAX, MXNet on x86) have no
    reduced-precision default: TF32 is a GPU tensor-core mode; on a GPU unknown, because PyTorch's
    cuDNN, TensorFlow 2.x and JAX run float32 matmuls in TF32 by default on Ampere and later, and
    nothing recorded whether this one did."""
    rec = cell.precision
    if rec is not None and rec.get("effective") in PRECISIONS:
        return rec["effective"], str(rec.get("why") or "recorded by the cell")
    if (cell.device or "cpu") != "gpu":
        return "fp32", ("the cell recorded no precision; on a CPU it is fp32 (the frameworks' float32 CPU "
                        "paths have no reduced-precision default; TF32 is a GPU tensor-core mode)")
    return "unknown", ("the GPU cell recorded no precision: its float32 matmuls may have run in TF32")


def _fingerprint_gpu(g: dict) -> dict:
    """A host or node fingerprint's GPU as a cell-GPU entry; MIG mode on with no slice named: the
    cell's share of the GPU is unknown (sm_fraction None)."""
    mig = None
    if mapping(g.get("mig_mode")).get("current"):
        mig = {"uuid": None, "parent_uuid": g.get("uuid"), "profile": None, "sm_fraction": None}
    return {"index": g.get("index"), "uuid": g.get("uuid"), "name": g.get("name"), "mig": mig,
            "power_limit_w": g.get("enforced_power_limit_w") or g.get("power_limit_w")}


def _power_limit(g: dict, cell: CellResult) -> float | None:
    """A cell GPU's power limit: its own record, else the NVML state the cell recorded around it."""
    if isinstance(g.get("power_limit_w"), (int, float)):
        return float(g["power_limit_w"])
    for snap in (cell.gpu_state.get("before") or [] if cell.gpu_state is not None else []):
        if snap.get("uuid") == g.get("uuid") and isinstance(snap.get("power_limit_w"), (int, float)):
            return float(snap["power_limit_w"])
    return None


def cell_gpus(cell: CellResult, machine: Machine | None) -> tuple[list[dict], str]:
    """(GPUs, where from) of a GPU cell: the cell's own `gpus` (from its runner); else the GPUs of the
    Slurm node it ran on (`runner.node_fingerprint`); else the driver host's fingerprint GPUs, the
    first as many as the cell used, labelled as such (under Slurm the login node's)."""
    count = cell.gpu_count
    own = [g for g in cell.gpus or [] if isinstance(g, dict)]
    if own:
        return own, str(cell.gpus_source or "the cell's recorded GPUs")
    runner = cell.runner
    node = [g for g in Machine.of(runner.get("node_fingerprint")).gpus]
    if node:
        return ([_fingerprint_gpu(g) for g in node[:count]],
                f"from the fingerprint of the Slurm node {runner.get('node') or '?'} "
                "(the cell recorded no GPUs)")
    host = [g for g in (machine.gpus if machine is not None else []) if g.get("name")]
    if not host:
        return [], "the cell recorded no GPUs and the run's host fingerprint lists no GPU name"
    picked = host[:count] + [host[0]] * max(0, count - len(host))
    return [_fingerprint_gpu(g) for g in picked], \
        "from the driver host's fingerprint (the cell recorded no GPUs)"


def units(cell: CellResult) -> tuple[str, ...]:
    """The physical units a cell's processes ran on, as far as its result says: its node or nodes
    (a Slurm runner's; "this host" for a local run) and, for a GPU cell that recorded them, its GPUs
    (by UUID, else index). Two cells with the same units measured on one unit: a ratio of the two
    cancels the between-unit term (reprokit/data/unit_variation.yaml); with different units it does not."""
    runner = cell.runner
    nodes = list(runner.get("nodes") or ([runner["node"]] if runner.get("node") else ["this host"]))
    gpus = [str(g.get("uuid") or f"GPU {g.get('index')}") for g in cell.gpus or [] if isinstance(g, dict)]
    return tuple(sorted(nodes)) + tuple(sorted(gpus))


def _measured_gpu(cell: CellResult, machine: Machine | None) -> dict:
    gpus, source = cell_gpus(cell, machine)
    base = {"kind": "gpu", "count": len(gpus) or cell.gpu_count,
            "gpus": gpus, "gpus_source": source, "peaks": {"fp32": None, "tf32": None},
            "peak_tflops": None, "bandwidth_gbs": None, "peak_source": None, "verified": None}
    if not gpus:
        return {**base, "label": "GPU (name not recorded)", "entry": None, "reason": source}
    names = [str(g.get("name") or "?") for g in gpus]
    hits = [flops.find_gpu(n, power_limit_w=_power_limit(g, cell)) for n, g in zip(names, gpus)]
    migs = [g.get("mig") for g in gpus]
    profile = next((m.get("profile") for m in migs if isinstance(m, dict) and m.get("profile")), None)
    label = " + ".join(dict.fromkeys(names)) + (f" (MIG {profile or 'slice'})" if any(migs) else "")
    if any(h is None for h in hits):
        missing = next(n for n, h in zip(names, hits) if h is None)
        return {**base, "label": label, "entry": None,
                "reason": f"no peak for the GPU '{missing}' in peaks.yaml ({source})"}
    fractions = []
    for g, m in zip(gpus, migs):
        if not m:
            fractions.append(1.0)
        elif isinstance(m.get("sm_fraction"), (int, float)) and 0 < m["sm_fraction"] <= 1:
            fractions.append(float(m["sm_fraction"]))
        else:
            return {**base, "label": label, "entry": None,
                    "reason": f"the cell ran on a MIG slice of {g.get('name')} whose share of the GPU's SMs "
                              f"is unknown ({source}): no peak, so no efficiency"}
    entries = {h["entry"] for h in hits}
    entry = entries.pop() if len(entries) == 1 else None
    if entry and any(migs):
        entry = f"{entry} (MIG {profile or 'slice'})"  # a slice is not the published device model
    fp32 = sum(h["fp32_tflops"] * f for h, f in zip(hits, fractions))
    tf32 = (None if any(h.get("tf32_tensor_tflops") is None for h in hits)
            else sum(h["tf32_tensor_tflops"] * f for h, f in zip(hits, fractions)))
    bws = [h.get("memory_bandwidth_gbs") for h in hits]
    scaled = "" if not any(migs) else f", x SM fraction {'/'.join(f'{f:.3g}' for f in fractions)} (MIG)"
    return {**base, "label": label, "entry": entry, "peaks": {"fp32": fp32, "tf32": tf32},
            "peak_tflops": fp32, "fp32_tflops": hits[0]["fp32_tflops"],
            "bandwidth_gbs": None if any(migs) or not all(bws) else sum(bws),
            "peak_source": f"peaks.yaml {' + '.join(dict.fromkeys(h['entry'] for h in hits))}{scaled}; "
                           f"GPUs {source}",
            "verified": all(h["verified"] for h in hits),
            "tf32_verified": None if tf32 is None else all(h.get("tf32_verified") for h in hits),
            "sources": hits[0]["sources"], "reason": None}


def cell_threads(cell: CellResult) -> dict | None:
    """The threads the cell's framework used: its `threads` record (bench/harness.py), else what its
    stack fingerprint says (torch num_threads; TensorFlow intra_op when set, 0 meaning all cores);
    None when unknown."""
    t = cell.threads
    if t is not None and isinstance(t.get("count"), int) and t["count"] > 0:
        return t
    fw = cell.framework
    n = fw.get("num_threads")
    if isinstance(n, int) and n > 0:
        return {"count": n, "source": "torch.get_num_threads() in the stack fingerprint"}
    intra = mapping(fw.get("threads")).get("intra_op")
    if isinstance(intra, int) and intra > 0:
        return {"count": intra, "source": "TensorFlow intra_op_parallelism_threads in the stack fingerprint"}
    return None


def measured_device(cell: CellResult, machine: Machine | None) -> dict:
    """The device a cell ran on, with its theoretical peak (CPU: reprokit.analysis.cpus; GPU:
    peaks.yaml, of the GPUs `cell_gpus` finds) and, for a CPU, the run's measured GEMM probe as
    context. A Slurm cell's CPU is its node's (`runner.node_fingerprint`, the probe its
    `node_cpu_peak`), not the driver host's; one whose --repeat processes ran on several nodes
    (`runner.nodes`) has no peak, with the reason."""
    if (cell.device or "cpu") == "gpu":
        return _measured_gpu(cell, machine)
    return _measured_cpu(cell.runner, cell_threads(cell), machine)


def machine_cpu(machine: Machine) -> dict:
    """The CPU of a run's machine as a measured device (all its cores): its peak and derivation."""
    return _measured_cpu(mapping(None), None, machine)


def _measured_cpu(runner: dict, threads: dict | None, machine: Machine | None) -> dict:
    """The CPU a cell ran on: its Slurm node's (`runner`'s record), else the run's machine's."""
    node = Machine.of(runner.get("node_fingerprint"), runner.get("node_cpu_peak"))
    on_node = isinstance(node.host.get("cpu"), dict)
    here = node if on_node else machine or Machine()  # a Slurm cell: its node's CPU and GEMM rate
    probe = here.measured_cpu_peak if not on_node else \
        (node.cpu_peak if node.cpu_peak is not None and node.cpu_peak.get("gflops") else None)
    c = cpus.host_cpu(here.host, clock=here.clock, threads=threads)
    probe_tflops = probe["gflops"] / 1000.0 if probe else None
    d = {**c, "kind": "cpu", "count": 1, "entry": "cpu", "peak_source": c.get("derivation"),
         "probe_tflops": probe_tflops, "probe_source": probe.get("method") if probe else None}
    if on_node:
        d["node"] = runner.get("node")
    nodes = [str(n) for n in runner.get("nodes") or []] if on_node else []
    if len(nodes) > 1:  # run --repeat K spread over nodes (reprokit/reader/merge.py): which CPU ran is open
        return {**d, "peak_tflops": None, "probe_tflops": None, "verified": None, "peak_source": None,
                "reason": f"the cell's processes ran on {len(nodes)} Slurm nodes ({', '.join(nodes)}), "
                          "whose CPUs may differ: no one peak (run its processes on one node, e.g. "
                          "with --slurm-constraint)"}
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
    if on_node and d["peak_source"]:
        d["peak_source"] += f" (the Slurm node {runner.get('node') or '?'}'s CPU and GEMM probe)"
    return d


PEAK_KINDS = {"fp32": "fp32", "tf32": "TF32 tensor"}


def peak_for(device: dict, precision: str) -> tuple[float | None, str]:
    """(peak in TFLOP/s of `device` for the precision that ran, what it is or why there is none). A
    CPU has one (fp32) peak; a GPU's fp32 is the CUDA-core peak, tf32 the dense tensor-core peak;
    unknown precision has no peak, so no efficiency."""
    if precision == "unknown":
        return None, "the precision that ran is unknown"
    if device.get("kind") == "gpu" and isinstance(device.get("peaks"), dict):
        peak = device["peaks"].get(precision)
        if peak is None:
            why = device.get("reason") or f"peaks.yaml has no {PEAK_KINDS.get(precision, precision)} peak " \
                                           f"for {device.get('label')}"
            return None, why
        return peak, f"{PEAK_KINDS.get(precision, precision)} peak"
    if precision != "fp32":
        return None, f"{device.get('label')} has no {precision} peak ({precision} is a GPU tensor-core mode)"
    return device.get("peak_tflops"), "fp32 peak"


def highest_peak(device: dict) -> float | None:
    """The largest peak the device has at any precision the kit knows (for "faster than possible")."""
    vals = [v for v in (device.get("peaks") or {}).values() if v] or [device.get("peak_tflops")]
    return max((v for v in vals if v), default=None)


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


def host_mismatch(pub: dict, machine: Machine | None) -> str | None:
    """For a number without a measurement: why this run's host could not have tested it (no GPU, too
    few GPUs), or None (also when the machine is unknown)."""
    if pub["kind"] != "gpu" or machine is None:
        return None
    have = len(machine.gpu_names)
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
