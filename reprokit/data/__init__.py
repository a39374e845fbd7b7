"""The kit's data: suites, published numbers, sources, stacks, peaks, policies (YAML, schema-checked)."""
