"""Probes: host and stack fingerprints, GPUs per cell, CPU and GPU peaks, GPU state."""
