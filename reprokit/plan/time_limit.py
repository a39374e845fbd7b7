"""`run --time-limit`: which cells a run fits in its wall-time limit, in which order.

The order is what the run learns per second: cells that decide a verdict or a claim first, by the
verdicts and claim pairs they decide per second of their planned cost; then the context cells, by the
published numbers they put a measurement beside per second; cells of unknown cost last. Cells are
taken in that order while their planned cost fits what is left of the limit (a cell that does not fit
is passed over, a cheaper one after it may still fit); the rest are *left*: never run, listed with the
time they would take. The plan's costs are estimates (reprokit/plan/design.py `planned_s`), so the
executor checks again before each process and stops a process still running at the limit
(reprokit/run/serial.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fit:
    order: list[str]  # the cell ids to run, in this order
    left: list[tuple[str, float | None]]  # (cell id, its planned seconds or None) never run
    planned_s: float  # the planned cost of what runs (cells of unknown cost count 0)
    text: str


def priority(cell_id: str, role: dict, cost: float | None) -> tuple:
    """Sort key: deciding cells by decisions per second, then context cells by published numbers
    shown per second; unknown cost last; ties by cost, then id."""
    deciding = role.get("role") == "decides"
    gain = len(role.get("numbers") or []) + len(role.get("claims") or []) if deciding \
        else int(role.get("published") or 0)
    rate = gain / cost if cost else 0.0
    return (0 if deciding else 1, cost is None, -rate, cost or 0.0, cell_id)


def fit(cells: list[str], roles: dict[str, dict], costs: dict[str, float | None], limit_s: float,
        reserve_s: float = 0.0) -> Fit:
    """The cells that fit in `limit_s` less `reserve_s` (what the run spends outside its cells: probes,
    environments, the report), in priority order."""
    ranked = sorted(cells, key=lambda c: priority(c, roles.get(c) or {}, costs.get(c)))
    room = max(0.0, limit_s - reserve_s)
    order: list[str] = []
    left: list[tuple[str, float | None]] = []
    used = 0.0
    for c in ranked:
        cost = costs.get(c)
        if cost is None:  # unknown: tried last, if time is left when its turn comes
            order.append(c)
        elif used + cost <= room:
            order.append(c)
            used += cost
        else:
            left.append((c, cost))
    text = (f"--time-limit {limit_s / 60:.4g} min: {len(order)} of {len(cells)} cells planned "
            f"(about {used / 60:.1f} min of cell time)")
    if left:
        need = sum(c or 0.0 for _, c in left)
        text += f"; {len(left)} left, which would take about {need / 60:.1f} min more"
    return Fit(order, left, round(used, 1), text)
