"""bench/, the stack side: the boundary, corpora, float modes, workloads, candidate stacks."""
