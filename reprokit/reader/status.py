"""Why a cell was left or stopped, as data and in words: the one place both are made.

- `Skip`: a cell (or one of its processes) the run's --time-limit left or stopped, recorded in its
  run.json entry and its result as `skip` (reprokit/schemas/run.schema.json `$defs/skip`);
  `Skip.reason()` is the sentence the entry's `reason` holds.
- `Stop`: a sequential cell that ran fewer processes than its cap (run.json `design.cells.<id>.stop`);
  `Stop.text()` is its sentence.

The run writes both (reprokit/run/), the report and the analysis read them: never the sentence.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

SkipWhen = Literal["planned", "before_start", "while_running"]
StopBy = Literal["decided", "cap", "time_limit"]
FIX = "run it without --time-limit, or with --cells"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.4g} min"


@dataclass(frozen=True)
class Skip:
    """A cell the run's --time-limit left (`planned`, `before_start`) or stopped (`while_running`)."""
    when: SkipWhen
    limit_s: float | None = None  # the run's --time-limit
    left_s: float | None = None  # what the limit left when the cell's turn came (or of its own limit)
    needs_s: float | None = None  # its planned time (or its own time limit, while running)
    ran_s: float | None = None  # how long it ran before the limit stopped it
    by: Literal["time_limit"] = "time_limit"

    def __post_init__(self) -> None:
        if self.when not in ("planned", "before_start", "while_running"):
            raise ValueError(f"a skip's `when` is planned, before_start or while_running, not {self.when!r}")

    @classmethod
    def from_doc(cls, doc: Any) -> Skip | None:
        return cls(**{k: doc.get(k) for k in ("when", "limit_s", "left_s", "needs_s", "ran_s")}) \
            if isinstance(doc, dict) else None

    def to_doc(self) -> dict:
        return asdict(self)

    def reason(self) -> str:
        """The cell's `reason`: what the limit did and how to measure it anyway."""
        if self.when == "while_running":
            return (f"stopped at the run's --time-limit after {self.ran_s or 0:.0f} s (the limit left it "
                    f"{self.left_s or 0:.0f} s of its {self.needs_s or 0:.0f} s; {FIX})")
        head = f"left by --time-limit {_minutes(self.limit_s)}: " if self.limit_s else \
            "left by --time-limit: "
        if self.when == "planned":
            body = (f"it would take about {self.needs_s / 60:.1f} min" if self.needs_s else
                    "it would take about an unknown time")
        else:
            body = (f"{max(self.left_s or 0.0, 0):.0f} s were left, it needs about {self.needs_s:.0f} s"
                    if self.needs_s else "the limit had passed")
        return f"{head}{body} ({FIX})"


@dataclass(frozen=True)
class Stop:
    """A sequential cell stopped after `after` processes: decided, at its cap, or by --time-limit."""
    by: StopBy
    after: int
    open: tuple[str, ...] = field(default_factory=tuple)  # at the cap: what is still undecided

    @classmethod
    def from_doc(cls, doc: Any) -> Stop | None:
        if not isinstance(doc, dict):
            return None
        return cls(doc["by"], int(doc["after"]), tuple(doc.get("open") or ()))

    def to_doc(self) -> dict:
        return {"by": self.by, "after": self.after, "open": list(self.open)}

    def text(self) -> str:
        n = self.after
        if self.by == "decided":
            return f"decided after {n} processes: every verdict and claim pair it feeds"
        if self.by == "cap":
            return f"undecided after {n} processes (the design's cap): " + "; ".join(self.open)
        return f"stopped by --time-limit after {n} processes, before it was decided"
