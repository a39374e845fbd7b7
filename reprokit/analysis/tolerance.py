"""How far a same-model re-measurement may lie from a published figure before it DEVIATES, derived per
number, each term with its source.

    tolerance = rounding + between-unit + stated

- rounding: half a unit of the printed figure's last digit, relative to the figure (`rounding`; a
  trailing zero the YAML number dropped makes it wider, never narrower);
- between-unit: another physical unit of the publication's device model differs by this much
  (reprokit/data/unit_variation.yaml, per device class, sourced or marked as the kit's own choice);
- stated: the tolerance the source itself states for its figures (sources.yaml `stated_tolerance`),
  when it states one.

The terms add (a bound, not a root-sum-square: each is a range, not a standard deviation). A source's
flat `tolerance` in sources.yaml replaces the derivation: the kit's own sources set none now; a run
judged with a data snapshot that holds one is judged with it, as it was then. A claim's ratio of two
cells measured on one unit cancels the between-unit term (reprokit/analysis/claims.py says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from reprokit import kitdata


@dataclass(frozen=True)
class Term:
    name: str  # "rounding", "between_unit", "stated" or "flat"
    value: float  # relative
    source: str | None  # where it comes from; None: the kit's own choice or unsourced
    verified: bool
    kind: str | None = None  # the device class of a between-unit term

    def doc(self) -> dict:
        return {"term": self.name, "value": self.value, "source": self.source, "verified": self.verified,
                "kind": self.kind}


@dataclass(frozen=True)
class Tolerance:
    terms: tuple[Term, ...]

    @property
    def value(self) -> float:
        return sum(t.value for t in self.terms)

    @property
    def flat(self) -> bool:
        return any(t.name == "flat" for t in self.terms)

    def text(self) -> str:
        """'± 8.5 % (rounding 0.5 % + between units 8 %)' or '± 10 % (flat, unsourced)'."""
        if self.flat:
            return f"± {_pct(self.value)} (flat, unsourced)"
        parts = " + ".join(f"{_WORDS[t.name]} {_pct(t.value)}{'' if t.verified else ' (unverified)'}"
                           for t in self.terms)
        return f"± {_pct(self.value)} ({parts})"

    def docs(self) -> list[dict]:
        return [t.doc() for t in self.terms]


_WORDS = {"rounding": "rounding", "between_unit": "between units", "stated": "stated by the source",
          "flat": "flat"}


def _pct(x: float) -> str:
    return f"{100 * x:.3g} %"


def rounding(value: float) -> float:
    """Half a unit of the last digit of `value` as the data holds it: of its last decimal (an integer,
    or a float with no decimals but zero, to the unit), or its exponent's in scientific notation."""
    text = repr(value)
    if "e" in text or "E" in text:
        exp = Decimal(text).normalize().as_tuple().exponent
        return 0.5 * 10.0 ** int(exp) if isinstance(exp, int) else 0.0
    decimals = len(text.partition(".")[2].rstrip("0"))
    return 0.5 * 10.0 ** -decimals


def between_unit(kind: str) -> Term:
    """The between-unit term of device class `kind` ("gpu" or "cpu")."""
    entry = kitdata.load("unit_variation")["classes"][kind]
    return Term("between_unit", float(entry["value"]), entry.get("source") or entry.get("why"),
                bool(entry["verified"]), kind)


def for_number(number: dict, source: dict, device_kind: str) -> Tolerance:
    """The tolerance of published `number` (its value as printed), from its `source` entry of
    sources.yaml, on a device of class `device_kind` (the publication's)."""
    if source.get("tolerance") is not None:
        return Tolerance((Term("flat", float(source["tolerance"]), None, False),))
    value = abs(float(number["value"]))
    terms = [Term("rounding", rounding(number["value"]) / value if value else 0.0,
                  "half a unit of the printed figure's last digit", True),
             between_unit(device_kind)]
    stated = source.get("stated_tolerance")
    if stated:
        terms.append(Term("stated", float(stated["value"]), stated["where"], True))
    return Tolerance(tuple(terms))
