"""Reconcile a run's record (run.json) with the result files on disk, writing what changed; resume's checks.

`reconcile` is reprokit/reader/reconcile.py's (what is adopted, moved aside, merged again, marked
missing or interrupted: see there) with its changes written through reprokit/run/record.py: the bad
files moved aside, a re-merged result, run.json. Used by `run --resume` before it plans, by the
executor at the end of every run and by `report`; with `modify=False` (or while a live driver holds
the run's lock) nothing is written or moved. The checks that a resumed run measures what the run
measured (`check_resume`, `check_cell_specs`) are here too.
"""

from __future__ import annotations

from pathlib import Path

from reprokit import results
from reprokit.errors import UserError
from reprokit.reader import reconcile as reading
from reprokit.reader.reconcile import Reconciled
from reprokit.run import record


def reconcile(rundir: results.RunDir, run: dict | None = None, stacks: dict[str, str] | None = None,
              modify: bool = True, say=None) -> Reconciled:
    """Bring run.json in line with cells/ (reprokit/reader/reconcile.py), writing the changes unless
    `modify` is False or a live driver holds the run's lock."""
    return reading.reconcile(rundir, run, stacks, modify, say, writer=record.RecordWriter(rundir))


# -- resume must measure under the same conditions ----------------------------------------------
def resume_options(options, runner: str, suite: str) -> dict:
    """The settings of a run that change its measurements, as run.json records them."""
    return {"suite": suite, "runner": runner, "device": options.device, "quick": bool(options.quick),
            "protocol": options.protocol, "repeat": options.repeat,
            "min_samples": options.min_samples, "time_budget_s": options.time_budget_s,
            "data": (options.data or {}).get("root")}


_FLAGS = {"suite": "--suite", "runner": "--runner", "device": "--device", "quick": "--quick",
          "protocol": "--protocol", "repeat": "--repeat", "min_samples": "--min-samples",
          "time_budget_s": "--time-budget", "data": "--data", "design": "--design"}


def _show(key: str, value) -> str:
    if key == "quick":
        return "with --quick" if value else "without --quick"
    if key == "suite":
        return f"for suite {value}"
    if key == "runner":
        return f"with the {value} runner (--runner {value})"
    if key == "device":
        return f"on device {value} (--device {value})"
    if key == "repeat":
        return f"with --repeat {value}"
    if key == "protocol":
        return f"with --protocol {value}"
    if key == "design" and value == "full":
        return "with a fixed design (--design full, or --repeat K)"
    if value is None:
        return f"without {_FLAGS[key]}"
    return f"with {_FLAGS[key]} {value}"


def changed_cells(run: dict, specs: dict[str, str]) -> list[str]:
    """The cells whose measured spec (plan.cell_spec) differs from the one the run recorded when it
    first planned them (a run that recorded none: nothing is compared)."""
    stored = run.get("cell_specs") or {}
    return sorted(cid for cid, digest in specs.items() if cid in stored and stored[cid] != digest)


def check_cell_specs(run: dict, specs: dict[str, str], allow: bool) -> list[str]:
    """UserError (one line) when the suite's data changed what a cell of the run measures since the
    run planned it, unless `allow` (--allow-changed-data): then the changed cells, to record."""
    changed = changed_cells(run, specs)
    if changed and not allow:
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        raise UserError(f"cannot resume {run.get('run_id')}: the suite's data changed what {shown} "
                        "measures (budget, parameters, metrics or stack) since the run started, so "
                        "its results would mix two definitions; start a new run, resume with the kit "
                        "that started it, or pass --allow-changed-data (recorded in run.json)")
    return changed


def check_resume(run: dict, now: dict) -> None:
    """UserError (one line) when a setting that changes measurements differs from the run's.
    A setting the run did not record is not compared, nor what `now`
    leaves out (the command checks the plain options before it prepares data or picks a runner)."""
    stored = {"suite": run.get("suite"), "runner": run.get("runner"),
              "quick": bool(run.get("quick")), "protocol": run.get("protocol"),
              "repeat": int(run.get("repeat") or 1),
              # by role (auto), or every cell the same K (--design full, --repeat K, or one process)
              "design": "auto" if (run.get("design") or {}).get("kind") == "auto" else "full"}
    opts = run.get("options")
    if isinstance(opts, dict):
        for k in ("device", "min_samples", "time_budget_s"):
            if k in opts:
                stored[k] = opts[k]
        if "data" in opts:
            stored["data"] = opts["data"]
    for key, was in stored.items():
        if key not in now:
            continue
        given = now[key]
        if key == "data" and was is not None and given is not None:
            same = Path(str(was)).resolve() == Path(str(given)).resolve()
        elif key == "time_budget_s" and was is not None and given is not None:
            same = float(was) == float(given)
        else:
            same = was == given
        if not same:
            raise UserError(f"cannot resume {run.get('run_id')}: it was measured {_show(key, was)}, "
                            f"this command measures {_show(key, given)}; resume with the run's "
                            f"options (its command is in run.json, argv) or start a new run")
