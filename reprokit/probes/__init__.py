"""Probes of the host: its fingerprint, CPU and GPU peaks, GPU state, and the GPUs each cell had."""
