"""A plan run: serial and concurrent execution, the run record, reconcile, lifecycle, progress."""
