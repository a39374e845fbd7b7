"""The flat modules (files, checks, results, generate), the layout and the readers."""
