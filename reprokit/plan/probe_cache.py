"""The GPU probe cache: what the gpu-smoke probes found, per host and image, for preflight to read.

A probe (suite gpu-smoke, bench/workloads/probe_*.py) runs a GEMM and one LSTM step through a stack
image's own cuBLAS/cuDNN on a GPU and checks the numbers. Its outcome is kept in one JSON file under
the user's cache directory, `~/.cache/reprokit/gpu-probes.json` (`$REPROKIT_PROBE_CACHE` overrides;
schema reprokit/schemas/probe_cache.schema.json), one entry per

* host: the host id of the fingerprint (a hash of the host name) with the GPU's model name, compute
  capability and driver version; never a GPU UUID, so a same-model replacement GPU keeps its
  entries, while a driver update or another GPU model needs a new probe;
* image: the stack and the image ID (with its digest when it has one) the probe container ran.

A newer probe of the same host and image replaces the older one. Entries are written only by a run
on a GPU through an image (`record_result`): the Docker runner on this host, or a Slurm container
launcher (docker, apptainer, pyxis; keyed by the node its task fingerprinted and the image's ID, for
an image file its sha256: reprokit/containers/image_files.py). That path has never run (no GPU with
Docker or Slurm has been available; the one GPU session, docs/gpu-run, ran gpu-smoke through the
local runner, whose probes decide no entry); tests write entries through the same function from a
synthetic result.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reprokit import validate
from reprokit.errors import UserError

CACHE_ENV = "REPROKIT_PROBE_CACHE"
KIND = "gpu_probe_cache"
PROBE_PREFIX = "probe_"
# cell statuses a probe's outcome is decided by; timeout, oom, interrupted or skipped decide nothing
DECIDED = {"ok": "ok", "failed": "failed", "crashed": "failed"}
HOST_FIELDS = ("host_id", "gpu_name", "compute_capability", "driver_version")
CONTAINER_LAUNCHERS = ("docker", "apptainer", "pyxis")  # Slurm launchers that run an image


def default_path() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "reprokit" / "gpu-probes.json"


def empty() -> dict:
    return {"schema_version": 1, "kind": KIND, "entries": []}


def is_probe(workload: str) -> bool:
    return workload.startswith(PROBE_PREFIX)


def load(path: Path | None = None) -> dict:
    """The cache document; an empty one when the file does not exist. A file that is not valid JSON
    or not a probe cache is a one-line UserError naming it and the fix."""
    path = Path(path) if path is not None else default_path()
    fix = f"delete it (the probes are run again with `reproduce.py run --suite gpu-smoke`) or set {CACHE_ENV}"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return empty()
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"GPU probe cache {path} is not readable ({e}); {fix}") from None
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise UserError(f"GPU probe cache {path} is not valid JSON ({e}); {fix}") from None
    errs = validate.errors("probe_cache", doc)
    if errs:
        raise UserError(f"GPU probe cache {path} does not match the probe_cache schema: {errs[0]}; {fix}")
    return doc


def host_key(host_id: str | None, gpu: Mapping[str, Any]) -> dict[str, Any]:
    """The UUID-free identity of one GPU of a host, as entries store it."""
    return {"host_id": host_id, "gpu_name": gpu.get("name"),
            "compute_capability": gpu.get("compute_capability"),
            "driver_version": gpu.get("driver_version")}


def _same_host(entry: Mapping[str, Any], key: Mapping[str, Any]) -> bool:
    return all(entry["host"].get(f) == key.get(f) for f in HOST_FIELDS)


def lookup(entries: list[dict], host_id: str | None, gpu: Mapping[str, Any], stack: str,
           image_id: str | None) -> dict | None:
    """The entry of this host's GPU, stack and image (None when there is none, or when the image ID
    is not known: a probe of another build of the image says nothing about this one)."""
    if not image_id or not host_id:
        return None
    key = host_key(host_id, gpu)
    found = [e for e in entries if e["stack"] == stack and e["image_id"] == image_id and _same_host(e, key)]
    return max(found, key=lambda e: e["probed"]) if found else None


def _gpu_used(fingerprint: Mapping[str, Any], gpus: Any, slurm: bool = False) -> dict | None:
    """The host GPU a one-GPU probe container ran on: the first of the GPU ids the runner records
    (`runner.gpus`: the Docker runner's indices or UUIDs, reprokit/containers/spec.py gpu_ids; a
    Slurm container cell's SLURM_JOB_GPUS, reprokit/runners/slurm_task.py), GPU 0 without any. On a
    Slurm node whose NVML opens one GPU only (the job's, devices constrained) that one. None when
    the id is not one of the fingerprint's GPUs: no entry rather than a wrong one."""
    fp_gpus = list(fingerprint.get("gpus") or [])
    if not fp_gpus:
        return None
    ids = [str(g) for g in gpus] if isinstance(gpus, (list, tuple)) else []
    first = ids[0] if ids else str(fp_gpus[0].get("index", 0))
    for g in fp_gpus:
        if str(g.get("index")) == first or g.get("uuid") == first:
            return dict(g)
    opened = [g for g in fp_gpus if g.get("uuid")]
    return dict(opened[0]) if slurm and len(opened) == 1 else None


def _probed_where(result: Mapping[str, Any], fingerprint: Mapping[str, Any],
                  runner_name: str) -> tuple[str, Mapping[str, Any]] | None:
    """(runner label, the fingerprint of the machine whose GPU ran the probe), or None when the
    runner ran no image: the Docker runner on this host; a Slurm container launcher on its node
    (the node fingerprint its task took; never the driver host's)."""
    runner = result.get("runner") or {}
    if runner_name == "docker":
        return "docker", fingerprint
    if runner_name == "slurm" and runner.get("launcher") in CONTAINER_LAUNCHERS:
        node = runner.get("node_fingerprint")
        return (f"slurm/{runner['launcher']}", node) if isinstance(node, Mapping) else None
    return None


def entry_from_result(result: Mapping[str, Any], fingerprint: Mapping[str, Any],
                      runner_name: str, device: str) -> dict | None:
    """The cache entry a finished probe cell makes, or None when it decides nothing: not a probe, not
    on a GPU through an image (the Docker runner, or Slurm's docker, apptainer or pyxis launcher; a
    CPU run says nothing about a GPU, the local runner and launcher run no image), no image ID, or
    an outcome that is not a verdict (timeout, oom, interrupted, skipped)."""
    status = DECIDED.get(str(result.get("status")))
    runner = result.get("runner") or {}
    where = _probed_where(result, fingerprint, runner_name)
    if (status is None or device != "gpu" or where is None
            or not is_probe(str(result.get("workload", ""))) or not runner.get("image_id")):
        return None
    label, fingerprint = where
    gpu = _gpu_used(fingerprint, runner.get("gpus"), slurm=label != "docker")
    if gpu is None:
        return None
    nvidia = fingerprint.get("nvidia") or {}
    gpu.setdefault("driver_version", nvidia.get("driver_version"))
    host = host_key(fingerprint.get("host_id"), gpu)
    if not host["host_id"]:
        return None
    host["cuda_driver_version"] = gpu.get("cuda_driver_version") or nvidia.get("cuda_driver_version")
    probe = (result.get("extra") or {}).get("probe") or {}
    return {
        "host": host, "stack": result["stack"], "image_id": runner["image_id"],
        "image_digest": runner.get("image_digest"), "runner": label, "status": status,
        "error": None if status == "ok" else (result.get("reason") or "no reason recorded"),
        "probed": result.get("finished") or result.get("started"),
        "cuda_force_ptx_jit": bool((result.get("params") or {}).get("cuda_force_ptx_jit")),
        "run_id": result.get("run_id"), "cell_id": result.get("cell_id"),
        "details": {k: probe[k] for k in ("gemm", "lstm_step", "first_gemm_s", "first_lstm_step_s",
                                           "gemm_api", "lstm_api") if k in probe},
    }


def record(entry: Mapping[str, Any], path: Path | None = None) -> Path:
    """Add `entry`, replacing the one of the same host, stack and image; atomic write."""
    from reprokit import files

    path = Path(path) if path is not None else default_path()
    doc = load(path)
    doc["entries"] = [e for e in doc["entries"]
                      if not (e["stack"] == entry["stack"] and e["image_id"] == entry["image_id"]
                              and _same_host(e, entry["host"]))] + [dict(entry)]
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_json_atomic(path, doc, "probe_cache")
    return path


def record_result(result: Mapping[str, Any], fingerprint: Mapping[str, Any], runner_name: str,
                  device: str, path: Path | None = None) -> tuple[dict | None, Path | None]:
    """`entry_from_result` then `record`; (entry, path), or (None, None) when the cell decides
    nothing. NEVER RUN ON A GPU WITH AN IMAGE (none available: the one GPU session ran the local
    runner): the executors call it after every probe cell of a GPU run (`record_cell`)."""
    entry = entry_from_result(result, fingerprint, runner_name, device)
    if entry is None:
        return None, None
    return entry, record(entry, path)


def record_cell(result: dict, host_fingerprint: Mapping[str, Any], runner_name: str, device: str,
                say) -> None:
    """A gpu-smoke probe cell's outcome into the cache, said in one line; a cache that cannot be
    written costs a warning, never the run. Called by both executors (reprokit/run/serial.py, the
    Slurm runner's reprokit/run/execute_concurrent.py)."""
    from reprokit.errors import UserError

    try:
        entry, path = record_result(result, host_fingerprint, runner_name, device)
    except (OSError, ValueError, UserError) as e:
        say(f"warning: the probe result of {result.get('cell_id')} was not cached: {e}")
        return
    if entry is not None:
        say(f"probe cache: {entry['stack']} on {entry['host']['gpu_name']} "
            f"(driver {entry['host']['driver_version']}, {entry['runner']}): {entry['status']} -> {path}")
