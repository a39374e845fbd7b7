"""What the ledger keeps of a run: allow-listed fields only, and nothing private.

Kept: device model names (the report's device labels, made by the kit from the CPU model and the GPU
names), GPU counts, the kit's version and commit, dates, suite and stack names, published and measured
numbers with their units and intervals, verdict and status labels, the published numbers' and
claims' own descriptions (from the run's data snapshot), and each claim pair's measured and published
speed-up with its interval and device. A machine (the fingerprint's host id) and a GPU (its UUID) are
kept only as a salted hash (`unit_id`), with the store's salt, so two runs of one machine share an id
without the id saying which machine. Of the host fingerprint only the facts named in `HOST_FACTS`
are taken (`host_facts`: versions, clocks, power limit, models, core count, OS release), each read
from one named place; nothing else of it, no path, log, argv, reason text or environment is taken.

`Private` is the second line of defence: every string kept passes through `Private.clean`, which
replaces an absolute path and any host, node or user name the run records by a placeholder.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from reprokit.probes.fingerprint import machine_identity
from reprokit.reader.frozen import thaw

WITHHELD = "[withheld]"
# an absolute path: a '/' that starts a word (not inside a URL, a cell id or 'words/s') followed by a
# name; '~/' as well
_PATH = re.compile(r"(?<![\w.:/~-])(?:~)?/[\w.@+%-]+(?:/[\w.@+%-]*)*")
# keys whose string values name a machine or a person wherever they sit in a run's records
_PRIVATE_KEYS = {"host", "hostname", "node", "nodename", "nodes", "nodelist", "node_list", "user",
                 "username", "login", "submit_host", "batch_host", "alloc_node"}
# the kit's own labels and hashes: kept as they are (a node named "gpu" must not blank the device kind)
_LABELS = {"digest", "device", "verdict", "status", "stack_kind", "hardware", "form", "report",
           "machine", "units", "quick", "rejudged", "stored_report_matches"}
_HOME = re.compile(r"/(?:home|Users|u|users)/([^/\s\"']+)")


def unit_id(salt: bytes, identity: str) -> str:
    """A machine's or GPU's identity as a salted hash: stable within one store, meaningless outside."""
    return hashlib.sha256(salt + b"\0" + identity.encode()).hexdigest()[:16]


@dataclass
class Private:
    """The host, node and user names one run records, and the cleaning of strings against them."""
    names: set[str] = field(default_factory=set)
    withheld: int = 0

    @classmethod
    def of(cls, *docs: Any) -> Private:
        p = cls()
        for d in docs:
            p._collect(d, None)
        p.names = {n for n in p.names if len(n) >= 2}
        return p

    def _collect(self, value: Any, key: str | None) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                self._collect(v, str(k).lower())
        elif isinstance(value, list | tuple):
            for v in value:
                self._collect(v, key)
        elif isinstance(value, str):
            if key in _PRIVATE_KEYS:
                self.names.update(part for part in re.split(r"[\s,]+", value) if part)
            self.names.update(_HOME.findall(value))

    def clean(self, value: Any) -> Any:
        """A string with every absolute path and recorded name replaced; other values as they are."""
        if not isinstance(value, str):
            return value
        out = _PATH.sub(WITHHELD, value)
        for n in sorted(self.names, key=len, reverse=True):
            out = re.sub(rf"(?<![\w-]){re.escape(n)}(?![\w-])", WITHHELD, out)
        if out != value:
            self.withheld += 1
        return out

    def deep(self, value: Any) -> Any:
        """Every string in `value` cleaned, but the kit's own labels (verdicts, statuses, hashes)."""
        if isinstance(value, dict):
            return {k: v if k in _LABELS else self.deep(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.deep(v) for v in value]
        return self.clean(value)


def _model(label: str | None) -> str | None:
    """'GPU: NVIDIA H100 80GB HBM3' -> 'NVIDIA H100 80GB HBM3'."""
    if not label:
        return None
    for prefix in ("CPU: ", "GPU: "):
        if label.startswith(prefix):
            return label[len(prefix):]
    return label


def _num(x: Any) -> float | int | None:
    return x if isinstance(x, int | float) and not isinstance(x, bool) else None


HOST_FACTS = ("driver_version", "cuda_driver_version", "cuda_runtime", "cudnn", "gpu_name", "gpu_count",
              "gpu_sm_max_mhz", "gpu_sm_applications_mhz", "gpu_mem_max_mhz", "gpu_mem_applications_mhz",
              "gpu_power_limit_w", "gpu_enforced_power_limit_w", "cpu_model", "cpu_cores", "os",
              "kernel")
# the NVML facts of each GPU in the fingerprint: (fact, path under the GPU's record)
_GPU_FACTS = (("gpu_name", ("name",)), ("gpu_sm_max_mhz", ("clocks", "sm_max_mhz")),
              ("gpu_sm_applications_mhz", ("clocks", "sm_applications_mhz")),
              ("gpu_mem_max_mhz", ("clocks", "mem_max_mhz")),
              ("gpu_mem_applications_mhz", ("clocks", "mem_applications_mhz")),
              ("gpu_power_limit_w", ("power_limit_w",)),
              ("gpu_enforced_power_limit_w", ("enforced_power_limit_w",)))
_FACT = re.compile(r"[\w.+() /,:@-]{1,80}")  # a fact is a short plain string (a version, a model name)


def _fact(value: Any) -> str | float | int | None:
    """A fact as kept: a finite number, or a short plain string; anything else (a record, a long text)
    is not a fact and reads as null."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value if value == value and abs(value) != float("inf") else None
    if isinstance(value, str) and _FACT.fullmatch(value.strip()):
        return value.strip()
    return None


def _dig(record: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        record = record.get(key) if isinstance(record, dict) else None
    return record


def _one(values: list) -> str | float | int | None:
    """The GPUs' values of one fact: the value when every GPU that records it agrees, else the distinct
    values in GPU order joined by ' / ' (two GPUs of one machine at other clocks are a fact too)."""
    seen = [v for v in values if v is not None]
    distinct = list(dict.fromkeys(seen))
    if not distinct:
        return None
    return distinct[0] if len(distinct) == 1 else " / ".join(str(v) for v in distinct)


def host_facts(run) -> dict:
    """The allow-listed facts of the run's machine (`HOST_FACTS`), each from one named place of the
    host fingerprint (NVML facts from its `nvidia` and `gpus` records) or, for the CUDA runtime and
    cuDNN the run's stacks loaded, from its cells' stack fingerprints (`cuda_libraries`: the distinct
    versions, sorted, joined by ', '). A fact not recorded is null. Never a host name, user, path, UUID,
    serial or PCI address: nothing is taken that is not named here."""
    host = run.host
    nvidia = host.get("nvidia") or {}
    gpus = [g for g in run.machine.gpus if isinstance(g, dict)]
    cpu = host.get("cpu") or {}
    os_ = host.get("os") or {}
    distro = os_.get("distro") or {}
    libs: dict[str, set[str]] = {"cuda_runtime": set(), "cudnn": set()}
    for cell in run.results.values():
        for name, found in libs.items():
            v = _fact(_dig(cell.stack_fingerprint, ("cuda_libraries", name, "version_str")))
            if isinstance(v, str):
                found.add(v)
    facts: dict[str, Any] = {
        "driver_version": _fact(nvidia.get("driver_version")) or _one([_fact(g.get("driver_version"))
                                                                        for g in gpus]),
        "cuda_driver_version": _fact(nvidia.get("cuda_driver_version")) or _one(
            [_fact(g.get("cuda_driver_version")) for g in gpus]),
        "cuda_runtime": ", ".join(sorted(libs["cuda_runtime"])) or None,
        "cudnn": ", ".join(sorted(libs["cudnn"])) or None,
        "gpu_count": len(gpus),
        "cpu_model": _fact(cpu.get("model_name")),
        "cpu_cores": _fact(cpu.get("logical_cores")),
        "os": _fact(distro.get("PRETTY_NAME")) or _fact(" ".join(
            str(distro[k]) for k in ("ID", "VERSION_ID") if distro.get(k))) or _fact(os_.get("name")),
        "kernel": _fact((host.get("kernel") or {}).get("release")) or _fact(os_.get("release")),
    }
    for fact, path in _GPU_FACTS:
        facts[fact] = _one([_fact(_dig(g, path)) for g in gpus])
    return {k: facts.get(k) for k in HOST_FACTS}


def _kind_of(label: str | None, models: dict) -> str | None:
    """The device kind ('cpu', 'gpu') whose model the run's report names `label` (a claim side's `on`,
    a claim's `checked_on`), None when it names none of them."""
    return next((k for k, m in sorted(models.items()) if m and m == label), None)


def _pair_kind(pair: dict, models: dict) -> str | None:
    """The device kind a claim pair was measured on (its sides' `on`), None when not measured."""
    kinds = {_kind_of(v.get("on"), models) for v in (pair.get("better_value"), pair.get("worse_value"))
             if isinstance(v, dict)}
    kinds.discard(None)
    return kinds.pop() if len(kinds) == 1 else None


def _pair(pair: dict, models: dict) -> dict:
    """What the ledger keeps of one claim pair: its cells, status, the published speed-up and the
    devices it was published on, the measured speed-up (median) with its interval, and the device
    kind it was measured on (null fields: not measured)."""
    ratio = pair.get("speedup") if isinstance(pair.get("speedup"), list) else [None, None]
    interval = pair.get("speedup_interval") or {}
    return {
        "better_cell": pair.get("better_cell"), "worse_cell": pair.get("worse_cell"),
        "status": pair.get("status"), "published_speedup": _num(pair.get("published_speedup")),
        "published_on": [str(d) for d in pair.get("published_on") or []],
        "ratio": _num(pair.get("speedup_median")), "ratio_low": _num(ratio[0]),
        "ratio_high": _num(ratio[1] if len(ratio) > 1 else None),
        "interval": interval.get("label") if isinstance(interval, dict) else None,
        "device": _pair_kind(pair, models),
    }


def _checked(claim: dict, kinds: list[str], models: dict) -> list[dict]:
    """A claim's status on each device kind the run looked at it on: the pairs measured on that kind
    (and those measured on none, which every kind shares), the status the first of
    reprokit/analysis/claims.py's PRECEDENCE among them (the claim's own when it has no pair)."""
    from reprokit.analysis.claims import PRECEDENCE

    pairs = [_pair(p, models) for p in claim.get("pairs") or [] if isinstance(p, dict)]
    out = []
    for kind in kinds:
        mine = [p for p in pairs if p["device"] in (kind, None)]
        statuses = [p["status"] for p in mine]
        status = next((s for s in PRECEDENCE if s in statuses), claim.get("status"))
        out.append({"device_class": kind, "device_model": models.get(kind), "status": status,
                    "pairs": mine})
    return out


def extract(read, salt: bytes, form: str) -> tuple[dict, list[dict], list[dict]]:
    """(the run's record, its re-measurements, its claims' statuses) as the ledger keeps them, from a
    checked input (reprokit/ledger/read.py `Read`)."""
    run, ctx = read.run, read.context
    private = Private.of(thaw(run.doc), *(thaw(c.doc) for c in run.results.values()),
                         thaw(run.node_records))
    labels = ctx.get("device_labels") or {}
    models = {kind: _model(label) for kind, label in labels.items()}
    host_gpus = list(run.machine.gpus)
    host_id = run.host.get("host_id")
    record = {
        "digest": read.digest,
        "run_id": run.run_id,
        "form": form,
        "suite": run.suite,
        "runner": run.runner,
        "quick": run.quick,
        "rejudged": bool(run.rejudged),
        "kit_version": run.kit.version,
        "kit_commit": (run.kit.git_commit or "")[:12] or None,
        "started": run.started,
        "finished": run.finished,
        "devices": {k: models[k] for k in sorted(models) if models[k]},
        "gpu_count": len(host_gpus),
        "machine": unit_id(salt, machine_identity(run.host)) if host_id else None,
        "host_facts": host_facts(run),
        "report": read.basis,
        "stored_report_matches": read.stored_report_matches,
    }
    rows = []
    for r in ctx.get("numbers") or []:
        cell = run.result(r.get("cell")) if r.get("cell") else None
        gpus = list(cell.gpus) if cell is not None and cell.gpus is not None else None
        if gpus is None:
            gpus = host_gpus if r.get("device") == "gpu" else []
        precision = None
        if cell is not None and cell.precision:
            precision = cell.precision.get("effective") or cell.precision.get("requested")
        repro = r.get("reproduction") or {}
        rows.append({
            "number_id": r["id"], "source": r.get("source"), "table": r.get("table"),
            "row_label": r.get("row_label"), "metric": r.get("metric"),
            "published": _num(r.get("published")), "unit": r.get("unit"),
            "published_device": r.get("published_device"), "bound": r.get("bound"),
            "cell": r.get("cell"), "stack": cell.stack if cell is not None else None,
            "stack_kind": repro.get("stack"), "hardware": repro.get("hardware"),
            "device": r.get("device"), "device_model": models.get(r.get("device")),
            "gpu_count": len(gpus),
            "units": sorted(unit_id(salt, f"gpu:{g.get('uuid')}") for g in gpus if g.get("uuid")),
            "precision": precision if isinstance(precision, str) else None,
            "measured": _num(r.get("measured")), "ci_low": _num(r.get("ci_low")),
            "ci_high": _num(r.get("ci_high")), "ci_label": r.get("ci_label"),
            "measured_unit": r.get("measured_unit"), "n": _num(r.get("n")),
            "verdict": r.get("verdict"),
            "scale": _num(r.get("scale")),
        })
    claims = []
    for c in ctx.get("claims") or []:
        kinds = sorted({k for label in c.get("checked_on") or [] if (k := _kind_of(label, models))}) \
            or list(ctx.get("devices") or [])
        claims.append({
            "claim_id": c["id"], "source": c.get("source"), "text": c.get("text"),
            "status": c.get("status"), "devices": sorted({m for k in kinds if (m := models.get(k))}),
            "checked": _checked(c, sorted(k for k in kinds if models.get(k)), models),
        })
    return private.deep(record), private.deep(rows), private.deep(claims)
