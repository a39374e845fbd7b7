"""ledger.json, the ledger's views (`reproduce.py ledger`): versions.

An output, as report.json: built again from the ledger's store, never upgraded in place, so its steps
only let a reader of an old ledger.json see the current shape, or say that it cannot."""

from __future__ import annotations

from reprokit.errors import UserError
from reprokit.formats.chain import Format

HISTORY = {
    1: "2026-11-28: first version (`reproduce.py ledger`: runs, published numbers with their "
       "re-measurements, claims by device model, the build's refusals)",
    2: "2026-11-29: the views: `rules`; each run's `host_facts`; a measurement's `machine`; the claims "
       "map (`claim_columns`, per claim and device model its class, status counts and each run's pairs "
       "with their measured speed-up and interval); `cells` (per cell and device model: the runs' "
       "distribution, percentiles, between-unit spread, history) and `unstable`; `machines`",
    3: "2026-11-29: a machine's `differs` gives, per fact, each other value with how many machines of the "
       "device model have it and the first three of them (`machines`, `examples`), no longer every other "
       "machine with its value (that grew with the square of the machines); a claim's device model "
       "defines its pairs once (`pairs`: cells, published speed-up and hardware) and each run's status "
       "gives its run and per pair the definition's index and the measurement (no run id, date, "
       "rejudged or text again: the run's are in `runs`, the text is made from the fields); an unstable "
       "cell's `runs` are the short digests of the runs in its pairs (their values: the cell's runs) and "
       "`pair_count` counts its pairs; a cell's `disjoint` gives the count of its pairs, the runs in them "
       "and the first 20 pairs (the pairs grew with the square of the runs)",
}


def to_2(doc: dict) -> dict:
    """Version 2's views need what version 1 never held (the machines' facts, the claim pairs' ratios,
    each measurement's machine), so a version 1 ledger.json cannot be brought up: it is refused, and
    built again from its store instead."""
    raise UserError("a ledger.json of format version 1 lacks what version 2 shows (machine facts, claim "
                    "ratios, the views by cell and machine); build it again: `reproduce.py ledger DIR... "
                    "--store STORE` (the store keeps the runs; runs stored by an older kit show null facts "
                    "until they are taken into a new --store)")


def to_3(doc: dict) -> dict:
    """Each machine's `differs` entry: its other machines grouped by their value (in the order first
    seen), counted, with the first three machine ids of each value (by id); each claim's pairs
    defined once per device model, its statuses reduced to the run, its status and the measurements;
    each cell's `disjoint` pairs counted, with the runs in them and the first 20."""
    for m in doc.get("machines") or []:
        for d in m.get("differs") or []:
            grouped: dict[str, dict] = {}
            for o in d.get("others") or []:
                g = grouped.setdefault(repr(o["value"]), {"value": o["value"], "machines": 0, "ids": []})
                g["machines"] += 1
                g["ids"].append(o["machine"])
            d["others"] = [{"value": g["value"], "machines": g["machines"], "examples": sorted(g["ids"])[:3]}
                           for g in grouped.values()]
    pair = ("better_cell", "worse_cell", "published_speedup", "published_on")
    measured = ("status", "ratio", "ratio_low", "ratio_high", "interval", "device")
    for c in doc.get("claims") or []:
        for d in c.get("devices") or []:
            defs: dict[str, int] = {}
            d["pairs"], statuses = [], []
            for st in d.get("statuses") or []:
                pairs = []
                for p in st.get("pairs") or []:
                    one = {f: p.get(f) for f in pair}
                    k = repr(sorted(one.items()))
                    if k not in defs:
                        defs[k] = len(d["pairs"])
                        d["pairs"].append(one)
                    pairs.append({"pair": defs[k], **{f: p.get(f) for f in measured}})
                statuses.append({"run": st.get("run"), "status": st.get("status"), "pairs": pairs})
            d["statuses"] = statuses
    for u in doc.get("unstable") or []:
        u["runs"] = [r["run"] if isinstance(r, dict) else r for r in u.get("runs") or []]
        u["pair_count"] = len(u.pop("pairs", None) or [])
    for c in doc.get("cells") or []:
        pairs = c.get("disjoint") or []
        if isinstance(pairs, list):
            inside = {r for pair in pairs for r in pair}
            c["disjoint"] = {"count": len(pairs), "runs": [r["run"] for r in c.get("runs") or []
                                                            if r.get("run") in inside], "pairs": pairs[:20]}
    doc["schema_version"] = 3
    return doc


FORMAT = Format("ledger", HISTORY, {2: to_2, 3: to_3}, stamped_from=1)
