"""Plan a run: which cells go to which stack, with which budget, as job files for bench/harness.py.

A plan is made in two steps, both before anything runs: `make_plan` selects the suite's cells under
the options; `decide` (reprokit/runners/host_preflight.py, which probes what the runner would use) adds,
for the chosen runner and host, each runnable cell's preflight verdict (reprokit/plan/preflight.py),
which also names the stack whose image runs the cell (its own, or a link of its fallback chain:
reprokit/plan/fallback.py). `execute` then only runs and records. Plans are not modified in place:
`dataclasses.replace` makes the next one."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import dataclass, field, replace

from reprokit import formats, kitdata
from reprokit.catalog import datasets
from reprokit.catalog.suites import FP32, FRAMEWORK_DEFAULT, Cell, Suite, float_precision
from reprokit.errors import UserError
from reprokit.plan import code_version
from reprokit.reader.status import Skip


@dataclass
class Options:
    quick: bool = False
    protocol: str = "budget"  # or "published"
    device: str = "cpu"
    cells: list[str] = field(default_factory=list)  # glob patterns; empty = all
    min_samples: int | None = None
    time_budget_s: float | None = None
    data: dict | None = None  # `run --data DIR`: datasets.prepare_run's record; None = stand-ins
    repeat: int = 1  # `run --repeat K`: each cell in K fresh processes, interleaved across cells
    allow_changed_data: bool = False  # `run --resume --allow-changed-data`: mix cells of two data
    design: dict | None = None  # the default design when no --repeat K (reprokit/plan/design.py run_design)
    time_limit_s: float | None = None  # `run --time-limit`: the whole run's wall-time limit
    time_limit_text: str | None = None  # what the limit fitted and left (reprokit/plan/time_limit.py)
    deadline: float | None = None  # time.time() at which the limit ends (no process starts after it)


@dataclass
class Plan:
    suite: Suite
    options: Options
    runnable: list[Cell]
    not_runnable: list[tuple[Cell, str, str]]  # (cell, status, reason)
    # set by `decide`: the runner, the host fingerprint, and {cell id: preflight verdict}
    runner: str | None = None
    host: dict | None = None
    verdicts: dict[str, dict] | None = None
    # the cells --time-limit left, by id (their status is `skipped`, their reason the skip's words)
    skips: dict[str, Skip] = field(default_factory=dict)

    def by_stack(self) -> dict[str, list[Cell]]:
        out: dict[str, list[Cell]] = {}
        for c in self.runnable:
            out.setdefault(c.stack, []).append(c)
        return out

    def run_stack(self, cell: Cell) -> str:
        """The stack whose image runs `cell`: a fallback link preflight chose, else its own."""
        from reprokit.plan import fallback

        return fallback.stack_to_run(cell.stack, (self.verdicts or {}).get(cell.id))


def select(suite: Suite, patterns: list[str]) -> list[Cell]:
    if not patterns:
        return list(suite.cells)
    chosen = [c for c in suite.cells if any(fnmatch.fnmatchcase(c.id, p) for p in patterns)]
    if not chosen:
        raise UserError(f"no cell of suite {suite.name} matches {' '.join(patterns)}; "
                        f"see `reproduce.py list --suite {suite.name}`")
    return chosen


def implemented_cells(suite: Suite, patterns: list[str]) -> list[Cell]:
    """The cells `patterns` select that have a workload, on any device: what chooses the runner and
    the device (their stacks, their environments) before the plan is made."""
    return [c for c in select(suite, patterns) if c.implemented]


def make_plan(suite: Suite, options: Options, on_cpu: set[str] | frozenset[str] = frozenset()) -> Plan:
    """The cells `options` select, runnable or not with why. `on_cpu`: ids of cells that run on the CPU
    in a GPU run (`--device auto` where their environment or the GPU cannot run them:
    runners/select.py local_device); a framework-default twin is skipped wherever it would run on a
    CPU."""
    runnable, not_runnable = [], []
    for c in select(suite, options.cells):
        cpu = options.device != "gpu" or c.id in on_cpu
        if not c.implemented:
            not_runnable.append((c, "not_implemented", c.reason or "workload not implemented"))
        elif c.precision == FRAMEWORK_DEFAULT and cpu:
            not_runnable.append((c, "skipped", float_precision()["cpu_reason"]))
        else:
            runnable.append(replace(c, device="cpu") if c.id in on_cpu else c)
    return Plan(suite, options, runnable, not_runnable)


def budget_for(cell: Cell, suite: Suite, options: Options) -> dict:
    """The cell's sampling budget. `--quick` shortens sampling (quick_budget), never warm-up: its
    warm-up count is always the full budget's (the suite's `defaults.budget.warmup`, then the
    cell's own budget override), so warm-up effects (JIT profiling runs, allocator growth) are not
    timed as samples under --quick."""
    key = "quick_budget" if options.quick else "budget"
    b = dict(suite.defaults[key])
    if cell.budget:
        b.update(cell.budget)
    if options.quick:
        full = {**suite.defaults["budget"], **(cell.budget or {})}
        if "warmup" in full:
            b["warmup"] = full["warmup"]
        else:
            b.pop("warmup", None)
    if options.min_samples is not None:
        b["min_samples"] = options.min_samples
    if options.time_budget_s is not None:
        b["time_budget_s"] = options.time_budget_s
    b["max_samples"] = max(b.get("max_samples", 1000), b["min_samples"])
    return b


def job_cell(cell: Cell, suite: Suite, options: Options) -> dict:
    out = {
        "id": cell.id, "source": cell.source, "workload": cell.workload, "variant": cell.variant,
        "params": {**cell.params, **datasets.cell_data_params(cell, options.data)},
        "metrics": list(cell.metrics),
        "budget": budget_for(cell, suite, options), "protocol": options.protocol,
        "timeout_s": cell.timeout_s or suite.defaults["timeout_s"],
        "code": code_version.digest(cell.workload),
    }
    if cell.precision != FP32:  # a framework_default twin; absent = fp32 (the harness's default)
        out["precision"] = cell.precision
    if cell.device:  # published on a CPU: the cell runs there whatever the job's device
        out["device"] = cell.device
    return out


def cell_spec(cell: Cell, suite: Suite, options: Options) -> str:
    """sha256 of what a cell measures: its job entry and stack, without its id, its time limit and
    where its data lies. A resumed run compares them with the run's (reconcile.check_cell_specs), so
    cells measured under other suite data (another budget, other params) are never mixed silently."""
    spec = job_cell(cell, suite, options)
    for key in ("id", "timeout_s", "code"):  # the code version is the history's concern, not the data's
        spec.pop(key, None)
    spec["params"] = {k: v for k, v in spec["params"].items() if k != "data_dir"}
    spec["stack"] = cell.stack
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()


def cell_specs(plan: Plan) -> dict[str, str]:
    """{cell id: cell_spec} of every runnable cell of the plan."""
    return {c.id: cell_spec(c, plan.suite, plan.options) for c in plan.runnable}


def bench_facts() -> dict:
    """The facts of reprokit/data that bench/ needs, for the job file (bench/ runs inside old stacks
    and cannot read them; it keeps no copy): where TF32 exists (float_precision.yaml) and the
    stand-in data sets' sizes (datasets.yaml)."""
    fp = float_precision()
    tf32 = fp["tf32"]
    return {"tf32": {"min_compute_capability": tf32["min_compute_capability"], "min_cuda": tf32["min_cuda"],
                     "since": {name: spec["since"] for name, spec in fp["frameworks"].items()}},
            "stand_ins": datasets.stand_in_specs()}


def make_job(plan: Plan, stack: str, run_id: str, kit: dict, out_dir: str,
             cells: list[Cell] | None = None) -> dict:
    """The job file of `stack`: its own cells, or `cells` (those a fallback chain moved to it too)."""
    cells = plan.by_stack()[stack] if cells is None else cells
    job = {"schema_version": formats.version("job"), "run_id": run_id, "stack": stack, "kit": kit,
           "out_dir": out_dir, "device": plan.options.device,
           "cells": [job_cell(c, plan.suite, plan.options) for c in cells], "facts": bench_facts()}
    for jc in job["cells"]:  # preflight expects PTX JIT: more time (compat.yaml jit)
        raise_timeout(jc, (plan.verdicts or {}).get(jc["id"]))
    if plan.options.data:  # the host directory the cells' data_dir params lie in (runners mount it)
        job["data_root"] = plan.options.data["root"]
    return job


def raise_timeout(job_cell: dict, verdict: dict | None, compat: dict | None = None) -> None:
    """Give a job cell whose preflight verdict is `jit` compat.yaml's `jit.timeout_allowance_s` more
    time (recorded as the cell's `timeout_jit_allowance_s`)."""
    if not verdict or verdict.get("status") != "jit":
        return
    jit = (compat or kitdata.load("compat"))["jit"]
    allowance = float(jit["timeout_allowance_s"])
    job_cell["timeout_s"] = float(job_cell["timeout_s"]) + allowance
    job_cell["timeout_jit_allowance_s"] = allowance
