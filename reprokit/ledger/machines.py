"""Per machine: its fingerprint facts, how they changed, and what differs from machines of its model.

Its allow-listed fingerprint facts, how they changed over its runs, and what differs from the other
machines of the same device model.

A machine is a run's `machine` id (a salted hash: reprokit/ledger/fields.py `_machine_identity`); a run
without one belongs to no machine here. A machine's facts are those of its latest run (by start),
`fields.HOST_FACTS`, null where not recorded; `changed` lists each fact that took more than one value
over its runs (a driver updated between two runs). Two machines are of the same device model when
their runs name one device model of one class (an H100 machine and another H100 machine; a CPU model
on its own). `differs`: for each device model the machine shares, each fact whose value here is not
the value on another machine of that model, as each other value with how many machines of that model
have it and the first EXAMPLES of them (by id): linear in the machines, not quadratic; a fact one of
the two did not record is not compared. `same_model_machines` counts the other machines of its device
models.
"""

from __future__ import annotations

from reprokit.ledger.fields import HOST_FACTS

LABELS = {
    "driver_version": "NVIDIA driver", "cuda_driver_version": "CUDA (driver API)",
    "cuda_runtime": "CUDA runtime (the stacks loaded)", "cudnn": "cuDNN (the stacks loaded)",
    "gpu_name": "GPU", "gpu_count": "GPU count", "gpu_sm_max_mhz": "GPU SM clock, max (MHz)",
    "gpu_sm_applications_mhz": "GPU SM clock, applied (MHz)",
    "gpu_mem_max_mhz": "GPU memory clock, max (MHz)",
    "gpu_mem_applications_mhz": "GPU memory clock, applied (MHz)",
    "gpu_power_limit_w": "GPU power limit (W)", "gpu_enforced_power_limit_w": "GPU power limit, enforced (W)",
    "cpu_model": "CPU model name", "cpu_cores": "CPU cores (logical)", "os": "OS", "kernel": "kernel release",
}


EXAMPLES = 3  # machine ids named per other value of a fact (all counted)


def _value_key(v) -> tuple:
    return (type(v).__name__, v)


def facts(run: dict) -> dict:
    """A run's facts (a record kept before the facts were taken has none: every fact null)."""
    got = run.get("host_facts") or {}
    return {k: got.get(k) for k in HOST_FACTS}


def _date(run: dict) -> str | None:
    return (run.get("started") or "")[:10] or None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _values(out: list[dict]) -> tuple[dict, dict]:
    """Per device model: its machines, and per fact each recorded value with the machines that have it."""
    by_model: dict[tuple, list[dict]] = {}
    for e in out:
        for d in e["device_models"]:
            by_model.setdefault((d["device_class"], d["device_model"]), []).append(e)
    values: dict[tuple, dict[str, dict]] = {}
    for model, es in by_model.items():
        per_fact: dict[str, dict] = {k: {} for k in HOST_FACTS}
        for e in es:
            for k in HOST_FACTS:
                v = e["facts"][k]
                if v is not None:
                    per_fact[k].setdefault(_value_key(v), (v, []))[1].append(e["machine"])
        values[model] = per_fact
    return by_model, values


def machines(runs: list[dict]) -> list[dict]:
    """ledger.json `machines` (the module doc), in the order of their ids; `runs` are the stored run
    records."""
    mine: dict[str, list[dict]] = {}
    for r in sorted(runs, key=lambda r: (r.get("started") or "", r["run_id"], r["digest"])):
        if r.get("machine"):
            mine.setdefault(r["machine"], []).append(r)
    out = []
    for machine, rs in sorted(mine.items()):
        changed = []
        for k in HOST_FACTS:
            values = list(dict.fromkeys(v for r in rs if (v := facts(r)[k]) is not None))
            if len(values) > 1:
                changed.append({"fact": k, "label": LABELS[k], "values": values})
        models = sorted({(kind, model) for r in rs for kind, model in (r.get("devices") or {}).items()
                         if model})
        out.append({"machine": machine,
                    "device_models": [{"device_class": k, "device_model": m} for k, m in models],
                    "runs": [r["digest"][:12] for r in rs], "first": _date(rs[0]), "last": _date(rs[-1]),
                    "facts": facts(rs[-1]), "changed": changed})
    by_model, values = _values(out)
    for e in out:
        differs, peers = [], set()
        for d in e["device_models"]:
            model = (d["device_class"], d["device_model"])
            peers.update(o["machine"] for o in by_model[model] if o is not e)
            for k in HOST_FACTS:
                here = e["facts"][k]
                if here is None:
                    continue
                others = [{"value": v, "machines": len(ms), "examples": ms[:EXAMPLES]}
                          for vk, (v, ms) in values[model][k].items() if vk != _value_key(here)]
                if others:
                    differs.append({"device_model": d["device_model"], "fact": k, "label": LABELS[k],
                                    "value": here, "others": others})
        e["same_model_machines"] = len(peers)
        e["differs"] = differs
        others = _plural(len(peers), "other machine")
        if not peers:
            e["compared"] = "No other machine of its device models in the store: nothing to compare"
        elif not differs:
            e["compared"] = f"The same recorded facts as the {others} of its device models"
        else:
            labels = ", ".join(sorted({d["label"] for d in differs}))
            e["compared"] = f"Differs from the {others} of its device models in: {labels}"
    return out
