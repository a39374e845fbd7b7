"""A run planned before anything is launched: cells, preflight, fallback chains, probe cache, design."""
