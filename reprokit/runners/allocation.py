"""The time a Slurm allocation leaves the driver that runs inside it (`run --time-limit`, and in
a Slurm allocation the job's limit). A driver started under `srun`, `salloc` or `sbatch` (SLURM_JOB_ID set)
without --time-limit plans with what the job has left, read from the real `squeue -h -j JOB -o %L`, less
a margin for the report, so the job's own limit never cuts a run without its report. Outside an
allocation, with an unlimited job, or when squeue does not answer: None (no limit)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

# what the run keeps back from the job's time for the report and for writing run.json after the limit
REPORT_MARGIN_S = 60.0


def parse_time_left(text: str) -> float | None:
    """Slurm's %L ("[days-]hours:minutes:seconds", "minutes:seconds", "UNLIMITED", "INVALID") in
    seconds; None when unlimited or unreadable."""
    t = (text or "").strip()
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", t)
    if not m:
        return None
    days, hours, minutes, seconds = (int(x) if x else 0 for x in m.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def time_left(env: dict | None = None) -> tuple[float | None, str]:
    """(seconds the run may take inside this Slurm allocation, how it was found); (None, why) when there
    is no limit to keep."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID")
    if not job:
        return None, "not inside a Slurm allocation"
    squeue = shutil.which("squeue")
    if squeue is None:
        return None, f"inside Slurm job {job}, but squeue is not on PATH: no limit read"
    try:
        p = subprocess.run([squeue, "-h", "-j", job, "-o", "%L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"inside Slurm job {job}, but squeue failed ({type(e).__name__}): no limit read"
    left = parse_time_left(p.stdout.splitlines()[0] if p.returncode == 0 and p.stdout.strip() else "")
    if left is None:
        said = p.stdout.strip() or f"exit {p.returncode}"
        return None, f"Slurm job {job} has no time limit to keep (squeue %L: {said})"
    return max(0.0, left - REPORT_MARGIN_S), (f"Slurm job {job} has {left / 60:.1f} min left (squeue %L); "
                                              f"{REPORT_MARGIN_S:.0f} s kept back for the report")
