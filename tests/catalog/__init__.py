"""The catalogue: suites, published numbers and their defects, variants, data sets."""
