"""Stand-ins: what each substitution a cell reports means for a verdict (data/standins.yaml).

A cell result lists the substitutions it made (`implementation.substitutes`: {original, used, why},
written by bench/ inside the stack). `classify` gives each one its kind from the data: a `mechanism`
stand-in replaces what a published number is about (cuDNN's LSTM, Theano's compiled scan, Keras on
MXNet), and a number or claim measured through one gets no verdict. A substitution the data does not
know is treated as a mechanism (no verdict) and marked unclassified. Pure functions; the data file is
loaded and validated once.
"""

from __future__ import annotations

import re

from reprokit import kitdata
from reprokit.reader.result import CellResult

MECHANISM = "mechanism"
KIND_ORDER = ("mechanism", "framework", "version", "api", "data", "workload", "state")


def load() -> dict:
    """The whole standins.yaml document (validated)."""
    return kitdata.load("standins")


def classify(sub: dict) -> dict:
    """One substitution {original, used, why} with its class: {"id", "kind", "short", "mechanism",
    "classified", "original", "used", "why"}."""
    original, used = str(sub.get("original") or ""), str(sub.get("used") or "")
    for e in load()["standins"]:
        if re.search(e["original"], original) and ("used" not in e or re.search(e["used"], used)):
            return {"id": e["id"], "kind": e["kind"], "short": e["short"],
                    "mechanism": e["kind"] == MECHANISM,
                    "classified": True, "original": original, "used": used, "why": sub.get("why")}
    return {"id": None, "kind": MECHANISM, "short": f"unclassified: {used} for {original}", "mechanism": True,
            "classified": False, "original": original, "used": used, "why": sub.get("why")}


def of_cell(cell: CellResult | None) -> list[dict]:
    """Every substitution of a cell result, classified, mechanisms first."""
    out = [classify(s) for s in (cell.implementation.substitutes if cell is not None else ())]
    return sorted(out, key=lambda s: KIND_ORDER.index(s["kind"]))


def mechanisms(cell: CellResult | None) -> list[dict]:
    """The substitutions of a cell that replace a mechanism (no verdict through them)."""
    return [s for s in of_cell(cell) if s["mechanism"]]
