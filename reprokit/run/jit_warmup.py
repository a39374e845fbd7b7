"""JIT is measured apart: an untimed first start per (stack, GPU model, driver), and the time limits
of cells that preflight expects to pay PTX JIT.

On a GPU a stack's first process JIT-compiles whatever PTX its binaries carry for the GPU (cuBLAS,
cuDNN, the framework's own kernels) and the CUDA driver caches the result (CUDA_CACHE_PATH; the
Docker runner mounts a volume per image, GPU and driver there). A cell that starts on a cold cache
pays that JIT inside its first step, hence inside `compile_time`. So, before the first timed GPU cell
of each (stack, GPU model, driver), `before_cell` runs that cell once more through the same runner,
environment/image and GPU, with a one-sample budget, in a process of its own: the untimed first
start compat.yaml's `jit.timing_policy` promises. Its result goes to `warmup/<key>/` (never to
`cells/`, never read by the analysis); run.json `jit_warmups` records it per key, so a resumed run
does not repeat it, and every cell of the key gets its process wall time as `jit_warmup_s`. CUDA <= 10
libraries load all their modules when the library is first used, so one step of one cell JIT-compiles
their whole PTX; newer ones load lazily, and a later cell may still JIT a kernel the warm-up did not
touch: `jit_cache` (written by bench/harness.py from the cell's own `stack_fingerprint.cuda_cache`)
says what each timed cell started from, and compile-time verdicts need it "warm"
(reprokit/analysis/verdicts.py).

The warm-up runs for GPU cells only, never before a gpu-smoke probe (a probe is itself the first
start: its `first_call_time` includes any PTX JIT by definition), and always once per key (not
only on an empty cache: a cache the local runner shares between stacks, or one filled by another
stack of the same image, can hold files without holding this stack's kernels).
REPROKIT_JIT_WARMUP=off turns it off (`jit_warmup_s` then null), =force runs it for CPU cells too
(how the tests check the mechanism on a machine with no GPU). The concurrent (Slurm) runner submits
each key's warm-up as a job of its own and the key's cells with `--dependency=afterany` on it
(reprokit/run/execute_concurrent.py), so they start on the cache it filled.

`raise_timeout` (reprokit/plan/plan.py) adds compat.yaml's `jit.timeout_allowance_s` to the time limit of a
cell whose preflight verdict is `jit` (its stack reaches this GPU only through PTX JIT).

None of this has run on a GPU: no machine the kit was developed on has one.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from reprokit import files
from reprokit.errors import UserError
from reprokit.plan import probe_cache
from reprokit.probes import jit_cache
from reprokit.run import lifecycle
from reprokit.run import record as run_record
from reprokit.runners import cell_process
from reprokit.runners.base import CellOutcome

ENV = "REPROKIT_JIT_WARMUP"
MODES = ("auto", "off", "force")
WARMUP_DIR = "warmup"
# one timed sample, no warm-up iterations, no time budget: the warm-up is one step of the cell
BUDGET = {"min_samples": 1, "max_samples": 1, "time_budget_s": 0, "warmup": 0}
CACHE_STATES = jit_cache.STATES


def mode(environ: dict | None = None) -> str:
    """auto (GPU cells), off or force (every cell, CPU ones too: the tests' switch)."""
    value = (os.environ if environ is None else environ).get(ENV, "").strip().lower() or "auto"
    if value not in MODES:
        raise UserError(f"{ENV}={value!r} is not one of {', '.join(MODES)}; unset it (auto: "
                        "a warm-up before the first GPU cell of each stack, GPU and driver)")
    return value


def cell_device(job: dict, job_cell: dict) -> str:
    """The device a job cell runs on: its own (a number published on a CPU) over the job's."""
    return job_cell.get("device") or job.get("device") or "cpu"


def gpu_key(host_fingerprint: dict | None) -> tuple[str | None, str | None]:
    """(GPU model(s), driver version) of the host, from its fingerprint; (None, None) without one."""
    fp = host_fingerprint or {}
    nvidia = fp.get("nvidia") or {}
    gpus = (fp.get("gpus") or []) if nvidia.get("available") else []
    names = sorted({str(g.get("name") or "unknown GPU") for g in gpus})
    drivers = sorted({str(g.get("driver_version") or nvidia.get("driver_version") or "unknown")
                      for g in gpus})
    if not names:
        return None, None
    return " + ".join(names), " + ".join(drivers)


def key(stack: str, device: str, host_fingerprint: dict | None) -> str:
    """What one warm-up stands for: the stack (its image or environment), the GPU model and driver."""
    if device != "gpu":
        return f"{stack} | cpu"
    gpu, driver = gpu_key(host_fingerprint)
    return f"{stack} | {gpu or 'unknown GPU'} | driver {driver or 'unknown'}"


def _slug(text: str) -> str:
    base = re.sub(r"[^A-Za-z0-9.-]+", "-", text).strip("-")[:60]
    return f"{base}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def cache_state(result: dict) -> str:
    """The CUDA JIT cache state of a cell result (reprokit/probes/jit_cache.py: compiled, cold, unknown, warm,
    none, n/a): what its cache record shows happened while it ran."""
    return jit_cache.state(result)


def warmup_cell(job_cell: dict) -> dict:
    """The job cell the warm-up runs: the same cell with a one-sample budget under protocol budget
    (the published protocol would run the source's whole iteration count)."""
    out = dict(job_cell, budget=dict(BUDGET), protocol="budget")
    out["params"] = dict(job_cell.get("params") or {})
    return out


@dataclass
class Warmup:
    """One warm-up to run: its key, the cell, its own job file and where its result goes."""
    key: str
    stack: str
    device: str
    cell: dict
    job_path: Path
    out_dir: Path
    log_path: Path


def plan(run: dict, job_path: Path, job_cell: dict, rundir, stack: str, how: str | None = None
         ) -> Warmup | None:
    """The warm-up a cell needs before it, its job file written (jobs/<stack>.jit-warmup.json, out_dir
    warmup/<slug>/); None when the cell needs none (a CPU cell, a gpu-smoke probe, mode off) or its
    key was warmed up already in this run (run.json `jit_warmups`)."""
    how = how or mode()
    if how == "off" or probe_cache.is_probe(job_cell["workload"]):
        return None  # a gpu-smoke probe is itself the first start: its first_call_time holds the JIT
    job = files.read_json(Path(job_path), "job")
    device = cell_device(job, job_cell)
    if device != "gpu" and how != "force":
        return None
    k = key(stack, device, run.get("host_fingerprint"))
    if k in (run.get("jit_warmups") or {}):
        return None
    out_dir = Path(rundir.path) / WARMUP_DIR / _slug(k)
    out_dir.mkdir(parents=True, exist_ok=True)
    # the Docker runner mounts out_dir over cells/ inside the read-only run directory: the mount
    # point must exist there before the first cell made it
    rundir.cells_dir.mkdir(parents=True, exist_ok=True)
    wcell = warmup_cell(job_cell)
    wjob = dict(job, out_dir=str(out_dir.resolve()), cells=[wcell])
    wjob_path = Path(job_path).with_name(f"{Path(job_path).stem}.jit-warmup.json")
    files.write_json_atomic(wjob_path, wjob, "job")
    return Warmup(k, stack, device, wcell, wjob_path, out_dir, out_dir / "warmup.log")


def record(run: dict, w: Warmup, outcome: CellOutcome, started: str, rundir) -> dict:
    """run.json's `jit_warmups` entry of a warm-up that ended (its result read from its own
    directory), stored in `run` and written."""
    result_path = w.out_dir / f"{w.cell['id'].replace('/', '__')}.json"
    result = None
    if result_path.exists():
        try:
            result = files.read_json(result_path, "cell_result")
        except UserError:
            result = None
    status = outcome.status if outcome.status != "ok" else (result or {}).get("status", "crashed")
    reason = outcome.reason if outcome.status != "ok" else (result or {}).get("reason")
    if result is None and outcome.status == "ok":
        reason = "the warm-up process wrote no result"
    gpu, driver = gpu_key(run.get("host_fingerprint")) if w.device == "gpu" else (None, None)
    rec = {
        "key": w.key, "stack": w.stack, "device": w.device, "cell_id": w.cell["id"],
        "gpu": gpu, "driver": driver,
        "started": started, "wall_s": round(float(outcome.process_wall_s or 0.0), 3),
        "status": status, "reason": reason,
        "cache_at_start": jit_cache.at_start(result) if result else "unknown",
        "cache": cache_state(result) if result else "unknown",
        "dir": str(w.out_dir.relative_to(rundir.path)),
    }
    run.setdefault("jit_warmups", {})[w.key] = rec
    run_record.write_run(rundir, run)  # a resumed run finds it and does not repeat it
    return rec


def before_cell(run: dict, runner, prepared: dict, job_path: Path, job_cell: dict,
                rundir, stack: str, say=print) -> dict | None:
    """The warm-up record of the cell's key (run.json `jit_warmups`), running the warm-up first
    when this run has none for the key; None when the cell needs none (a CPU cell, a gpu-smoke
    probe, or REPROKIT_JIT_WARMUP=off). A warm-up that fails is recorded with its status and the cells run
    anyway (they then say from their own `jit_cache` what they started from)."""
    how = mode()
    if how == "off" or probe_cache.is_probe(job_cell["workload"]):
        return None
    w = plan(run, job_path, job_cell, rundir, stack, how)
    if w is None:  # a CPU cell, or its key warmed up already
        done = run.get("jit_warmups") or {}
        job = files.read_json(Path(job_path), "job")
        device = cell_device(job, job_cell)
        if device != "gpu" and how != "force":
            return None
        return done.get(key(stack, device, run.get("host_fingerprint")))
    say(f"jit warm-up: {w.key}: {job_cell['id']} once, untimed, before the stack's first timed cell")
    started = files.utcnow()
    t0 = time.monotonic()
    try:
        outcome = runner.run_cell(prepared, w.job_path, w.cell, w.out_dir, w.log_path)
    except (lifecycle.Interrupted, cell_process.EngineLost):
        raise  # nothing recorded: a resumed run warms up again
    except Exception as e:  # a runner bug costs the warm-up, never the run
        if lifecycle.is_storage_error(e):
            raise
        outcome = CellOutcome("crashed", f"runner error: {type(e).__name__}: {e}",
                              time.monotonic() - t0)
    if not outcome.process_wall_s:
        outcome = CellOutcome(outcome.status, outcome.reason, time.monotonic() - t0, outcome.log_file,
                              outcome.runner_info)
    rec = record(run, w, outcome, started, rundir)
    say(f"jit warm-up: {w.key}: {rec['status']} in {rec['wall_s']:.1f} s (CUDA JIT cache "
        f"{rec['cache_at_start']} at its start, {rec['cache']} by its end); not part of any "
        "measurement")
    return rec
