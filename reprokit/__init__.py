"""reprokit: re-run published deep-learning benchmarks in their original stacks."""

__version__ = "0.1.0"
