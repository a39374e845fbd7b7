"""The kit's catalogue: suites, stacks, published numbers, data sets and units, loaded from data/."""
