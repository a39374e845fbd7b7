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
       "machine with its value (that grew with the square of the machines)",
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
    seen), counted, with the first three machine ids of each value (by id)."""
    for m in doc.get("machines") or []:
        for d in m.get("differs") or []:
            grouped: dict[str, dict] = {}
            for o in d.get("others") or []:
                g = grouped.setdefault(repr(o["value"]), {"value": o["value"], "machines": 0, "ids": []})
                g["machines"] += 1
                g["ids"].append(o["machine"])
            d["others"] = [{"value": g["value"], "machines": g["machines"], "examples": sorted(g["ids"])[:3]}
                           for g in grouped.values()]
    doc["schema_version"] = 3
    return doc


FORMAT = Format("ledger", HISTORY, {2: to_2, 3: to_3}, stamped_from=1)
