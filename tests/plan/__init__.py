"""Planning: preflight, fallback chains, the probe cache, the design, budgets, devices."""
