"""Runners: how a stack's cells are started (local processes, Docker containers, Slurm jobs)."""
