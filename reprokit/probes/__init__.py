"""Probes of the host: its fingerprint, CPU and GPU peaks, GPU state, each cell's GPUs, process identity."""
