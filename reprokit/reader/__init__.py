"""A run read back: its record (run.json) reconciled with the result files on disk; runs and writes nothing.

The analysis, the report and the run itself read a run directory through this package: it imports
no execution code (nothing of run/, runners/ or containers/), so what reads results cannot start,
stop or lock anything. What is written back (a reconciled run.json, a re-merged result, a bad file
moved aside) goes through reprokit/run/record.py, the one writer of run.json.

- cells.py      run.json's cell entries and the cell result files: is a file a valid result of this
                run, which cells have none, how many cells have each status
- merge.py      `run --repeat K`: a cell's process files merged into its main result
- lock.py       who holds a run's lock, read from its .lock file (reprokit/run/lifecycle.py takes it)
- reconcile.py  run.json brought in line with cells/, in memory (reprokit/run/reconcile.py writes it)
"""
