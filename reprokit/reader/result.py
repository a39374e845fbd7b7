"""A cell's result as the model reads it: `CellResult`, frozen, built from a validated cells/*.json.

What the kit defines field by field is typed (identity, status, `skip`, the implementation, the
processes of a `--repeat K` cell); what a stack or a probe reports about itself (metrics with their
samples, fingerprints, the runner's and the GPUs' records) is kept as stored, frozen
(reprokit/reader/frozen.py). A record the document does not have reads as empty (or None where the
schema says "null: not recorded"), so no reader guards against absence. `doc` keeps the stored
document itself (frozen), for the crate and for what builds a new one from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reprokit.reader.frozen import EMPTY, NONE, FrozenDict, FrozenList, freeze, items, mapping, thaw
from reprokit.reader.status import Skip

STATUSES = ("ok", "failed", "crashed", "timeout", "oom", "skipped", "not_implemented", "interrupted",
            "pending")
# a process with these statuses measured nothing and says nothing against the cell's other processes
NOT_MEASURED = ("skipped", "pending", "interrupted")


@dataclass(frozen=True)
class Implementation:
    """What code ran and where it differs from the original (bench/harness.py `implementation`)."""
    framework: str | None = None
    framework_version: str | None = None
    api: str | None = None
    substitutes: FrozenList = NONE  # each {"short", "what", ...}: reprokit/analysis/standins.py reads them
    notes: FrozenList = NONE
    scan_loop: str | None = None
    doc: FrozenDict = field(default=EMPTY, repr=False)

    @classmethod
    def from_doc(cls, doc: Any) -> Implementation:
        d = mapping(doc)
        return cls(d.get("framework"), _str(d.get("framework_version")), d.get("api"),
                   items(d.get("substitutes")), items(d.get("notes")), d.get("scan_loop"), d)

    def label(self) -> str:
        """'framework version api', the parts it has."""
        return " ".join(str(x) for x in (self.framework, self.framework_version, self.api) if x)


@dataclass(frozen=True)
class ProcessEntry:
    """One process of a `--repeat K` cell (its merged result's `processes`)."""
    index: int
    status: str
    reason: str | None
    wall_s: float | None
    process_wall_s: float | None
    result_file: str | None
    log_file: str | None
    node: str | None
    load_avg: FrozenDict
    cut: FrozenDict | None = None  # what it had measured when stopped (merge.cut_summary)

    @classmethod
    def from_doc(cls, doc: Any) -> ProcessEntry:
        d = mapping(doc)
        return cls(int(d.get("index") or 0), str(d.get("status")), d.get("reason"), d.get("wall_s"),
                   d.get("process_wall_s"), d.get("result_file"), d.get("log_file"), d.get("node"),
                   mapping(d.get("load_avg")), _opt(d.get("cut")))


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class CellResult:
    """A cell's result (cells/<cell>.json): a main result or one process's file."""
    run_id: str
    cell_id: str
    source: str | None
    stack: str
    workload: str
    variant: str | None
    status: str
    reason: str | None
    skip: Skip | None = None
    params: FrozenDict = EMPTY
    process: int | None = None
    repeat: int | None = None
    processes: tuple[ProcessEntry, ...] = ()
    started: str | None = None
    finished: str | None = None
    wall_s: float | None = None
    device: str | None = None
    protocol: str | None = None
    implementation: Implementation = field(default_factory=Implementation)
    metrics: FrozenDict = EMPTY  # name -> the metric as stored (samples, unit, method, ...)
    stack_fingerprint: FrozenDict = EMPTY
    kit: FrozenDict = EMPTY
    code: str | None = None  # the cell's code version (reprokit/plan/code_version.py); None: not recorded
    traceback: str | None = None
    extra: FrozenDict = EMPTY
    log_file: str | None = None
    runner: FrozenDict = EMPTY  # what its runner saw; empty: a result adopted without it
    gpu_state: FrozenDict | None = None  # NVML around a GPU cell; None: not watched
    precision: FrozenDict | None = None  # bench/float_mode.py; None: not recorded
    ran_on: FrozenDict | None = None
    jit_warmup_s: float | None = None
    threads: FrozenDict | None = None
    energy: FrozenDict = EMPTY  # per timed metric
    jit_cache: str | None = None  # compiled, cold, unknown, warm, none, n/a (reprokit/probes/jit_cache.py)
    gpus: FrozenList | None = None  # None: not recorded (the model reads the host's, labelled)
    gpus_source: str | None = None
    environment: FrozenDict | None = None
    load_avg: FrozenDict = EMPTY
    cut: FrozenDict | None = None  # what a stopped process had measured (format 6); None: nothing
    doc: FrozenDict = field(default=EMPTY, repr=False)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"cell {self.cell_id}: status {self.status!r} is not one of {STATUSES}")

    @classmethod
    def from_doc(cls, doc: dict) -> CellResult:
        """The model of a validated cell result (reprokit/schemas/cell_result.schema.json)."""
        d = freeze(doc)
        return cls(
            run_id=d["run_id"], cell_id=d["cell_id"], source=d.get("source"), stack=d["stack"],
            workload=d["workload"], variant=d.get("variant"), status=d["status"], reason=d.get("reason"),
            skip=Skip.from_doc(d.get("skip")), params=mapping(d.get("params")), process=d.get("process"),
            repeat=d.get("repeat"),
            processes=tuple(ProcessEntry.from_doc(p) for p in items(d.get("processes"))),
            started=d.get("started"), finished=d.get("finished"), wall_s=d.get("wall_s"),
            device=d.get("device"), protocol=d.get("protocol"),
            implementation=Implementation.from_doc(d.get("implementation")),
            metrics=mapping(d.get("metrics")), stack_fingerprint=mapping(d.get("stack_fingerprint")),
            kit=mapping(d.get("kit")), code=d.get("code"), traceback=d.get("traceback"),
            extra=mapping(d.get("extra")),
            log_file=d.get("log_file"), runner=mapping(d.get("runner")), gpu_state=_opt(d.get("gpu_state")),
            precision=_opt(d.get("precision")), ran_on=_opt(d.get("ran_on")),
            jit_warmup_s=d.get("jit_warmup_s"), threads=_opt(d.get("threads")),
            energy=mapping(d.get("energy")), jit_cache=d.get("jit_cache"),
            gpus=d.get("gpus") if isinstance(d.get("gpus"), list) else None,
            gpus_source=d.get("gpus_source"), environment=_opt(d.get("environment")),
            load_avg=mapping(d.get("load_avg")), cut=_opt(d.get("cut")), doc=d)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def measured(self) -> bool:
        """Whether the cell's metrics are a measurement to report: it finished ok, or it is a
        `--repeat K` cell whose finished processes are all ok and whose other processes were only not
        measured (left or stopped by --time-limit, not run yet, interrupted); `partial` says so. A
        process that failed, crashed, timed out or ran out of memory makes the cell fail as a whole."""
        return self.ok or self.partial is not None

    @property
    def partial(self) -> str | None:
        """'1 of 2 processes; process 2 of 2: <why>' for a cell measured by only some of its processes
        (`measured`), else None."""
        if self.ok or self.status not in NOT_MEASURED or not self.metrics:
            return None
        done = [p for p in self.processes if p.status == "ok"]
        if not done or any(p.status not in ("ok", *NOT_MEASURED) for p in self.processes):
            return None
        of = max(self.repeat or 0, len(self.processes))
        return f"{len(done)} of {of} processes; {self.reason or 'the others were not measured'}"

    def metric(self, name: str) -> FrozenDict | None:
        """The stored metric `name`, or None."""
        return self.metrics.get(name)

    def cuts(self) -> list[str]:
        """What its stopped processes had measured, one sentence each: kept in their result files,
        used by no verdict (each ended before its stopping rule)."""
        from reprokit.reader.merge import cut_summary

        found = [(None, cut_summary(thaw(self.cut)))] if self.cut is not None else []
        found += [(p.index, thaw(p.cut)) for p in self.processes if p.cut is not None]
        out = []
        for index, c in found:
            who = "it" if index is None else f"process {index}"
            done = f" after finishing {', '.join(c['finished'])}" if c["finished"] else ""
            out.append(f"{who} had taken {c['samples']:,} samples of {c['metric'] or 'its metric'}{done} "
                       "when it was stopped (kept in its result file; no verdict uses them: it ended "
                       "before its stopping rule)")
        return out

    @property
    def gpu_count(self) -> int:
        """The GPUs the cell's parameters ask for (1 when they name none)."""
        return int(self.params.get("gpus") or 1)

    @property
    def framework(self) -> FrozenDict:
        """What the stack's fingerprint says of its framework."""
        return mapping(self.stack_fingerprint.get("framework"))


def _opt(value: Any) -> FrozenDict | None:
    return freeze(value) if isinstance(value, dict) else None
