"""Runners: local, Docker, Slurm and its launchers, environments and venvs."""
