"""The commands of the command line, one module each; only the one given is imported."""
