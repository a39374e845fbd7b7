"""The model of a run: `Run`, frozen, built once from a run directory by reprokit/reader/load.py.

Every stage that reads a run (analysis, report, compare, export, status) reads this, never run.json
itself: the options, the `Design` (which answers how many processes each cell runs), the host, the
cell entries with a structured status (`CellEntry.skip`, never a sentence to parse), each cell's
result (reprokit/reader/result.py), the kit and the data snapshot. A record run.json does not have
reads as empty or None: the format's steps (reprokit/formats/run.py) brought the document to today's
version, and what an older kit did not record is simply not recorded. reprokit/run/record.py is the
one writer of run.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprokit.reader.cells import NOT_FAILED, NOT_THERE
from reprokit.reader.frozen import EMPTY, NONE, FrozenDict, FrozenList, freeze, items, mapping
from reprokit.reader.result import CellResult
from reprokit.reader.status import Skip, Stop

ENTRY_STATUSES = ("ok", "failed", "crashed", "timeout", "oom", "skipped", "not_implemented",
                  "interrupted", "missing", "invalid", "pending")
# the one line `run` and `report` print when a run measured no cell (its exit status is then 1)
NOTHING_MEASURED = ("no cell of the run measured anything (each was skipped or left by --time-limit); "
                    "the report gives each reason")


@dataclass(frozen=True)
class Kit:
    """The kit that wrote a record: version, git commit, uncommitted changes (None: not known)."""
    version: str | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None

    @classmethod
    def from_doc(cls, doc: Any) -> Kit:
        d = mapping(doc)
        return cls(_str(d.get("version")), d.get("git_commit"), d.get("git_dirty"))

    def to_doc(self) -> dict:
        return {"version": self.version, "git_commit": self.git_commit, "git_dirty": self.git_dirty}


@dataclass(frozen=True)
class CellDesign:
    """One cell's part of the design: its role, processes and iterations, and where it stopped."""
    processes: int
    role: str | None = None  # a design by role: "decides" or "context"
    iterations: int | None = None
    sequential: bool = False
    first_look: int | None = None
    confidence: float | None = None
    planned_s: float | None = None
    max_s: float | None = None
    process_s: float | None = None
    budget_s: float | None = None
    stop: Stop | None = None

    def __post_init__(self) -> None:
        if self.processes < 1:
            raise ValueError(f"a cell's design runs at least one process, not {self.processes}")

    @classmethod
    def from_doc(cls, doc: Any) -> CellDesign:
        d = mapping(doc)
        return cls(int(d.get("processes") or 1), d.get("role"), d.get("iterations"),
                   bool(d.get("sequential")), d.get("first_look"), d.get("confidence"),
                   d.get("planned_s"), d.get("max_s"), d.get("process_s"), d.get("budget_s"),
                   Stop.from_doc(d.get("stop")))


@dataclass(frozen=True)
class Design:
    """How many processes the cells run: `fixed` (one K for every cell, Kalibera & Jones) or `auto`
    (by role: a context cell once, a deciding cell sequentially, each with its own count)."""
    kind: str
    processes: int
    cells: FrozenDict = EMPTY  # cell id -> CellDesign
    text: str | None = None
    source: str | None = None
    judgment: str | None = None
    budget: FrozenDict | None = None
    decidability: FrozenDict | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("fixed", "auto"):
            raise ValueError(f"a design's kind is fixed or auto, not {self.kind!r}")

    @classmethod
    def from_doc(cls, doc: Any) -> Design | None:
        if not isinstance(doc, dict):
            return None
        d = freeze(doc)
        cells = FrozenDict((cid, CellDesign.from_doc(e)) for cid, e in mapping(d.get("cells")).items())
        return cls(d["kind"], int(d.get("processes") or 1), cells, d.get("text"), d.get("source"),
                   d.get("judgment"), _opt(d.get("budget")), _opt(d.get("decidability")))

    @property
    def by_role(self) -> bool:
        return self.kind == "auto"

    def cell(self, cell_id: str) -> CellDesign | None:
        return self.cells.get(cell_id)

    def processes_of(self, cell_id: str, repeat: int) -> int:
        """How many processes `cell_id` runs: its own count in a design by role, else the run's K."""
        own = self.cells.get(cell_id) if self.by_role else None
        return own.processes if own is not None else repeat

    def sequential(self) -> dict[str, CellDesign]:
        """{cell id: its design} of the cells a design by role runs sequentially."""
        return {cid: c for cid, c in self.cells.items() if self.by_role and c.sequential}


def processes_of(design: Design | None, cell_id: str, repeat: int) -> int:
    """How many processes `cell_id` runs under `design` (the run's K without one)."""
    return design.processes_of(cell_id, repeat) if design is not None else repeat


@dataclass(frozen=True)
class Options:
    """The settings that change measurements, beyond suite, runner, protocol and K (run.json `options`)."""
    device: str | None = None
    cells: tuple[str, ...] = ()
    min_samples: int | None = None
    time_budget_s: float | None = None
    time_limit_s: float | None = None
    data: str | None = None

    @classmethod
    def from_doc(cls, doc: Any) -> Options:
        d = mapping(doc)
        return cls(d.get("device"), tuple(d.get("cells") or ()), d.get("min_samples"),
                   d.get("time_budget_s"), d.get("time_limit_s"), d.get("data"))


@dataclass(frozen=True)
class CellEntry:
    """A cell's entry in run.json: the index of its result, with its status and why."""
    cell_id: str
    stack: str
    status: str
    reason: str | None = None
    process_wall_s: float | None = None
    result_file: str | None = None
    skip: Skip | None = None

    def __post_init__(self) -> None:
        if self.status not in ENTRY_STATUSES:
            raise ValueError(f"cell {self.cell_id}: status {self.status!r} is not one of {ENTRY_STATUSES}")

    @classmethod
    def from_doc(cls, doc: Any) -> CellEntry:
        d = mapping(doc)
        return cls(d["cell_id"], d["stack"], d["status"], d.get("reason"), d.get("process_wall_s"),
                   d.get("result_file"), Skip.from_doc(d.get("skip")))

    @property
    def left_by_time_limit(self) -> bool:
        return self.skip is not None


@dataclass(frozen=True)
class Incident:
    """What stopped or changed the run before its end (run.json `incidents`)."""
    kind: str
    at: str | None = None
    cell_id: str | None = None
    text: str | None = None

    @classmethod
    def from_doc(cls, doc: Any) -> Incident:
        d = mapping(doc)
        return cls(str(d.get("kind")), d.get("at"), d.get("cell_id"), d.get("text"))


@dataclass(frozen=True)
class Slurm:
    """A `--runner slurm` run's submission: options, job arrays, the probe job, detached or not."""
    options: FrozenDict = EMPTY
    jobs: FrozenList = NONE
    probe: FrozenDict | None = None
    detached: bool = False

    @classmethod
    def from_doc(cls, doc: Any) -> Slurm | None:
        if not isinstance(doc, dict):
            return None
        d = freeze(doc)
        return cls(mapping(d.get("options")), items(d.get("jobs")), _opt(d.get("probe")),
                   bool(d.get("detached")))


@dataclass(frozen=True)
class DataSnapshot:
    """The kit's data as the run started with it: the directory in the run and each file's sha256."""
    dir: str
    files: FrozenDict

    @classmethod
    def from_doc(cls, doc: Any) -> DataSnapshot | None:
        return cls(str(doc["dir"]), mapping(doc.get("files"))) if isinstance(doc, dict) else None


@dataclass(frozen=True)
class Rejudged:
    """One rejudge of a copy judged again with later data (`report RUN --rejudge OUT`): when, with
    which kit, from which directory, and the data snapshot the run it copied held. A run holds the
    chain of them, oldest first (`Run.rejudged`): a rejudge of a rejudged copy appends its own."""
    at: str
    kit: Kit
    copied_from: str
    had_snapshot: bool
    data_snapshot_before: FrozenDict | None = None

    @classmethod
    def from_doc(cls, doc: Any) -> Rejudged | None:
        if not isinstance(doc, dict):
            return None
        return cls(doc["at"], Kit.from_doc(doc.get("kit")), doc["from"],
                   bool(doc.get("data_snapshot_before")), _opt(doc.get("data_snapshot_before")))

    @classmethod
    def chain(cls, doc: Any) -> tuple[Rejudged, ...]:
        """The chain run.json `rejudged` records (a list since run version 7), oldest first."""
        return tuple(r for r in (cls.from_doc(d) for d in items(doc)) if r is not None)


@dataclass(frozen=True)
class Machine:
    """The machine a run's driver ran on, as the analysis needs it: its fingerprint and the CPU GEMM
    probe measured at the run's start (None: not measured)."""
    host: FrozenDict = EMPTY
    cpu_peak: FrozenDict | None = None

    @classmethod
    def of(cls, host: Any = None, cpu_peak: Any = None) -> Machine:
        return cls(mapping(host), _opt(cpu_peak))

    @property
    def gpus(self) -> list[FrozenDict]:
        """The fingerprint's GPUs (records, in its order)."""
        return [g for g in items(self.host.get("gpus")) if isinstance(g, dict)]

    @property
    def gpu_names(self) -> list[str]:
        return [str(g.get("name")) for g in self.gpus if g.get("name")]

    @property
    def cpu(self) -> FrozenDict:
        return mapping(self.host.get("cpu"))

    @property
    def measured_cpu_peak(self) -> FrozenDict | None:
        """The measured CPU GEMM peak: the run's probe, else the one a fingerprint carries; None when
        neither measured a rate."""
        for where in (self.cpu_peak, self.host.get("cpu_peak")):
            if isinstance(where, dict) and where.get("gflops"):
                return freeze(where)
        return None

    @property
    def clock(self) -> FrozenDict | None:
        """The effective clock the run's CPU probe measured (None: not measured)."""
        return _opt(self.cpu_peak.get("clock")) if self.cpu_peak is not None else None


@dataclass(frozen=True)
class Run:
    """A run as its directory holds it, reconciled with the result files (nothing written)."""
    run_id: str
    suite: str
    runner: str
    protocol: str
    started: str
    argv: tuple[str, ...] = ()
    quick: bool = False
    repeat: int = 1
    design: Design | None = None
    finished: str | None = None
    wall_s: float | None = None
    host: FrozenDict = EMPTY  # the host fingerprint
    kit: Kit = field(default_factory=Kit)
    stacks: FrozenDict = EMPTY
    entries: tuple[CellEntry, ...] = ()
    options: Options = field(default_factory=Options)
    incidents: tuple[Incident, ...] = ()
    slurm: Slurm | None = None
    data_snapshot: DataSnapshot | None = None
    rejudged: tuple[Rejudged, ...] = ()  # oldest first; () for a run judged with its own data
    cpu_peak: FrozenDict | None = None
    gpu_peak: FrozenDict | None = None
    jit_warmups: FrozenDict = EMPTY
    environments: FrozenDict = EMPTY
    preflight: FrozenDict = EMPTY
    cell_specs: FrozenDict | None = None
    history: FrozenDict | None = None  # this host's earlier runs when it started; None: not recorded
    results: FrozenDict = EMPTY  # cell id -> CellResult: each cell's valid main result
    node_records: FrozenDict = EMPTY  # Slurm: node -> its record of the run (slurm/nodes/*.json)
    changes: tuple[str, ...] = ()  # what reconciling with the files found
    path: Path | None = None
    doc: FrozenDict = field(default=EMPTY, repr=False)  # run.json as reconciled, frozen

    @classmethod
    def from_doc(cls, doc: dict, results: dict[str, CellResult] | None = None,
                 node_records: dict | None = None, changes: list[str] | None = None,
                 path: Path | None = None) -> Run:
        """The model of a validated run.json of the current version (reprokit/formats/run.py)."""
        d = freeze(doc)
        return cls(
            run_id=d["run_id"], suite=d["suite"], runner=d["runner"], protocol=d["protocol"],
            started=d["started"], argv=tuple(d.get("argv") or ()), quick=bool(d.get("quick")),
            repeat=int(d.get("repeat") or 1), design=Design.from_doc(d.get("design")),
            finished=d.get("finished"), wall_s=d.get("wall_s"), host=mapping(d.get("host_fingerprint")),
            kit=Kit.from_doc(d.get("kit")), stacks=mapping(d.get("stacks")),
            entries=tuple(CellEntry.from_doc(e) for e in items(d.get("cells"))),
            options=Options.from_doc(d.get("options")),
            incidents=tuple(Incident.from_doc(i) for i in items(d.get("incidents"))),
            slurm=Slurm.from_doc(d.get("slurm")), data_snapshot=DataSnapshot.from_doc(d.get("data_snapshot")),
            rejudged=Rejudged.chain(d.get("rejudged")), cpu_peak=_opt(d.get("cpu_peak")),
            gpu_peak=_opt(d.get("gpu_peak")), jit_warmups=mapping(d.get("jit_warmups")),
            environments=mapping(d.get("environments")), preflight=mapping(d.get("preflight")),
            cell_specs=_opt(d.get("cell_specs")), history=_opt(d.get("history")),
            results=FrozenDict(results or {}),
            node_records=freeze(node_records or {}), changes=tuple(changes or ()), path=path, doc=d)

    # -- cells ----------------------------------------------------------------------------------
    def entry(self, cell_id: str) -> CellEntry | None:
        return next((e for e in self.entries if e.cell_id == cell_id), None)

    def result(self, cell_id: str | None) -> CellResult | None:
        """The cell's valid main result, or None."""
        return self.results.get(cell_id) if cell_id else None

    def cell_results(self) -> list[CellResult]:
        """Every cell's result, in the order of their file names (cells/*.json)."""
        return sorted(self.results.values(), key=lambda c: c.cell_id.replace("/", "__"))

    def status_of(self, cell_id: str) -> str | None:
        """A cell's status: its result file's, else its run.json entry's."""
        r = self.results.get(cell_id)
        if r is not None:
            return r.status
        e = self.entry(cell_id)
        return e.status if e is not None else None

    def processes_of(self, cell_id: str) -> int:
        """How many processes the cell runs (its design's count, else the run's K)."""
        return processes_of(self.design, cell_id, self.repeat)

    def not_ok(self) -> list[CellEntry]:
        """The entries of cells that did not finish ok (not run yet, interrupted, missing and invalid
        ones too; a cell not implemented or skipped is not a failure)."""
        return [e for e in self.entries if e.status not in NOT_FAILED]

    def incomplete(self) -> list[CellEntry]:
        """The entries of cells with no usable result: missing, invalid, interrupted, pending."""
        return [e for e in self.entries if e.status in NOT_THERE]

    def measured(self) -> list[CellResult]:
        """The cell results that measured something to report (CellResult.measured)."""
        return [c for c in self.results.values() if c.measured]

    @property
    def exit_code(self) -> int:
        """1 when some cell did not finish ok, or when no cell measured anything (every one left by
        --time-limit or skipped: NOTHING_MEASURED), else 0: `run` and `report` exit with it."""
        return 1 if self.not_ok() or not self.measured() else 0

    # -- the run --------------------------------------------------------------------------------
    @property
    def device(self) -> str:
        """'gpu' for a run whose cells ran on GPUs (its options' device), else 'cpu'."""
        return "gpu" if self.options.device == "gpu" else "cpu"

    @property
    def machine(self) -> Machine:
        """The driver's machine: fingerprint and CPU probe."""
        return Machine(self.host, self.cpu_peak)


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _opt(value: Any) -> FrozenDict | None:
    return freeze(value) if isinstance(value, dict) else None
