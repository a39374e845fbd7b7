"""Running a plan: faults, repeats, progress, JIT warm-up, moved and snapshotted runs, resume."""
