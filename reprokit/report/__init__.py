"""The run report, from a run directory: context, rendering (Markdown, HTML, JSON) and plots."""
