"""The claims map: each claim's status on each device model, grouped by device class, run by run.

With the measured speed-up of each pair and its interval beside the published one.

A stored claim record (reprokit/ledger/fields.py) says, per run, on which device kinds the claim was
looked at (`checked`: class, model, the status there and the pairs with their measured ratio); a
record kept before `checked` was taken names only its device models (`devices`) and the claim's status:
its class is then the run's device kind of that model, and its pairs are not known.

`columns`: the device models that any claim was looked at on, GPUs first, then CPUs, then models of no
recorded class, each by name. Per claim and model, `counts` says how many runs gave each status (in
reprokit/analysis/claims.py's PRECEDENCE order), `latest` gives the latest run's measured speed-ups
(null when it measured none), `pairs` defines each pair once (its cells and the published speed-up
and hardware), and `statuses` lists the runs oldest first (by their digest: the run's date, id and
whether it is a copy rejudged with newer data are in ledger.json `runs`), each with its status and per
pair the index of its definition, its status and its measured speed-up and interval.
"""

from __future__ import annotations

import json

from reprokit.analysis.claims import PRECEDENCE

CLASS_ORDER = {"gpu": 0, "cpu": 1}
CLASS_LABEL = {"gpu": "GPU", "cpu": "CPU"}
NO_DEVICE = "(no device recorded)"
PAIR = ("better_cell", "worse_cell", "published_speedup", "published_on")  # a pair's definition
MEASURED = ("status", "ratio", "ratio_low", "ratio_high", "interval", "device")  # a run's measurement of it


def _short(cell: str | None) -> str:
    """A cell id without its source prefix: '003/pytorch/jit/forward' -> 'pytorch/jit/forward'."""
    parts = str(cell or "?").split("/")
    return "/".join(parts[1:]) if len(parts) > 1 and parts[0].isdigit() else str(cell)


def pair_text(p: dict) -> str:
    """'pytorch/jit/forward over pytorch/eager/forward: 0.982x [0.864, 1.34] (published 1.34x on
    Intel Haswell-E)'; a pair without a measured ratio gives its status alone."""
    head = f"{_short(p.get('better_cell'))} over {_short(p.get('worse_cell'))}"
    pub = p.get("published_speedup")
    on = ", ".join(p.get("published_on") or []) or "hardware not stated"
    published = f"published {pub:.3g}x on {on}" if pub is not None else "not published as two numbers"
    if p.get("ratio") is None:
        return f"{head}: {p.get('status')}, not measured ({published})"
    lo, hi = p.get("ratio_low"), p.get("ratio_high")
    interval = f" [{lo:.3g}, {hi:.3g}]" if lo is not None and hi is not None else ""
    return f"{head}: {p.get('status')} {p['ratio']:.3g}x{interval} ({published})"


def _checked(doc: dict, run: dict) -> list[dict]:
    """Where a stored claim record says it was looked at (the module doc for older records)."""
    if doc.get("checked") is not None:
        return doc["checked"]
    kinds = {m: k for k, m in (run.get("devices") or {}).items()}
    return [{"device_class": kinds.get(m), "device_model": m, "status": doc.get("status"), "pairs": []}
            for m in doc.get("devices") or [NO_DEVICE]]


def _latest(last: dict) -> str | None:
    """The latest run's measured speed-ups as one line, None when it measured none."""
    measured = [pair_text(p) for p in last["pairs"] if p.get("ratio") is not None]
    if not measured:
        return None
    return f"latest run ({last['date'] or 'date not recorded'}): " + "; ".join(measured)


def compact(statuses: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the pairs' definitions, the statuses): each distinct pair (PAIR fields) once, each run's
    status with its pairs' measured fields (MEASURED) and the index of their definition (`pair`)."""
    defs: dict[str, tuple[int, dict]] = {}
    out = []
    for s in statuses:
        pairs = []
        for p in s["pairs"]:
            d = {f: p.get(f) for f in PAIR}
            i = defs.setdefault(json.dumps(d, sort_keys=True), (len(defs), d))[0]
            pairs.append({"pair": i, **{f: p.get(f) for f in MEASURED}})
        out.append({"run": s["run"], "status": s["status"], "pairs": pairs})
    return [d for _, d in sorted(defs.values(), key=lambda x: x[0])], out


def pairs_of(device: dict, status: dict) -> list[dict]:
    """A status's pairs whole again (definition and measurement), with their text."""
    full = [{**device["pairs"][p["pair"]], **{k: v for k, v in p.items() if k != "pair"}}
            for p in status["pairs"]]
    return [{**p, "text": pair_text(p)} for p in full]


def _column_key(col: tuple[str | None, str]) -> tuple:
    return (CLASS_ORDER.get(col[0], 2), col[1])


def claims(stored: list[tuple[str, dict]], runs: dict[str, dict]) -> tuple[list[dict], list[dict]]:
    """(ledger.json `claims`, ledger.json `claim_columns`) from the store's claim records and its runs
    (by digest)."""
    found: dict[str, dict] = {}
    columns: set[tuple[str | None, str]] = set()
    for digest, doc in stored:
        run = runs[digest]
        entry = found.setdefault(doc["claim_id"], {"id": doc["claim_id"], "source": doc.get("source"),
                                                   "text": doc.get("text"), "devices": {}})
        for where in _checked(doc, run):
            col = (where.get("device_class"), where.get("device_model") or NO_DEVICE)
            columns.add(col)
            entry["devices"].setdefault(col, []).append({
                "run": digest[:12], "run_id": run["run_id"], "started": run.get("started"),
                "date": (run.get("started") or "")[:10] or None,
                "status": where.get("status"), "pairs": where.get("pairs") or []})
    out = []
    for _, c in sorted(found.items()):
        devices = []
        for col in sorted(c["devices"], key=_column_key):
            statuses = sorted(c["devices"][col], key=lambda s: (s["started"] or "", s["run_id"], s["run"]))
            latest = _latest(statuses[-1])
            defs, statuses = compact(statuses)
            got = [s["status"] for s in statuses]
            counts = {s: got.count(s) for s in PRECEDENCE if s in got}
            other = len(got) - sum(counts.values())
            summary = ", ".join([f"{s} x{n}" for s, n in counts.items()]
                                + ([f"not recorded x{other}"] if other else []))
            devices.append({"device_class": col[0], "device_model": col[1], "counts": counts,
                            "summary": summary, "latest": latest, "pairs": defs, "statuses": statuses})
        out.append({**{k: c[k] for k in ("id", "source", "text")}, "devices": devices})
    cols = [{"device_class": k, "class_label": CLASS_LABEL.get(k, "class not recorded"), "device_model": m}
            for k, m in sorted(columns, key=_column_key)]
    return out, cols
