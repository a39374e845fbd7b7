"""CPUs labelled by what tells them apart, with a theoretical fp32 peak (data/cpus.yaml).

A marketing string such as "AMD EPYC" says little: two hosts with that model name can differ by a
microarchitecture and a factor of two in peak. A CPU is therefore labelled by vendor,
microarchitecture, family/model and the number of cores a run can use, e.g.
"AMD Zen 3 (family 25 model 1), 2 cores".

Theoretical fp32 peak = cores x clock x fp32 FLOP per cycle per core, where FLOP per cycle = FMA units
x fp32 lanes per unit x 2 (multiply and add). The per-cycle figure comes from the microarchitecture's
entry in cpus.yaml (cited, with `verified`), or, for a microarchitecture the file does not know, from
the ISA flags (two FMA units of the widest ISA assumed; never verified). Publication CPUs take cores
and clock from cpus.yaml (cited); a run host takes them from its fingerprint (reprokit/probes/fingerprint.py):
the physical cores the run may use and the highest 'cpu MHz' seen at fingerprint time, so boost
clocks are not counted and the figure can sit below the true peak. `derivation` spells the arithmetic
out. The GEMM rate reprokit/probes/cpu_peak.py measures is an achieved rate, shown next to this peak as
context, never used as the peak.

A CPU here is a dict {"label" (short distinguishing label), "vendor", "family", "model", "uarch" (entry
id), "uarch_name", "cores", "clock_ghz", "flops_per_cycle", "peak_tflops", "bandwidth_gbs",
"derivation", "sources", "verified", "reason" (None, or why there is no peak), "entry", "notes"}.
Pure functions; the data file is loaded and validated once.
"""

from __future__ import annotations

import re
from typing import Any

from reprokit import kitdata
from reprokit.errors import UserError

VENDOR_SHORT = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}
FLAG_FALLBACK = "microarchitecture not in cpus.yaml; assumed 2 FMA units of the widest ISA"
CLOCK_NOTE = ("max 'cpu MHz' reported in /proc/cpuinfo at fingerprint time; boost clocks above it are "
              "not counted")
_GHZ_IN_NAME = re.compile(r"@\s*([0-9]+(?:\.[0-9]+)?)\s*GHz", re.IGNORECASE)


@kitdata.memoized
def load() -> dict:
    """The whole cpus.yaml document (validated; ids unique, publication CPUs name a known entry)."""
    doc = kitdata.load("cpus")
    ids = [e["id"] for e in doc["microarchitectures"]]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise UserError(f"reprokit/data/cpus.yaml: microarchitecture ids not unique: {', '.join(dup)}")
    for p in doc["publication_cpus"]:
        if p["uarch"] not in ids:
            raise UserError(f"reprokit/data/cpus.yaml: publication CPU '{p['id']}' names unknown "
                            f"microarchitecture '{p['uarch']}'")
    return doc


# -- small helpers -------------------------------------------------------------------------------
def _int(value: Any) -> int | None:
    """cpuinfo-style integer ('25', 25, '0x19') or None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return int(str(value).strip(), 0)
    except ValueError:
        return None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if x > 0 else None


def _fmt(x: float | int | None, digits: int = 4) -> str:
    """3.5 -> '3.5', 36.0 -> '36', 2.445404 -> '2.445'."""
    if x is None:
        return "?"
    return f"{float(x):.{digits}g}"


def _vendor_short(vendor: Any) -> str:
    return VENDOR_SHORT.get(str(vendor), str(vendor)) if vendor else ""


def _flags(cpu: dict) -> set[str] | None:
    flags = cpu.get("flags")
    if isinstance(flags, str):
        flags = flags.split()
    return {str(f) for f in flags} if isinstance(flags, (list, tuple, set)) and flags else None


def _is_device(cpu: dict) -> bool:
    return "flops_per_cycle" in cpu or "uarch_name" in cpu


# -- microarchitectures --------------------------------------------------------------------------
def _has_model(models: list | None, model: int | None) -> bool:
    if models is None:
        return True
    if model is None:
        return False
    for m in models:
        if isinstance(m, dict):
            if m["from"] <= model <= m["to"]:
                return True
        elif m == model:
            return True
    return False


def _entry_matches(e: dict, vendor: Any, family: int | None, model: int | None, stepping: int | None,
                   flags: set[str] | None) -> bool:
    if e["vendor"] != vendor or e["family"] != family or not _has_model(e.get("models"), model):
        return False
    if "min_stepping" in e or "max_stepping" in e:
        if stepping is None or not (e.get("min_stepping", 0) <= stepping <= e.get("max_stepping", 1 << 30)):
            return False
    if e.get("requires_flags") and (flags is None or not set(e["requires_flags"]) <= flags):
        return False
    if e.get("excludes_flags") and (flags is None or set(e["excludes_flags"]) & flags):
        return False
    return True


def find_uarch(vendor: Any, family: Any, model: Any, stepping: Any = None,
               flags: set[str] | list[str] | None = None) -> dict | None:
    """The first microarchitectures entry matching a CPU identity (cpuinfo fields), or None."""
    fam, mod, step = _int(family), _int(model), _int(stepping)
    if not vendor or fam is None:
        return None
    fl = set(flags) if flags else None
    for e in load()["microarchitectures"]:
        if _entry_matches(e, vendor, fam, mod, step, fl):
            return e
    return None


def uarch_entry(uarch_id: str) -> dict | None:
    """The microarchitectures entry with this id, or None."""
    return next((e for e in load()["microarchitectures"] if e["id"] == uarch_id), None)


def _flops_from_flags(flags: set[str] | None) -> tuple[float | None, str | None, str | None]:
    """(fp32 FLOP per cycle, ISA text, reason) for a microarchitecture cpus.yaml does not know."""
    if not flags:
        return None, None, ("microarchitecture not in cpus.yaml and no CPU flags in the host "
                            "fingerprint: no fp32 FLOP per cycle")
    if "fma" not in flags:
        return None, None, ("microarchitecture not in cpus.yaml and no 'fma' flag: no fp32 FLOP per "
                            "cycle assumed")
    if "avx512f" in flags:
        return 64.0, f"AVX-512, 2 x 512-bit FMA units assumed: {FLAG_FALLBACK}", None
    return 32.0, f"AVX2, 2 x 256-bit FMA units assumed: {FLAG_FALLBACK}", None


# -- host cores and clock ------------------------------------------------------------------------
def _host_cores(cpu: dict) -> tuple[float | None, str]:
    """The physical cores a run can use and how they were counted."""
    phys, usable = _num(cpu.get("physical_cores")), _num(cpu.get("usable_cores"))
    logical = _num(cpu.get("logical_cores"))
    cg = cpu.get("cgroup_quota")
    quota = _num(cg.get("cpus")) if isinstance(cg, dict) else None
    if phys:
        cores, how = phys, f"{_fmt(phys)} physical cores"
        if usable and usable < phys:
            cores, how = usable, f"{how}, of which the run may use at most {_fmt(usable)} (CPU affinity)"
    elif usable or logical:
        cores = usable or logical
        how = (f"no 'core id' in /proc/cpuinfo (e.g. a VM): each of the {_fmt(cores)} usable logical CPUs "
               "(vCPUs) counted as a core")
    else:
        return None, "the host fingerprint gives no core count"
    if quota and cores and quota < cores:
        cores, how = quota, f"{how}, capped at {_fmt(quota)} by the cgroup CPU quota"
    return (int(cores) if float(cores).is_integer() else cores), how


def _host_clock(cpu: dict) -> tuple[float | None, str]:
    """The clock in GHz used for the peak and where it comes from."""
    mhz = cpu.get("mhz")
    values = [v for v in (_num(x) for x in mhz) if v] if isinstance(mhz, (list, tuple)) else []
    hyper = " (on a VM, the hypervisor's reported clock)" if "hypervisor" in (_flags(cpu) or set()) else ""
    if values:
        return max(values) / 1000.0, CLOCK_NOTE + hyper
    m = _GHZ_IN_NAME.search(str(cpu.get("model_name") or ""))
    if m:
        return float(m.group(1)), ("nominal clock in the model name (no 'cpu MHz' in the fingerprint); "
                                   "boost clocks are not counted")
    return None, "no 'cpu MHz' in the host fingerprint and no clock in the model name"


# -- labels --------------------------------------------------------------------------------------
def _identity(vendor: Any, family: Any, model: Any, uarch: dict | None) -> str:
    v = _vendor_short(vendor)
    fam, mod = _int(family), _int(model)
    fm = f"family {fam} model {mod}" if fam is not None and mod is not None else (
        f"family {fam}" if fam is not None else "")
    if uarch:
        head = " ".join(x for x in (v, uarch["name"]) if x)
        return f"{head} ({fm})" if fm else head
    return " ".join(x for x in (v, fm) if x)


def _cores_text(cores: float | None) -> str:
    if cores is None:
        return ""
    return f"{_fmt(cores)} core" + ("" if cores == 1 else "s")


def short_label(cpu_fp: dict) -> str:
    """Short distinguishing label of a fingerprint's cpu dict (or of a CPU dict from this module),
    e.g. 'AMD Zen 3 (family 25 model 1), 2 cores'; 'CPU' when nothing is known."""
    cpu = cpu_fp if isinstance(cpu_fp, dict) else {}
    if _is_device(cpu):
        return str(cpu.get("label") or "CPU")
    uarch = find_uarch(cpu.get("vendor"), cpu.get("family"), cpu.get("model"), cpu.get("stepping"),
                       _flags(cpu))
    ident = _identity(cpu.get("vendor"), cpu.get("family"), cpu.get("model"), uarch)
    if not ident:
        ident = str(cpu.get("model_name") or "").strip()
    cores, _ = _host_cores(cpu)
    parts = [x for x in (ident, _cores_text(cores)) if x]
    if not parts:
        return "CPU"
    if not ident:
        return f"CPU, {parts[0]}"
    return ", ".join(parts)


def label(cpu: dict) -> str:
    """Long label: the short label plus the reported model name, stepping, threads and clock (for a
    fingerprint's cpu dict), or plus the peak and its derivation (for a CPU dict from this module)."""
    cpu = cpu if isinstance(cpu, dict) else {}
    short = short_label(cpu)
    if _is_device(cpu):
        if cpu.get("peak_tflops") is not None:
            return f"{short}: {_fmt(cpu['peak_tflops'] * 1000.0)} GFLOP/s fp32 peak ({cpu.get('derivation')})"
        return f"{short}: no peak ({cpu.get('reason')})"
    extra = []
    if cpu.get("model_name"):
        extra.append(f"model name '{cpu['model_name']}'")
    if _int(cpu.get("stepping")) is not None:
        extra.append(f"stepping {_int(cpu.get('stepping'))}")
    if _num(cpu.get("logical_cores")):
        extra.append(f"{_fmt(_num(cpu.get('logical_cores')))} logical CPUs")
    clock, _ = _host_clock(cpu)
    if clock:
        extra.append(f"{_fmt(clock)} GHz reported")
    return f"{short} ({'; '.join(extra)})" if extra else short


# -- devices -------------------------------------------------------------------------------------
def _derivation(cores: float, clock: float, fpc: float, isa: str, gflops: float) -> str:
    return (f"{_fmt(cores)} cores x {_fmt(clock)} GHz x {_fmt(fpc)} fp32 FLOP/cycle ({isa}) "
            f"= {_fmt(gflops)} GFLOP/s")


def publication_cpu(label: str) -> dict | None:
    """The publication_cpus entry matching a published CPU label (e.g. 'none (AWS c5.xlarge CPU)') as a
    CPU dict with its theoretical peak, or None when no entry matches."""
    text = str(label or "")
    for p in load()["publication_cpus"]:
        if any(re.search(rx, text, re.IGNORECASE) for rx in p["match"]):
            break
    else:
        return None
    u = uarch_entry(p["uarch"]) or {}
    fpc = u.get("fp32_flops_per_cycle")
    gflops = p["cores"] * p["clock_ghz"] * fpc if fpc else None
    derivation = _derivation(p["cores"], p["clock_ghz"], fpc, u["isa"], gflops) if gflops else None
    notes = [x for x in (p.get("notes"), u.get("notes")) if x]
    return {
        "label": p["label"], "vendor": p["vendor"], "family": p["family"], "model": p["model"],
        "uarch": p["uarch"], "uarch_name": u.get("name"), "cores": p["cores"], "sockets": p.get("sockets"),
        "clock_ghz": p["clock_ghz"], "clock_source": p["clock_source"], "flops_per_cycle": fpc,
        "peak_tflops": gflops / 1000.0 if gflops else None,
        "bandwidth_gbs": p["bandwidth_gbs"], "bandwidth_source": p["bandwidth_source"],
        "bandwidth_verified": p.get("bandwidth_verified"),
        "derivation": derivation, "sources": list(p["sources"]) + list(u.get("sources") or []),
        "verified": bool(p["verified"] and u.get("verified")),
        "reason": None if gflops else f"no fp32 FLOP per cycle for '{p['uarch']}' in cpus.yaml",
        "entry": p["id"], "notes": notes,
    }


def host_cpu(host: dict, clock: dict | None = None, threads: dict | None = None) -> dict:
    """The CPU of a run host, from its fingerprint (`host["cpu"]` as written by
    reprokit.probes.fingerprint), with its theoretical peak, or peak None and the reason. Never raises on
    missing or malformed fields.

    `clock`: the run's measured effective clock (reprokit/probes/cpu_peak.measure_clock: dependent adds of
    known cycle count); when it has `ghz`, the peak uses it instead of the reported clock (a VM reports
    its base clock; boost is real). `threads`: the threads the cell's framework used ({"count",
    "source"}, bench/harness.py); fewer threads than cores count only those cores."""
    cpu = host.get("cpu") if isinstance(host, dict) else None
    cpu = cpu if isinstance(cpu, dict) else {}
    vendor = cpu.get("vendor") or None
    family, model, stepping = _int(cpu.get("family")), _int(cpu.get("model")), _int(cpu.get("stepping"))
    flags = _flags(cpu)
    uarch = find_uarch(vendor, family, model, stepping, flags)
    cores, cores_how = _host_cores(cpu)
    clock_ghz, clock_how = _host_clock(cpu)
    measured = _num(clock.get("ghz")) if isinstance(clock, dict) else None
    if measured:
        reported = f"; reported {_fmt(clock_ghz)} GHz" if clock_ghz else ""
        clock_ghz, clock_how = measured, f"{clock.get('method') or 'measured'}{reported}"
    elif isinstance(clock, dict) and clock.get("reason"):  # probed, but no clock to trust: say why
        clock_how = f"{clock_how}; measured clock not used: {clock['reason']}"
    used = _num(threads.get("count")) if isinstance(threads, dict) else None
    if used and cores and used < cores:
        cores = int(used) if float(used).is_integer() else used
        cores_how = (f"{cores_how}; the cell's framework used {_fmt(used)} thread"
                     f"{'s' if used != 1 else ''} ({threads.get('source') or 'recorded by the cell'}), so "
                     f"{_fmt(used)} core{'s' if used != 1 else ''} counted")
    clock = clock_ghz
    notes = [cores_how, f"clock: {clock_how}"]
    if uarch:
        fpc, isa, why = uarch["fp32_flops_per_cycle"], uarch["isa"], None
        verified, sources = bool(uarch["verified"]), list(uarch["sources"])
        if uarch.get("notes"):
            notes.append(uarch["notes"])
    else:
        fpc, isa, why = _flops_from_flags(flags)
        verified, sources = False, []
        if fpc:
            notes.append(f"per-cycle figure unverified: {FLAG_FALLBACK}")
    reasons = [r for r, missing in ((cores_how, cores is None), (clock_how, clock is None),
                                    (why, fpc is None)) if missing and r]
    gflops = cores * clock * fpc if not reasons else None
    derivation = (f"{_derivation(cores, clock, fpc, isa, gflops)}; cores: {cores_how}; clock: {clock_how}"
                  if gflops else None)
    return {
        "label": short_label(cpu), "vendor": vendor, "family": family, "model": model, "stepping": stepping,
        "model_name": cpu.get("model_name"),
        "uarch": uarch["id"] if uarch else None, "uarch_name": uarch["name"] if uarch else None,
        "cores": cores, "clock_ghz": clock, "clock_source": clock_how, "flops_per_cycle": fpc,
        "clock_measured": bool(measured), "threads_used": used,
        "peak_tflops": gflops / 1000.0 if gflops else None,
        "bandwidth_gbs": None, "bandwidth_source": "not known for a run host (not in the fingerprint)",
        "derivation": derivation,
        "sources": sources, "verified": verified if gflops else None,
        "reason": "; ".join(reasons) if reasons else None,
        "entry": uarch["id"] if uarch else None, "notes": notes,
    }


def same_model(a: dict, b: dict) -> bool:
    """Two CPU dicts (publication_cpu / host_cpu) are the same CPU model for timing purposes: same
    vendor, family, model and core count (fewer cores is another device). Anything unknown: False."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    if a.get("kind", "cpu") != "cpu" or b.get("kind", "cpu") != "cpu":
        return False
    if not a.get("vendor") or a.get("vendor") != b.get("vendor"):
        return False
    for key in ("family", "model"):
        x, y = _int(a.get(key)), _int(b.get(key))
        if x is None or y is None or x != y:
            return False
    ca, cb = _num(a.get("cores")), _num(b.get("cores"))
    return ca is not None and cb is not None and abs(ca - cb) < 1e-9
