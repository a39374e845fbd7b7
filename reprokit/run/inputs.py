"""The checks of a run's request (reprokit/run/request.py: `reproduce.py run`'s options) before any work.

Each raises a one-line UserError naming the problem and the fix (reprokit/checks.py); none creates
anything. `check_options` runs first (option combinations, where results go, a GPU when one is asked
for, the data directory); `check_space` once the plan says how many cell processes will run;
`check_interpreters` and `check_resume_interpreters` for `--python` / `--python-config`."""

from __future__ import annotations

from pathlib import Path

from reprokit import checks, results
from reprokit.catalog import datasets
from reprokit.errors import UserError
from reprokit.probes import fingerprint
from reprokit.run.request import RunRequest
from reprokit.runners import byo, slurm_setup


def check_options(req: RunRequest, resumed: results.RunDir | None) -> None:
    """Option combinations, the results directory (a writable directory, or one that can be
    created), a GPU when one is asked for, the data directory and its lock file."""
    if req.data_lock and not req.data:
        raise UserError("--data-lock applies with --data DIR only; add --data DIR or drop --data-lock")
    if req.data_subset and not req.data:
        raise UserError("--data-subset applies with --data DIR only; add --data DIR or drop --data-subset")
    slurm_setup.check_inputs(req.slurm, req.runner)
    if req.gpus and req.runner == "local":
        raise UserError("--gpus applies to the docker runner only; drop --gpus or pass --runner docker")
    if req.gpus and req.device == "cpu":
        raise UserError("--gpus asks for GPUs but --device cpu for none; drop --gpus or pass "
                        "--device gpu")
    if resumed is None:  # the new run's directory is made under --results
        checks.writable_dir(req.results, f"--results {req.results}",
                            "pass --results DIR naming a directory you can write to")
    else:  # a resumed run writes into its own directory only
        checks.writable_dir(resumed.path, f"--resume {req.resume}", "make the run directory writable, "
                            "or copy it to a writable disk and resume the copy")
    if (req.device == "gpu" or req.gpus) and req.runner != "slurm":  # Slurm: the probe's node
        flag = "--device gpu" if req.device == "gpu" else f"--gpus {req.gpus}"
        fingerprint.require_gpu(flag, "run with --device cpu (or auto), or on a host with an NVIDIA GPU "
                                "and its driver")
    if req.data:
        checks.input_dir(req.data, "--data", "pass the directory holding the data files (see "
                         "`reproduce.py data` for the layout)")
        lock = Path(req.data_lock) if req.data_lock else datasets.default_lock_path()
        checks.output_file(lock, "--data-lock", "pass --data-lock PATH naming a file in a directory "
                           "you can write to (digests are recorded there on first use)")


def check_space(req: RunRequest, plan, resumed: results.RunDir | None) -> None:
    """Free space for the plan's cell processes where the run writes (before its directory is made)."""
    if resumed is None:
        where = req.results
        room = "free space there or pass --results DIR on another disk"
    else:
        where = resumed.path
        room = "free space there, or copy the run to another disk and resume the copy"
    n = len(plan.runnable) * plan.options.repeat
    checks.free_space(where, checks.run_space_mb(n), "this run",
                      f"{checks.RUN_BASE_MB} MB + {checks.CELL_PROCESS_MB} MB for each of {n} cell "
                      "processes", room)

def check_interpreters(req: RunRequest) -> str | None:
    """--python / --python-config: the runners that run them, then the interpreters themselves
    (exists, executable, imports the stack's framework: reprokit/runners/byo.py), before anything
    runs. Returns why `--runner auto` takes the local runner, or None without --python."""
    if not (req.python or req.python_config):
        return None
    flag = "--python" if req.python else "--python-config"
    if req.runner == "docker" or (req.runner == "slurm" and req.slurm.launcher not in (None, "local")):
        where = "--runner docker" if req.runner == "docker" else \
            f"--slurm-launcher {req.slurm.launcher}"
        raise UserError(f"{flag} names interpreters for the local runner and the Slurm local "
                        f"launcher, not {where} (which runs images); drop {flag} or use --runner "
                        "local")
    mapping = byo.from_options(req.python, req.python_config)
    return f"{flag} names the interpreter of {', '.join(sorted(mapping))}: local runner"
def check_resume_interpreters(run: dict, req: RunRequest) -> None:
    """A resumed run keeps the interpreters it was started with: a stack run with --python then
    needs the same --python now, and one run with the kit's environment no --python (its cells
    would otherwise mix two environments)."""
    before = {s: e.get("python") for s, e in (run.get("environments") or {}).items() if e.get("byo")}
    now = byo.chosen()
    for stack in sorted(set(before) | set(now)):
        if before.get(stack) != now.get(stack) and (stack in before or stack in run.get("environments", {})):
            was = f"--python {stack}={before[stack]}" if stack in before else "the kit's environment"
            given = f"--python {stack}={now[stack]}" if stack in now else "none"
            fix = f"pass {was}" if stack in before else f"drop --python {stack}=..."
            raise UserError(f"cannot resume {run.get('run_id')}: stack {stack} ran with {was}, this "
                            f"command gives {given}; {fix}, or start a new run")
