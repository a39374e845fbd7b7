"""The ledger: verified runs from many machines put together, one answer per published number and claim.

`reproduce.py ledger DIR...` (reprokit/commands/ledger.py) walks folders for crates and run
directories, checks each (reprokit/ledger/read.py), keeps what it took from each in an embedded
SQLite store keyed by the run's content digest (reprokit/ledger/store.py), and writes the views,
ledger.json and a self-contained index.html (reprokit/ledger/views.py). Only allow-listed fields are
taken from a run, and a machine or GPU only as a salted hash (reprokit/ledger/fields.py).

Modules: `read` (find and check the inputs), `fields` (what is kept of a run, privacy), `store` (the
SQLite store), `views` (ledger.json and index.html, from the store alone), `build` (one build, start
to end). The views' parts: `claim_map` (each claim's status by device class and model), `cells` (per
cell and device model: distribution, percentiles, between-unit spread, history, instability, with
`stats` the thresholds and estimators), `machines` (each machine's facts and what differs from others
of its model) and `plots` (an inline SVG per published number).
"""
