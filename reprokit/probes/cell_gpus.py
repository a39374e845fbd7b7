"""The GPUs one cell had, from its runner, matched against the NVML GPU list of its host or node.

A cell result's `gpus` (its contract: docs/FORMATS.md "Cell result") lists the GPUs the
cell's process could use, each as {index, uuid, name, visible_as, mig}, and `gpus_source` says in
one line where the list came from. The sources, by runner:

- docker: the device ids of the container's device request (runner info `gpus`, from `run --gpus`
  and the cell's GPU count: reprokit/containers/spec.py gpu_ids). The NVIDIA container toolkit
  reads them as NVML indexes, GPU UUIDs, MIG UUIDs or GPU:MIG pairs, so they match the driver
  host's NVML list exactly.
- local: CUDA_VISIBLE_DEVICES as the cell's process saw it (its stack fingerprint's `env`, else
  the environment the runner gave it), read as CUDA reads it (below); unset: every GPU.
- slurm: the node fingerprint its task took inside the job (reprokit/runners/slurm_task.py), and
  either the device ids a container launcher passed (SLURM_JOB_GPUS: Slurm's global ids) or,
  for the local launcher, the CUDA_VISIBLE_DEVICES Slurm set for the job.
- anything else with a GPU device: every GPU of the host fingerprint, said as the last resort.

A cell that uses N GPUs uses the first N it can see (frameworks number the visible devices from 0),
so the list is cut to the cell's count. A CPU cell has none: [].

CUDA_VISIBLE_DEVICES (CUDA C Programming Guide, "CUDA Environment Variables"): a comma-separated
list of integer indexes, GPU UUIDs (GPU-..., a unique prefix is enough) or MIG UUIDs (MIG-..., or
the older MIG-GPU-<uuid>/<gi>/<ci>); the first entry CUDA cannot match ends the list. Integer
indexes follow CUDA_DEVICE_ORDER: only PCI_BUS_ID is NVML's order; under the default
(FASTEST_FIRST) the identity of index N on a host of several GPUs is not known here, so the entry
keeps only a name all of the host's GPUs share (index and UUID null).

MIG: a slice is recorded with its parent GPU's index, UUID and name (the name decides the peak)
and `mig` = {uuid, parent_uuid, profile, sm_fraction}; sm_fraction is the slice's SM count over the
SMs the GPU offers in MIG mode (fingerprint `mig_sm_total`), null when either is unknown. A whole
MIG-enabled GPU named by index or UUID gives CUDA one of its slices (NVIDIA MIG user guide, running
CUDA applications: a CUDA process enumerates a single MIG device [U: not re-read for this module]);
which one is not known here unless it has only one.

The local runner's source, CUDA_VISIBLE_DEVICES unset on a one-GPU host, ran on one NVIDIA H100
(torch 2.11 / JAX 0.11, 2026-11-26, docs/gpu-run: the cells' `gpus` and `gpus_source`). The docker,
slurm and last-resort sources, a set CUDA_VISIBLE_DEVICES, several GPUs and MIG have never run on a
GPU: tested with the stored fingerprints of tests/data/fingerprints only.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_PAIR = re.compile(r"(\d+):(\d+)")  # whole token: fullmatch
_LEGACY_MIG = re.compile(r"MIG-(GPU-[0-9a-fA-F-]+)/(\d+)/(\d+)")


def fingerprint_gpus(fp: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The NVML GPU records of a host/node fingerprint (none without a driver)."""
    if not fp or not (fp.get("nvidia") or {}).get("available"):
        return []
    return [g for g in fp.get("gpus") or [] if isinstance(g, dict)]


def _mig_on(gpu: Mapping[str, Any]) -> bool:
    return bool((gpu.get("mig_mode") or {}).get("current"))


def _whole(gpu: Mapping[str, Any], visible_as: str | None) -> dict[str, Any]:
    """A GPU's entry; a MIG-enabled GPU gives CUDA one slice: known only when it has one."""
    mig = None
    if _mig_on(gpu):
        slices = gpu.get("mig_devices") or []
        if len(slices) == 1:
            return _slice(gpu, slices[0], visible_as)
        mig = {"uuid": None, "parent_uuid": gpu.get("uuid"), "profile": None, "sm_fraction": None}
    return {"index": gpu.get("index"), "uuid": gpu.get("uuid"), "name": gpu.get("name"),
            "visible_as": visible_as, "mig": mig}


def _slice(gpu: Mapping[str, Any], mig: Mapping[str, Any], visible_as: str | None) -> dict[str, Any]:
    sms, total = mig.get("sm_count"), gpu.get("mig_sm_total")
    fraction = None
    if isinstance(sms, (int, float)) and isinstance(total, (int, float)) and total > 0:
        fraction = round(sms / total, 4)
    return {"index": gpu.get("index"), "uuid": gpu.get("uuid"), "name": gpu.get("name"),
            "visible_as": visible_as,
            "mig": {"uuid": mig.get("uuid"), "parent_uuid": gpu.get("uuid"),
                    "profile": mig.get("profile"), "sm_fraction": fraction}}


def _by_prefix(token: str, items: list[tuple[str | None, Any]]) -> Any:
    """The one item whose UUID equals `token` or starts with it (CUDA takes a unique prefix)."""
    exact = [x for u, x in items if u and u.lower() == token.lower()]
    if exact:
        return exact[0]
    found = [x for u, x in items if u and u.lower().startswith(token.lower())]
    return found[0] if len(found) == 1 else None


def match(token: str, gpus: list[dict[str, Any]], *, by_index: bool = True) -> dict[str, Any] | None:
    """The entry of one device id (an NVML index, GPU-UUID, MIG-UUID, legacy MIG name or GPU:MIG
    pair) on a host whose NVML GPUs are `gpus`; None when nothing matches."""
    t = token.strip()
    if t.isdigit():
        if not by_index:
            return None
        hit = [g for g in gpus if g.get("index") == int(t)]
        return _whole(hit[0], t) if hit else None
    pair = _PAIR.fullmatch(t)
    if pair:
        hit = [g for g in gpus if g.get("index") == int(pair[1])]
        slices = [m for g in hit for m in g.get("mig_devices") or [] if m.get("index") == int(pair[2])]
        return _slice(hit[0], slices[0], t) if slices else None
    legacy = _LEGACY_MIG.fullmatch(t)
    if legacy:
        for g in gpus:
            if (g.get("uuid") or "").lower() != legacy[1].lower():
                continue
            for m in g.get("mig_devices") or []:
                if (m.get("gpu_instance_id"), m.get("compute_instance_id")) == \
                        (int(legacy[2]), int(legacy[3])):
                    return _slice(g, m, t)
        return None
    if t.upper().startswith("MIG-"):
        pair_ = _by_prefix(t, [(m.get("uuid"), (g, m)) for g in gpus for m in g.get("mig_devices") or []])
        return _slice(pair_[0], pair_[1], t) if pair_ else None
    if t.upper().startswith("GPU-"):
        g = _by_prefix(t, [(g.get("uuid"), g) for g in gpus])
        return _whole(g, t) if g else None
    return None


def _unknown(token: str, name: str | None = None, maybe_mig: bool = False) -> dict[str, Any]:
    """An entry whose GPU is not known; `maybe_mig`: it may be a MIG slice (some GPU of the host is
    in MIG mode), whose share of the GPU is then unknown too."""
    mig = {"uuid": None, "parent_uuid": None, "profile": None, "sm_fraction": None} if maybe_mig \
        else None
    return {"index": None, "uuid": None, "name": name, "visible_as": token, "mig": mig}


def from_device_ids(ids: list[str], gpus: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Entries of container device ids (NVML order: the container toolkit asks NVML), and the ids
    that matched no GPU of the list (kept as entries with only `visible_as`)."""
    out, missing = [], []
    for i in ids:
        if str(i).strip().lower() == "all":
            out.extend(_whole(g, str(g.get("index"))) for g in gpus)
            continue
        e = match(str(i), gpus)
        if e is None:
            missing.append(str(i))
            e = _unknown(str(i))
        out.append(e)
    return out, missing


def from_cuda_visible(value: str | None, gpus: list[dict[str, Any]], order: str | None = None
                      ) -> tuple[list[dict[str, Any]], str]:
    """The GPUs CUDA shows a process whose CUDA_VISIBLE_DEVICES is `value` (None: unset) on a host
    whose NVML GPUs are `gpus`, in CUDA's order, and a note on what is uncertain ('' if nothing)."""
    pci_order = (order or "").strip().upper() == "PCI_BUS_ID"
    several = len(gpus) > 1
    names = {g.get("name") for g in gpus}
    shared = names.pop() if len(names) == 1 else None
    any_mig = any(_mig_on(g) for g in gpus)
    notes = []
    if value is None:
        tokens = [str(g.get("index")) for g in gpus]
        if not pci_order and several:  # every GPU, in an order CUDA does not promise
            notes.append("CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA's device order is not NVML's")
            return [_unknown(t, shared, any_mig) for t in tokens], "; ".join(notes)
        return [_whole(g, str(g.get("index"))) for g in gpus], ""
    if not value.strip():
        return [], "CUDA_VISIBLE_DEVICES is empty: CUDA sees no GPU"
    out = []
    for t in [x.strip() for x in value.split(",")]:
        if t.isdigit() and not pci_order and several:
            if not any(g.get("index") == int(t) for g in gpus):
                notes.append(f"entry {t!r} matches no GPU: CUDA ignores it and every entry after it")
                break
            out.append(_unknown(t, shared, any_mig))
            note = ("CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA's index N is not necessarily NVML's"
                    + (f" (every GPU here is a {shared})" if shared else " (the GPUs differ)"))
            if note not in notes:
                notes.append(note)
            continue
        e = match(t, gpus)
        if e is None:  # CUDA stops at the first entry it cannot match
            notes.append(f"entry {t!r} matches no GPU: CUDA ignores it and every entry after it")
            break
        out.append(e)
    return out, "; ".join(notes)


def job_gpu_ids(ids: list[str], gpus: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Slurm's global GPU ids (SLURM_JOB_GPUS) on a node fingerprint taken inside the job, matched
    by NVML index (Slurm's AutoDetect=nvml numbers a node's GPUs in NVML's order [U: assumed for a
    gres.conf written by hand]). With the devices constrained (cgroup), NVML's count_v2 still
    lists every GPU and the job's others fail with NO_PERMISSION (NVML API reference,
    nvmlDeviceGetHandleByIndex_v2): they are records without a UUID, and the index match holds.
    An NVML that lists only the job's GPUs, numbered from 0 (the _v1 count), is recognised by
    ids it does not have: they are then matched by position."""
    indexes = {g.get("index") for g in gpus}
    numeric = [i for i in ids if str(i).isdigit()]
    if len(gpus) == len(ids) and numeric == ids and any(int(i) not in indexes for i in ids):
        ordered = sorted(gpus, key=lambda g: g.get("index") or 0)
        pos = {i: n for n, i in enumerate(sorted(ids, key=int))}
        return [_whole(ordered[pos[i]], i) for i in ids], (
            "the node's NVML lists only the job's GPUs (devices constrained): matched by position")
    out, missing = from_device_ids(ids, gpus)
    return out, (f"id(s) {', '.join(missing)} match no GPU of the node" if missing else "")


def in_cgroup(value: str | None, gpus: list[dict[str, Any]], order: str | None
              ) -> tuple[list[dict[str, Any]], str]:
    """from_cuda_visible for a process in a device cgroup (a Slurm job with ConstrainDevices): when
    some of the node's GPUs could not be opened (records without a UUID), CUDA enumerates only the
    others, so its indexes count those, in NVML's order (Slurm sets CUDA_VISIBLE_DEVICES to
    0..N-1 there [U: Slurm gres documentation not re-read for this])."""
    usable = [g for g in gpus if g.get("uuid")]
    if len(usable) == len(gpus):
        return from_cuda_visible(value, gpus, order)
    real = {g.get("uuid"): g.get("index") for g in usable}
    view = [dict(g, index=n) for n, g in enumerate(sorted(usable, key=lambda g: g.get("index") or 0))]
    entries, note = from_cuda_visible(value, view, order)
    for e in entries:
        if e.get("uuid") in real:
            e["index"] = real[e["uuid"]]
    said = (f"the job can open {len(usable)} of the node's {len(gpus)} GPUs (device cgroup): "
            "CUDA's indexes count only those")
    return entries, "; ".join(x for x in (said, note) if x)


def _cut(entries: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    return entries[:count] if count > 0 else entries


def _env_of(result: Mapping[str, Any], fallback: Mapping[str, Any] | None) -> Mapping[str, Any]:
    env = (result.get("stack_fingerprint") or {}).get("env")
    if isinstance(env, dict) and env and "error" not in env:
        return env
    return fallback or {}


def _with(note: str, text: str) -> str:
    return f"{text} ({note})" if note else text


def for_cell(result: Mapping[str, Any], runner: str, runner_info: Mapping[str, Any], count: int,
             host: Mapping[str, Any] | None = None, env: Mapping[str, Any] | None = None
             ) -> tuple[list[dict[str, Any]], str]:
    """(gpus, gpus_source) of one cell that used `count` GPUs (0: a CPU cell) under `runner`.
    `runner_info`: the runner's CellOutcome info; `host`: the driver host's fingerprint; `env`: the
    environment the runner gave the cell's process (the local runner's). Never raises: a record
    it cannot read costs the list, never the cell."""
    try:
        return _for_cell(result, runner, runner_info, count, host, env)
    except Exception as e:  # malformed fingerprint or runner info
        return [], f"not known: the GPU records could not be read ({type(e).__name__}: {e})"


def _for_cell(result: Mapping[str, Any], runner: str, runner_info: Mapping[str, Any], count: int,
              host: Mapping[str, Any] | None, env: Mapping[str, Any] | None
              ) -> tuple[list[dict[str, Any]], str]:
    if count <= 0:
        return [], "a CPU cell: no GPU"
    if result.get("status") == "skipped":  # e.g. fewer GPUs in --gpus than the cell needs
        return [], "not run: the cell was skipped"
    node_fp = runner_info.get("node_fingerprint")
    if runner == "slurm":
        node = runner_info.get("node") or "?"
        gpus = fingerprint_gpus(node_fp)
        if not node_fp:
            return [], f"not known: the task record of node {node} has no node fingerprint"
        ids = runner_info.get("gpus")
        if ids:  # a container launcher's device ids, from SLURM_JOB_GPUS
            entries, note = job_gpu_ids([str(i) for i in ids], gpus)
            return entries, _with(note, f"SLURM_JOB_GPUS {','.join(map(str, ids))} "
                                               f"(container device ids) + node {node} fingerprint")
        genv = runner_info.get("gpu_env") or _env_of(result, None)
        cvd = genv.get("CUDA_VISIBLE_DEVICES")
        entries, note = in_cgroup(cvd, gpus, genv.get("CUDA_DEVICE_ORDER"))
        job = genv.get("SLURM_JOB_GPUS")
        what = (f"CUDA_VISIBLE_DEVICES={cvd}" if cvd is not None else "CUDA_VISIBLE_DEVICES unset")
        return _cut(entries, count), _with(note, what + (f" (SLURM_JOB_GPUS={job})" if job else "")
                                           + f" + node {node} fingerprint")
    gpus = fingerprint_gpus(host)
    if runner == "docker" and runner_info.get("gpus") is not None:
        ids = [str(i) for i in runner_info["gpus"]]
        entries, missing = from_device_ids(ids, gpus)
        note = f"id(s) {', '.join(missing)} match no GPU of the host fingerprint" if missing else ""
        return entries, _with(note, f"Docker device ids {','.join(ids)} + host "
                                           "fingerprint")
    if runner == "local":
        cenv = _env_of(result, env)
        cvd = cenv.get("CUDA_VISIBLE_DEVICES")
        entries, note = from_cuda_visible(cvd, gpus, cenv.get("CUDA_DEVICE_ORDER"))
        what = f"CUDA_VISIBLE_DEVICES={cvd}" if cvd is not None else "CUDA_VISIBLE_DEVICES unset"
        return _cut(entries, count), _with(note, what + " + host fingerprint")
    entries = [_whole(g, None) for g in gpus]
    return _cut(entries, count), "host fingerprint: every GPU"
