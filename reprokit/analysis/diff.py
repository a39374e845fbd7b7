"""Environment diffs: the publication's environment against a run's, and one run's against another's.

Pure functions: a published number (its `environment`), its source's environment
(reprokit/data/sources.yaml), the run's host fingerprint (reprokit/probes/fingerprint.py) and a cell
result (reprokit/reader/result.py: its stack fingerprint and `implementation`). Each row is
{"field", "published", "measured", "differs"}; `differs` is None when one side is unknown (unstated,
not recorded), so "not different" is never claimed without both values.
"""

from __future__ import annotations

import re
from typing import Any

from reprokit.analysis import cpus, flops
from reprokit.reader.frozen import mapping
from reprokit.reader.result import CellResult

UNKNOWN = ("", "unstated", "unknown", "none", "null", "n/a")


def _known(x: Any) -> bool:
    return x is not None and str(x).strip().lower() not in UNKNOWN


def _numbers(s: str) -> list[str]:
    return re.findall(r"\d+", str(s).split("+")[0])


def versions_differ(published: Any, measured: Any) -> bool | None:
    """False when the numeric prefixes agree ('8.0' vs '8.0.44', '1.2.1' vs '1.2.1+cpu'), True when
    they do not, None when either side is unknown or has no version number."""
    if not _known(published) or not _known(measured):
        return None
    a, b = _numbers(published), _numbers(measured)
    n = min(len(a), len(b))
    if n == 0:
        return None
    return a[:n] != b[:n]


ALIASES = {"pytorch": "torch", "kerastensorflow": "kerastf", "tf": "tensorflow"}


def _norm(s: Any) -> str:
    key = re.sub(r"[^a-z0-9]+", "", str(s).lower())
    return ALIASES.get(key, key)


def text_differs(published: Any, measured: Any) -> bool | None:
    """Names compared case- and punctuation-insensitively, with aliases (PyTorch = torch)."""
    if not _known(published) or not _known(measured):
        return None
    return _norm(published) != _norm(measured)


def _row(field: str, published: Any, measured: Any, differs: bool | None) -> dict:
    return {"field": field, "published": published, "measured": measured, "differs": differs}


def measured_cuda(cell: CellResult) -> str | None:
    """CUDA version the framework was built with (or the loaded runtime), as recorded by the stack."""
    fw = cell.framework
    for v in (fw.get("cuda"), mapping(fw.get("build_info")).get("cuda_version"),
              _get(cell.stack_fingerprint, ("cuda_libraries", "cuda_runtime", "version_str"))):
        if _known(v):
            return str(v)
    return None


def measured_cudnn(cell: CellResult) -> str | None:
    fw = cell.framework
    for v in (fw.get("cudnn_version"), mapping(fw.get("build_info")).get("cudnn_version"),
              _get(cell.stack_fingerprint, ("cuda_libraries", "cudnn", "version_str"))):
        if _known(v):
            return str(v)
    return None


def environment_diff(number: dict, source: dict | None, host: dict, cell: CellResult | None) -> list[dict]:
    """Publication environment vs the run, field by field.

    `number`: a published number; `source`: its entry of sources.yaml (environment.host/python/
    timing...); `host`: the run's host_fingerprint; `cell`: the cell result (None when not run).
    Fields: gpu, gpu_count, device, cpu, framework, framework_version, python, cuda, cudnn,
    substitutes, timing.
    """
    env = number["environment"]
    senv = source.get("environment", {}) if source else {}
    device = cell.device if cell is not None else None
    rows = []

    pub_gpu = env.get("gpu")
    pub_hit = flops.find_gpu(pub_gpu)
    gpus = [g.get("name") for g in host.get("gpus") or [] if g.get("name")]
    meas_gpu = ", ".join(gpus) if gpus else "none"
    if device == "cpu" and gpus:
        meas_gpu += " (cell ran on the CPU)"
    if pub_hit and gpus and device == "gpu":
        hit = flops.find_gpu(gpus[0])
        differs = hit is None or hit["entry"] != pub_hit["entry"]
    else:
        pub_is_cpu = str(pub_gpu or "").lower().startswith("none")
        differs = None if cell is None else (pub_is_cpu != (device == "cpu")) or (not pub_is_cpu)
    rows.append(_row("gpu", pub_gpu, meas_gpu, differs))
    pub_count = (
        pub_hit["count"] if pub_hit else (0 if str(pub_gpu or "").lower().startswith("none") else None)
    )
    meas_count = None if cell is None else cell.gpu_count if device == "gpu" else 0
    rows.append(
        _row(
            "gpu_count",
            pub_count,
            meas_count,
            None if pub_count is None or meas_count is None else pub_count != meas_count,
        )
    )
    rows.append(
        _row(
            "device",
            "cpu" if pub_count == 0 else ("gpu" if pub_count else None),
            device,
            None if pub_count is None or device is None else (("cpu" if pub_count == 0 else "gpu") != device),
        )
    )
    cpu_fp = mapping(host.get("cpu"))
    cpu = cpu_fp.get("model_name")
    pub_host = senv.get("host")
    cpu_differs = None
    if _known(pub_host) and _known(cpu):
        cpu_differs = str(cpu).lower() not in str(pub_host).lower()
    shown = f"{cpus.short_label(cpu_fp)} ('{cpu}')" if _known(cpu) else cpus.short_label(cpu_fp)
    rows.append(_row("cpu", pub_host, shown if cpu_fp else None, cpu_differs))
    impl = cell.implementation.doc if cell is not None else {}
    rows.append(
        _row(
            "framework",
            env.get("framework"),
            impl.get("framework"),
            text_differs(env.get("framework"), impl.get("framework")) if impl else None,
        )
    )
    rows.append(
        _row(
            "framework_version",
            env.get("framework_version"),
            impl.get("framework_version"),
            versions_differ(env.get("framework_version"), impl.get("framework_version")),
        )
    )
    py = _get(cell.stack_fingerprint, ("python", "version")) if cell is not None else None
    rows.append(_row("python", senv.get("python"), py, versions_differ(senv.get("python"), py)))
    if device == "cpu":
        rows.append(_row("cuda", env.get("cuda"), "n/a (CPU run)", True if _known(env.get("cuda")) else None))
        rows.append(
            _row("cudnn", env.get("cudnn"), "n/a (CPU run)", True if _known(env.get("cudnn")) else None)
        )
    else:
        mc, md = (measured_cuda(cell), measured_cudnn(cell)) if cell is not None else (None, None)
        rows.append(_row("cuda", env.get("cuda"), mc, versions_differ(env.get("cuda"), mc)))
        rows.append(_row("cudnn", env.get("cudnn"), md, versions_differ(env.get("cudnn"), md)))
    subs = [f"{s.get('used')} instead of {s.get('original')}" for s in impl.get("substitutes") or []]
    rows.append(
        _row(
            "substitutes",
            "none (the original code and stack)",
            "; ".join(subs) or "none",
            bool(subs) if impl else None,
        )
    )
    metric = (cell.metric(number["metric"]) if cell is not None else None) or {}
    timing = "; ".join(
        x for x in (metric.get("method"), metric.get("sync") and f"sync: {metric['sync']}") if x
    )
    rows.append(_row("timing", senv.get("timing"), timing or None, None))
    return rows


# -- run against run -------------------------------------------------------------------------------
HOST_FIELDS = (
    ("cpu.model_name", ("cpu", "model_name")),
    ("cpu.vendor", ("cpu", "vendor")),
    ("cpu.family", ("cpu", "family")),
    ("cpu.model", ("cpu", "model")),
    ("cpu.stepping", ("cpu", "stepping")),
    ("cpu.logical_cores", ("cpu", "logical_cores")),
    ("cpu.usable_cores", ("cpu", "usable_cores")),
    ("cpu.scaling_governor", ("cpu", "scaling_governor", "per_cpu")),
    ("cpu.turbo", ("cpu", "turbo", "enabled")),
    ("memory.total_bytes", ("memory", "total_bytes")),
    ("os", ("os", "distro", "PRETTY_NAME")),
    ("kernel", ("kernel", "release")),
    ("python", ("python", "version")),
    ("nvidia.driver_version", ("nvidia", "driver_version")),
    ("nvidia.cuda_driver_version", ("nvidia", "cuda_driver_version")),
    ("cpu_peak.gflops", ("cpu_peak", "gflops")),
)
STACK_FIELDS = (
    ("framework.name", ("framework", "name")),
    ("framework.version", ("framework", "version")),
    ("framework.git_version", ("framework", "git_version")),
    ("framework.cuda", ("framework", "cuda")),
    ("framework.cudnn_version", ("framework", "cudnn_version")),
    ("framework.num_threads", ("framework", "num_threads")),
    ("numpy.version", ("numpy", "version")),
    ("numpy.blas", ("numpy", "blas")),
    ("python.version", ("python", "version")),
    ("image.digest", ("image", "digest")),
    ("cuda_runtime", ("cuda_libraries", "cuda_runtime", "version_str")),
    ("cudnn", ("cuda_libraries", "cudnn", "version_str")),
)


def _get(d: Any, path: tuple[str, ...]) -> Any:
    for k in path:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _pairs(a: dict, b: dict, fields) -> list[dict]:
    rows = []
    for name, path in fields:
        va, vb = _get(a, path), _get(b, path)
        if va is None and vb is None:
            continue
        rows.append({"field": name, "a": va, "b": vb, "differs": va != vb})
    return rows


def host_diff(host_a: dict, host_b: dict) -> list[dict]:
    """Selected host fingerprint fields of two runs: [{"field", "a", "b", "differs"}]; the GPUs are
    compared by name and count, the allow-listed environment variables one by one."""
    la, lb = (cpus.short_label(mapping(h.get("cpu"))) for h in (host_a, host_b))
    rows = [{"field": "cpu", "a": la, "b": lb, "differs": la != lb}]  # what tells two CPUs apart
    rows += _pairs(host_a, host_b, HOST_FIELDS)
    ga = [g.get("name") for g in host_a.get("gpus") or []]
    gb = [g.get("name") for g in host_b.get("gpus") or []]
    if ga or gb:
        rows.append({"field": "gpus", "a": ga, "b": gb, "differs": ga != gb})
    ea, eb = mapping(host_a.get("env")), mapping(host_b.get("env"))
    for k in sorted(set(ea) | set(eb)):
        rows.append({"field": f"env.{k}", "a": ea.get(k), "b": eb.get(k), "differs": ea.get(k) != eb.get(k)})
    return rows


def stack_diff(cell_a: CellResult, cell_b: CellResult) -> list[dict]:
    """Selected stack fingerprint fields (and the implementation) of the same stack in two runs."""
    fa, fb = cell_a.stack_fingerprint, cell_b.stack_fingerprint
    rows = _pairs(fa, fb, STACK_FIELDS)
    ea, eb = mapping(fa.get("env")), mapping(fb.get("env"))
    for k in sorted(set(ea) | set(eb)):
        rows.append({"field": f"env.{k}", "a": ea.get(k), "b": eb.get(k), "differs": ea.get(k) != eb.get(k)})
    ia, ib = cell_a.implementation.doc, cell_b.implementation.doc
    for k in ("framework_version", "api"):
        if ia.get(k) is not None or ib.get(k) is not None:
            rows.append(
                {
                    "field": f"implementation.{k}",
                    "a": ia.get(k),
                    "b": ib.get(k),
                    "differs": ia.get(k) != ib.get(k),
                }
            )
    sa = sorted(s.get("used", "") for s in ia.get("substitutes") or [])
    sb = sorted(s.get("used", "") for s in ib.get("substitutes") or [])
    if sa or sb:
        rows.append({"field": "implementation.substitutes", "a": sa, "b": sb, "differs": sa != sb})
    return rows
