"""Analysis: pure functions of results and data: statistics, FLOPs, rooflines, verdicts, claims."""
