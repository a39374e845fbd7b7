"""Slurm runner: every cell of a run submitted at once, one job-array task per cell.

    reproduce.py run --suite S --runner slurm [--slurm-launcher local|docker|apptainer|pyxis]
        [--slurm-partition P] [--slurm-account A] [--slurm-qos Q] [--slurm-constraint C]
        [--slurm-mem 16G] [--slurm-time MIN] [--slurm-exclusive | --slurm-no-exclusive] [--detach]

Each group of cells sharing a stack, time limit and GPU count becomes one job array
(`sbatch --parsable --array=0-N`), one task per cell (or per process with `run --repeat K`), with:
the cell's time limit (its timeout_s plus a minute, in whole minutes, or --slurm-time), memory
(--slurm-mem, default the Docker runner's limit), `--gres=gpu:N` for a cell that needs N GPUs
(never run: no GPU with Slurm has been available), `--exclusive` for CPU cells (a benchmark that
shares its node measures its neighbours too) and not for GPU cells, which hold their GPUs
(--slurm-exclusive asks it for every cell, --slurm-no-exclusive for none; the report says which),
`--no-requeue` (a cell is never run twice behind the driver's back: a failed node's cell ends
NODE_FAIL and `--resume` re-runs it), and the partition/account/QOS/constraint options. Each task
runs reprokit/runners/slurm_task.py, which records the node (fingerprint, CPU peak) and starts the
cell through its launcher (reprokit/runners/launchers.py).

The driver follows the jobs with `squeue --states=all` (completed jobs stay there for the
cluster's MinJobAge) and `sacct` for jobs squeue no longer knows, and maps every terminal state
to a cell status with its reason (STATES below). The job ids are kept in run.json (`slurm`), so a
driver that is killed, or that left with --detach, is re-attached by `reproduce.py status RUN`,
`report RUN` and `run --resume RUN` (which re-submits only cells that ended without a result).
Ctrl-C cancels everything the driver submitted (`scancel`). Before the first submission a probe
job checks that the results directory is visible from the nodes.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from reprokit import files, results
from reprokit.errors import UserError
from reprokit.files import REPO
from reprokit.runners import launchers
from reprokit.runners.base import CellOutcome

# Slurm's terminal job states -> (cell status, why). `interrupted` cells are re-run by --resume.
STATES = {
    "COMPLETED": ("ok", None),
    "FAILED": ("crashed", "the job failed"),
    "TIMEOUT": ("timeout", "Slurm ended the job at its time limit"),
    "OUT_OF_MEMORY": ("oom", "Slurm ended the job: it went over its memory request"),
    "CANCELLED": ("interrupted", "the job was cancelled (scancel) before the cell wrote a result"),
    "NODE_FAIL": ("interrupted", "the job's node failed or was set DOWN while the cell ran"),
    "PREEMPTED": ("interrupted", "the job was preempted by a job of higher priority"),
    "BOOT_FAIL": ("interrupted", "the job's node failed to boot"),
    "DEADLINE": ("timeout", "the job reached its deadline"),
    "REVOKED": ("interrupted", "the job was revoked (federation)"),
    "SPECIAL_EXIT": ("crashed", "the job ended in SPECIAL_EXIT"),
}
ACTIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
          "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
          "RESV_DEL_HOLD")
POLL_S = 2.0  # REPROKIT_SLURM_POLL_S overrides
# states in which the node, not the job, ended: the cell's process may still be running there
NODE_LOST = ("NODE_FAIL",)
PROBE_TIMEOUT_S = 300.0  # REPROKIT_SLURM_PROBE_TIMEOUT_S overrides


@dataclass
class SlurmOptions:
    launcher: str = "local"
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    mem: str | None = None  # e.g. "16G"; default: the Docker runner's memory limit
    time_min: int | None = None  # overrides every cell's time limit (minutes)
    exclusive: bool | None = None  # None: CPU cells exclusive, GPU cells not (exclusive_for)
    image_dir: str | None = None  # apptainer / pyxis: where <image>-<flavour>.sif/.sqsh live
    detach: bool = False
    hold: bool = False  # sbatch --hold (scripts/bench_slurm.py times submissions, then cancels)
    gpu_features: dict[str, str] = field(default_factory=dict)  # GPU model -> node feature

    def exclusive_for(self, gpus: int) -> bool:
        """Whether a job array of cells needing `gpus` GPUs asks for whole nodes: --slurm-exclusive
        (True) or --slurm-no-exclusive (False) for every array; by default a CPU cell's array only
        (a CPU benchmark measures the whole node's cores, a GPU cell holds its GPUs, and a whole
        8-GPU node held per 1-GPU cell would idle the other seven)."""
        if self.exclusive is not None:
            return bool(self.exclusive)
        return not gpus

    def record(self) -> dict:
        return {"launcher": self.launcher, "partition": self.partition, "account": self.account,
                "qos": self.qos, "constraint": self.constraint, "mem": self.mem,
                "time_min": self.time_min, "exclusive": self.exclusive,
                "image_dir": self.image_dir, "gpu_features": dict(self.gpu_features)}

    @classmethod
    def from_record(cls, rec: dict) -> SlurmOptions:
        known = {k: rec.get(k) for k in cls().record() if k in rec}
        return cls(**known)


@dataclass
class Task:
    """One array task: a cell (one process of it with --repeat K)."""

    cell: object  # suites.Cell
    process: int | None
    job_cell: dict
    job_path: Path
    log_path: Path
    gpus: int = 0
    gpu_models: tuple[str, ...] = ()  # the GPUs its published numbers were measured on
    job_id: str | None = None  # "<array job>_<index>" once submitted
    record: str | None = None  # the task record slurm_task.py writes (relative to the run dir)
    cancelled_by_driver: str | None = None
    info: dict = field(default_factory=dict)
    lost_since: float | None = None  # when Slurm first said its node was lost (NODE_FAIL)
    after: str | None = None  # a job it waits for (sbatch --dependency=afterany): its JIT warm-up
    warmup: object | None = None  # a JIT warm-up task (reprokit/run/jit_warmup.py Warmup), not a cell

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.cell.id, self.process)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise UserError(f"--runner slurm: `{name}` not found on PATH; run on a Slurm submit host "
                        "(bash scripts/slurm-setup.sh makes a one-node cluster here)")
    return path


def _run(argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[0] if lines else "(no output)"


def mem_default() -> str:
    from reprokit.containers.spec import limits

    return limits()[0].upper()


def slurm_mem(text: str) -> str:
    """`run --slurm-mem`: a size as sbatch --mem takes it (a whole number with K, M, G or T; no
    unit: megabytes)."""
    import re

    raw = str(text).strip().upper()
    m = re.fullmatch(r"([1-9][0-9]{0,8})([KMGT]?)B?", raw)
    if not m:
        raise UserError(f"--slurm-mem must be a size such as 16G or 4000M, not '{text}'; pass e.g. "
                        "--slurm-mem 16G")
    return m[1] + (m[2] or "M")


def gpu_feature_option(text: str) -> tuple[str, str]:
    """`run --slurm-gpu-feature MODEL=FEATURE`: a GPU model (matched case-insensitively within the
    published numbers' GPU names, e.g. V100) and the node feature the cluster gives such nodes."""
    model, sep, feature = str(text).partition("=")
    if not sep or not model.strip() or not feature.strip() or any(c in feature for c in "&|[]*,"):
        raise UserError(f"--slurm-gpu-feature must be MODEL=FEATURE (e.g. V100=v100), not '{text}'; "
                        "pass one per GPU model, e.g. --slurm-gpu-feature V100=v100")
    return model.strip(), feature.strip()


def constraint_for(task_models: tuple[str, ...], gpus: int, options: SlurmOptions) -> str | None:
    """sbatch --constraint for a task: the user's --slurm-constraint and, for a GPU cell, the node
    features of the GPU models its numbers were published on (any of them: `a|b`)."""
    feats = sorted({f for model, f in options.gpu_features.items() for label in task_models
                    if model.lower() in label.lower()}) if gpus else []
    parts = [p for p in (options.constraint, "|".join(feats)) if p]
    if len(parts) == 2:
        return f"{parts[0]}&[{parts[1]}]" if len(feats) > 1 else f"{parts[0]}&{parts[1]}"
    return parts[0] if parts else None


def time_limit_min(timeout_s: float | None, override: int | None) -> int:
    """A cell's Slurm time limit in whole minutes: its timeout_s plus a minute for the task's
    start (node fingerprint, container start), or --slurm-time."""
    if override:
        return int(override)
    return max(1, math.ceil((float(timeout_s or 1200) + 60) / 60))


def _rows(text: str, names: tuple[str, ...]) -> dict[str, dict]:
    """`|`-separated rows, the job id first -> {job id: {name: value, None when empty}}; `state`
    is its first word ("CANCELLED by 0" -> CANCELLED), "" when empty."""
    out = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < len(names) + 1:
            continue
        row = {n: v or None for n, v in zip(names, parts[1:])}
        row["state"] = row["state"].split()[0] if row["state"] else ""
        out[parts[0]] = row
    return out


def parse_squeue(text: str) -> dict[str, dict]:
    """`squeue -h -r --states=all -o %i|%T|%N|%P|%r|%l|%M` -> {job id: fields}."""
    return _rows(text, ("state", "node", "partition", "slurm_reason", "time_limit", "time_used"))


def parse_sacct(text: str) -> dict[str, dict]:
    """`sacct -n -P -X -o JobID,State,NodeList,Partition,ExitCode,Elapsed` -> {job id: fields}."""
    return _rows(text, ("state", "node", "partition", "slurm_exit_code", "time_used"))


class SlurmRunner:
    name = "slurm"
    concurrent = True  # execute() submits every cell and collects outcomes as they finish

    def __init__(self, options: SlurmOptions | None = None, device: str = "cpu", say=print):
        self.options = options or SlurmOptions()
        self.device = device
        self.say = say
        self.launcher = launchers.make(self.options.launcher, device=device,
                                       image_dir=self.options.image_dir, say=say)
        self.tasks: dict[str, Task] = {}  # job id -> task, submitted or re-attached, not ended
        self.jobs: list[str] = []  # array job ids this driver submitted
        self.poll_s = float(os.environ.get("REPROKIT_SLURM_POLL_S") or POLL_S)
        self.stats = {"submit_s": 0.0, "polls": 0, "sbatch_calls": 0}
        self.probe_result: dict | None = None
        self.rundir_path: Path | None = None  # the run being followed (poll)

    # -- before anything is submitted --------------------------------------------------------------
    def common_args(self, constraint: str | None = None) -> list[str]:
        o = self.options
        constraint = constraint or o.constraint
        args = []
        for flag, value in (("--partition", o.partition), ("--account", o.account),
                            ("--qos", o.qos), ("--constraint", constraint)):
            if value:
                args.append(f"{flag}={value}")
        return args

    def probe(self, where: Path, gpus: int = 0) -> dict:
        """A probe job reads a file the driver wrote into `where` and writes one back: the
        results directory is visible and writable from the nodes. UserError (one line) if not.
        The job also takes its node's fingerprint (reprokit/probes/fingerprint.py, with the kit's
        interpreter; `node_fingerprint`, null with `node_fingerprint_error` when it fails): what
        a GPU run is planned on (run/driver.py). With `gpus` it asks for that many GPUs
        (--gres), as a GPU cell's job does: a node's NVML shows a job only the GPUs it was
        given when the cluster constrains devices."""
        sbatch = _tool("sbatch")
        _tool("squeue")
        where = Path(where).resolve()
        token = uuid.uuid4().hex
        ask = where / f".reprokit-probe-{token}"
        seen = where / f".reprokit-probe-{token}.seen"
        fp_file = where / f".reprokit-probe-{token}.fingerprint.json"
        ask.write_text(token + "\n")
        try:
            take_fp = (f"PYTHONPATH={REPO} {sys.executable} -m reprokit.probes.fingerprint "
                       f"{fp_file}")
            script = (f"cat {ask} > {seen}.tmp && hostname >> {seen}.tmp && {{ {take_fp}; true; }} "
                      f"&& mv {seen}.tmp {seen}")
            argv = [sbatch, "--parsable", "--job-name=reprokit-probe", "--time=2", "--mem=500M",
                    "--ntasks=1", "--output=/dev/null", "--no-requeue", *self.common_args(),
                    *([f"--gres=gpu:{gpus}"] if gpus else []), f"--wrap={script}"]
            p = _run(argv)
            if p.returncode != 0:
                if gpus:
                    raise UserError(f"--runner slurm --device gpu: the probe job asking for {gpus} "
                                    f"GPU (--gres=gpu:{gpus}) was refused: "
                                    f"{_first_line(p.stderr or p.stdout)}; pass --slurm-partition/"
                                    "--slurm-constraint naming GPU nodes, or --device cpu")
                raise UserError(f"--runner slurm: the probe job was refused: "
                                f"{_first_line(p.stderr or p.stdout)}; check --slurm-partition/"
                                "--slurm-account/--slurm-qos/--slurm-constraint")
            job = p.stdout.strip().split(";")[0]
            limit = float(os.environ.get("REPROKIT_SLURM_PROBE_TIMEOUT_S") or PROBE_TIMEOUT_S)
            end = time.monotonic() + limit
            state = None
            while time.monotonic() < end:
                got = self._squeue([job]).get(job)
                state = (got or {}).get("state")
                if state and state not in ACTIVE:
                    break
                if got is None and seen.exists():
                    break
                time.sleep(0.5)
            else:
                _run([_tool("scancel"), job])
                raise UserError(f"--runner slurm: the probe job {job} did not finish within "
                                f"{limit:.0f} s (state {state}); is the partition busy or down? "
                                "(`sinfo`)")
            for _ in range(20):  # a shared file system may show the file a moment later
                if seen.exists():
                    break
                time.sleep(0.25)
            text = seen.read_text().split() if seen.exists() else []
            if not text or text[0] != token:
                raise UserError(f"--runner slurm: the results directory {where} is not visible "
                                f"from the Slurm nodes (probe job {job} ended {state} without "
                                "reading and writing it); put --results on a file system the "
                                "nodes share")
            self.probe_result = {"job_id": job, "node": text[1] if len(text) > 1 else None,
                                 "state": state, "at": files.utcnow(), "gres_gpus": gpus}
            try:
                self.probe_result["node_fingerprint"] = files.loads_bounded(fp_file, "record")
            except (OSError, ValueError) as e:
                self.probe_result["node_fingerprint"] = None
                self.probe_result["node_fingerprint_error"] = (
                    f"the probe job wrote no readable fingerprint ({type(e).__name__}: {e})")
            return self.probe_result
        finally:
            ask.unlink(missing_ok=True)
            seen.unlink(missing_ok=True)
            fp_file.unlink(missing_ok=True)

    def prepare(self, stack: str, stack_spec: dict, say=None) -> dict:
        return self.launcher.prepare(stack, stack_spec, say or self.say)

    # -- submit ----------------------------------------------------------------------------------
    def submit(self, rundir: results.RunDir, prepared: dict[str, dict],
               tasks: list[Task]) -> list[dict]:
        """One job array per (stack, time limit, GPU count); returns their records for run.json."""
        sbatch = _tool("sbatch")
        groups: dict[tuple, list[Task]] = {}
        for t in tasks:
            minutes = time_limit_min(t.job_cell.get("timeout_s"), self.options.time_min)
            constraint = constraint_for(t.gpu_models, t.gpus, self.options)
            groups.setdefault((t.cell.stack, minutes, t.gpus, constraint, t.after), []).append(t)
        records = []
        for (stack, minutes, gpus, constraint, after), group in groups.items():
            sub = f"{stack}-{uuid.uuid4().hex[:8]}"
            folder = rundir.path / "slurm" / sub
            folder.mkdir(parents=True, exist_ok=True)
            entries = []
            for i, t in enumerate(group):
                spec = self.launcher.task(prepared[stack], t.job_path, t.cell.id, t.process,
                                          rundir.path, gpus)
                t.record = str(Path("slurm") / sub / f"task-{i}.json")
                t.info = dict(spec.get("info") or {})
                entries.append({"cell_id": t.cell.id, "process": t.process, "argv": spec["argv"],
                                "env": spec.get("env") or {}, "cwd": spec.get("cwd"),
                                "docker_name": spec.get("docker_name"),
                                "launcher": self.launcher.name, "spec": spec.get("spec"),
                                "gpus": spec.get("gpus") or 0,
                                "log": str(t.log_path.resolve()),
                                "record": str((rundir.path / t.record).resolve())})
            tasks_file = folder / "tasks.json"
            files.write_json_atomic(tasks_file, {"run_dir": str(rundir.path.resolve()),
                                                   "launcher": self.launcher.name,
                                                   "tasks": entries})
            script = folder / "job.sh"
            script.write_text("#!/bin/bash\n# reprokit: one cell per array task "
                              "(reprokit/runners/slurm_task.py)\n"
                              f"export PYTHONPATH={REPO}${{PYTHONPATH:+:$PYTHONPATH}}\n"
                              f"exec {sys.executable} -m reprokit.runners.slurm_task {tasks_file}\n")
            script.chmod(0o755)
            argv = [sbatch, "--parsable", f"--array=0-{len(group) - 1}",
                    f"--job-name=reprokit-{stack}", f"--time={minutes}",
                    f"--mem={self.options.mem or mem_default()}", "--ntasks=1", "--no-requeue",
                    f"--chdir={rundir.path.resolve()}",
                    f"--output={folder.resolve()}/slurm-%A_%a.out", *self.common_args(constraint)]
            if self.options.exclusive_for(gpus):
                argv.append("--exclusive")
            if gpus:  # never run: no GPU with Slurm has been available
                argv.append(f"--gres=gpu:{gpus}")
            if after:  # the key's JIT warm-up first, whatever its outcome
                argv.append(f"--dependency=afterany:{after}")
            if self.options.hold:
                argv.append("--hold")
            argv.append(str(script))
            t0 = time.monotonic()
            p = _run(argv)
            self.stats["submit_s"] += time.monotonic() - t0
            self.stats["sbatch_calls"] += 1
            if p.returncode != 0:
                raise UserError(f"--runner slurm: sbatch refused the {stack} job array: "
                                f"{_first_line(p.stderr or p.stdout)}")
            array = p.stdout.strip().split(";")[0]
            self.jobs.append(array)
            rec_tasks = []
            for i, t in enumerate(group):
                t.job_id = f"{array}_{i}"
                self.tasks[t.job_id] = t
                rec_tasks.append({"index": i, "cell_id": t.cell.id, "process": t.process,
                                  "record": t.record})
                if t.warmup is not None:  # not the cell's own task: adopt never takes it for one
                    rec_tasks[-1]["warmup"] = t.warmup.key
            records.append({"job_id": array, "stack": stack, "submitted": files.utcnow(),
                            "time_limit_min": minutes, "gpus": gpus, "launcher": self.launcher.name,
                            "folder": str(Path("slurm") / sub), "tasks": rec_tasks,
                            "sbatch": argv, "exclusive": "--exclusive" in argv,
                            **({"after": after} if after else {})})
        return records

    def adopt(self, rundir: results.RunDir, jobs: list[dict], tasks: dict[tuple, Task],
              ended: bool = False) -> list[Task]:
        """Re-attach to the tasks of earlier drivers (run.json `slurm.jobs`) that are still queued
        or running (with `ended`, also those that ended since: `status`/`report` collect them);
        returns the tasks adopted (they are followed, not re-submitted). A cell re-submitted
        later has its newest task adopted only."""
        newest: dict[tuple, tuple[str, dict]] = {}
        for job in jobs:
            for rt in job.get("tasks", []):
                # a JIT warm-up's task is keyed by its warm-up (only `attach` asks for it: a resumed
                # driver warms up again if it must)
                key = ("warmup", rt["warmup"]) if rt.get("warmup") else (rt["cell_id"], rt.get("process"))
                newest[key] = (f"{job['job_id']}_{rt['index']}", rt)
        wanted = {jid: (key, rt) for key, (jid, rt) in newest.items() if key in tasks}
        if not wanted:
            return []
        states = self.states(list(wanted))
        adopted = []
        for jid, (key, rt) in wanted.items():
            st = states.get(jid)
            if not ended and (st is None or st.get("state") not in ACTIVE):
                continue  # ended: `attach` collected it; without a result it is re-submitted
            t = tasks[key]
            t.job_id, t.record = jid, rt.get("record")
            self.tasks[jid] = t
            adopted.append(t)
        return adopted

    # -- follow ----------------------------------------------------------------------------------
    def _squeue(self, job_ids: list[str]) -> dict[str, dict]:
        arrays = sorted({j.split("_")[0] for j in job_ids})
        if not arrays:
            return {}
        p = _run([_tool("squeue"), "-h", "-r", "--states=all", "-j", ",".join(arrays),
                  "-o", "%i|%T|%N|%P|%r|%l|%M"])
        if p.returncode != 0 and len(arrays) > 1:  # one unknown id fails the whole call
            out = {}
            for a in arrays:
                out.update(self._squeue([a]))
            return out
        return parse_squeue(p.stdout) if p.returncode == 0 else {}

    def _sacct(self, job_ids: list[str]) -> dict[str, dict]:
        if not job_ids or shutil.which("sacct") is None:
            return {}
        p = _run(["sacct", "-n", "-P", "-X", "-j", ",".join(job_ids),
                  "-o", "JobID,State,NodeList,Partition,ExitCode,Elapsed"])
        return parse_sacct(p.stdout) if p.returncode == 0 else {}

    def states(self, job_ids: list[str]) -> dict[str, dict]:
        """{job id: state and where} from squeue, then sacct for the ones squeue forgot."""
        got = self._squeue(job_ids)
        lost = [j for j in job_ids if j not in got]
        if lost:
            got.update({k: v for k, v in self._sacct(lost).items() if k in lost})
        return got

    def outstanding(self) -> int:
        return len(self.tasks)

    def running(self) -> list[Task]:
        return list(self.tasks.values())

    def poll(self, rundir: results.RunDir) -> list[tuple[Task, CellOutcome]]:
        """The tasks that ended since the last poll, with their outcomes."""
        if not self.tasks:
            return []
        self.stats["polls"] += 1
        self.rundir_path = rundir.path  # where the tasks' .alive files lie (_beating)
        states = self.states(list(self.tasks))
        done = []
        for jid, t in list(self.tasks.items()):
            st = states.get(jid)
            if st is not None and st.get("state") in ACTIVE:
                continue
            rec = self._record(rundir, t)
            if st is not None and st.get("state") in NODE_LOST:
                st = self._node_lost(t, st, rec)
                if st is None:
                    continue  # its process may still be running: followed through its task record
            if st is None:  # neither squeue nor sacct knows it: the task record decides
                if rec is None or rec.get("ended") is None:
                    st = {"state": "UNKNOWN"}
                else:
                    st = {"state": "COMPLETED" if rec.get("exit_code") == 0 else "FAILED"}
            if not st.get("node") and not (rec or {}).get("node"):  # sacct keeps a lost node's name
                node = (self._sacct([jid]).get(jid) or {}).get("node")
                st = dict(st, node=None if not node or node.startswith("None") else node)
            done.append((t, self.outcome(t, st, rec)))
            del self.tasks[jid]
        return done

    def _node_lost(self, t: Task, st: dict, rec: dict | None) -> dict | None:
        """Slurm says the task's node was lost (its slurmd stopped or killed), but the cell's process
        may run on under slurmstepd and finish (taken at Slurm's word, such a process was reported
        "interrupted ... --resume re-runs it" and then merged with no node). The task's own record
        decides: ended -> its exit status; still open -> followed (None) until the task's time limit
        has passed since the node was lost; then interrupted, as Slurm said."""
        if rec is not None and rec.get("ended") is not None:
            if rec.get("exit_code") != 0:  # stopped with its node (slurmd's SIGTERM): as Slurm said
                return st
            return dict(st, state="COMPLETED", slurm_reason=f"{st.get('state')}, but the task record "
                        "shows the cell's process finished")
        now = time.monotonic()
        if t.lost_since is None:
            t.lost_since = now
        limit_s = 60.0 * time_limit_min(t.job_cell.get("timeout_s"), self.options.time_min) + 60.0
        if rec is None or now - t.lost_since > limit_s or not self._beating(t):
            return st
        return None

    def _beating(self, t: Task) -> bool:
        """Whether the task touched its `.alive` file lately (reprokit/runners/slurm_task.py): its
        cell runs on, whatever Slurm says of the node."""
        from reprokit.runners.slurm_task import HEARTBEAT_S, alive_path

        try:
            age = time.time() - alive_path(self.rundir_path / t.record).stat().st_mtime
        except (OSError, TypeError, AttributeError):
            return False
        return age <= 6 * HEARTBEAT_S

    def _record(self, rundir: results.RunDir, t: Task) -> dict | None:
        if not t.record:
            return None
        try:
            return files.loads_bounded(rundir.path / t.record, "record")
        except (OSError, ValueError):
            return None

    def outcome(self, t: Task, st: dict, rec: dict | None) -> CellOutcome:
        """The cell's status and reason from its job's terminal state and its task record."""
        state = st.get("state") or "UNKNOWN"
        rec = rec or {}
        node = rec.get("node") or st.get("node")
        info = {"launcher": self.launcher.name, "job_id": t.job_id,
                "array_job_id": (t.job_id or "").split("_")[0],
                "array_task_id": int((t.job_id or "0_0").split("_")[1]),
                "node": node, "partition": rec.get("partition") or st.get("partition"),
                "state": state, "slurm_reason": st.get("slurm_reason"),
                "time_limit": st.get("time_limit"), "time_used": st.get("time_used"),
                "exit_code": rec.get("exit_code"),
                "exclusive": self.options.exclusive_for(getattr(t, "gpus", 0) or 0),
                "node_fingerprint": rec.get("node_fingerprint"),
                "node_cpu_peak": rec.get("node_cpu_peak"), **t.info}
        if rec.get("gpus"):  # the GPUs Slurm gave a container cell (slurm_task.py; never run)
            info["gpus"] = rec["gpus"]
        if rec.get("gpu_env"):  # the GPU variables the cell had (execute: cell_gpus.for_cell)
            info["gpu_env"] = rec["gpu_env"]
        for key in ("gpu_state", "node_gpu_peak"):  # NVML on the node (reprokit/probes/gpu_state.py)
            if rec.get(key) is not None:
                info[key] = rec[key]
        wall = rec.get("wall_s")
        wall = float(wall) if isinstance(wall, (int, float)) else 0.0
        code = rec.get("exit_code")
        where = f"job {t.job_id}" + (f" on {node}" if node else "")
        if state == "COMPLETED":
            if code in (0, None):
                return CellOutcome("ok", None, wall, str(t.log_path), info)
            state = "FAILED"
        if state == "FAILED":
            from reprokit.runners.local import describe_exit

            if isinstance(code, int) and code > 128:
                status, why = describe_exit(-(code - 128))
            elif isinstance(code, int):
                status, why = describe_exit(code)
            else:
                status, why = "crashed", "the job failed before its task started the cell"
            return CellOutcome(status, f"{why} ({where}, FAILED)", wall, str(t.log_path), info)
        if state == "CANCELLED" and t.cancelled_by_driver:
            return CellOutcome("interrupted", f"{t.cancelled_by_driver}: the driver cancelled "
                               f"{where} (scancel); --resume re-runs it", wall, str(t.log_path),
                               info)
        if state in STATES:
            status, why = STATES[state]
            extra = ""
            if state == "TIMEOUT":
                extra = f" of {st.get('time_limit') or '?'}"
            if status == "interrupted":
                extra += "; --resume re-runs it"
            return CellOutcome(status, f"{why}{extra} ({where}, {state})", wall,
                               str(t.log_path), info)
        return CellOutcome("interrupted", f"Slurm no longer knows {where} and its task record "
                           "shows no end (state " + state + "); --resume re-runs it", wall,
                           str(t.log_path), info)

    # -- stop ------------------------------------------------------------------------------------
    def cancel(self, why: str) -> list[str]:
        """scancel every task this driver follows; returns their job ids."""
        ids = list(self.tasks)
        if not ids:
            return []
        for t in self.tasks.values():
            t.cancelled_by_driver = why
        scancel = shutil.which("scancel")
        if scancel:
            _run([scancel, *ids])
        return ids

    def cleanup(self) -> None:
        if self.tasks and not self.options.detach:
            self.cancel("the driver stopped")


def say_detached(rundir: results.RunDir, records: list[dict]) -> str:
    ids = ", ".join(r["job_id"] for r in records) or "none"
    return (f"detached: the cells run as Slurm job array(s) {ids}; follow them with "
            f"`reproduce.py status {rundir.path}`, render with `reproduce.py report {rundir.path}` "
            f"(re-attaches), or wait with `reproduce.py run --suite ... --resume {rundir.path}`")

