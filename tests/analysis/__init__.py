"""Analysis: statistics, steady state, intervals, verdicts, claims, comparisons, peaks."""
