"""run.json's cell entries and the cell result files, read: valid or not, the cells without one, counts.

- `cell_entry`: a cell's entry in run.json `cells` (cell_id, stack, status, reason, process_wall_s,
  result_file);
- `check_result`, `valid_processes`: whether a result file on disk is a valid result of this run
  (and cell and process), in one line when it is not;
- `status_counts`: the statuses of a run's cells counted; `incomplete`: the cells with no usable
  result.

Pure reading: reprokit/run/record.py writes the entries and the files (and moves a bad file aside),
reprokit/run/reconcile.py the reconciled record.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from reprokit import files, formats, results, validate
from reprokit.errors import UserError
from reprokit.reader.status import Skip

# statuses that mean the cell's result is not (or no longer) there: --resume measures them again
NOT_THERE = ("missing", "invalid", "interrupted", "pending")
# statuses that are not failures: `run` and `report` exit 0 when every cell has one of them
NOT_FAILED = ("ok", "not_implemented", "skipped")


def cell_entry(cell_id: str, stack: str, status: str, reason: str | None,
               wall: float | None, skip: Skip | None = None) -> dict:
    """A cell's entry in run.json `cells` (`skip`: the --time-limit left or stopped it)."""
    entry = {"cell_id": cell_id, "stack": stack, "status": status, "reason": reason,
             "process_wall_s": wall, "result_file": f"cells/{results.cell_filename(cell_id)}"}
    if skip is not None:
        entry["skip"] = skip.to_doc()
    return entry


def status_counts(entries: Iterable[dict]) -> dict[str, int]:
    """{status: how many cells have it}, by status name."""
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    return dict(sorted(counts.items()))


def incomplete(run: dict) -> list[dict]:
    """The run's cells that have no usable result: missing, invalid, interrupted, pending."""
    return [e for e in run.get("cells") or [] if e.get("status") in NOT_THERE]


def check_result(path: Path, run_id: str, cell_id: str | None = None,
                 process: int | None = None) -> tuple[dict | None, str | None]:
    """(the result, None) when `path` is a valid cell result of this run (and cell and process),
    else (None, why not) in one line."""
    try:
        text = files.read_text_bounded(path, "cell_result")
    except FileNotFoundError:
        return None, "the file is missing"
    except (OSError, UnicodeDecodeError) as e:
        return None, f"unreadable ({e})"
    if not text.strip():
        return None, "the file is empty"
    try:
        doc = formats.upgrade("cell_result", files.loads_strict(text), str(path))
    except ValueError as e:
        return None, f"not valid JSON: truncated or corrupted ({e})"
    except UserError as e:  # a newer kit's result
        return None, str(e)
    errs = validate.errors("cell_result", doc)
    if errs:
        more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
        return None, f"does not match the cell_result schema: {errs[0]}{more}"
    if doc.get("run_id") != run_id:
        return None, f"belongs to run {doc.get('run_id')!r}, not {run_id!r}"
    if cell_id is not None and doc.get("cell_id") != cell_id:
        return None, f"holds cell {doc.get('cell_id')!r}, not {cell_id!r}"
    if doc.get("process") != process:
        return None, (f"is process file {doc.get('process')}" if doc.get("process")
                      else "is a main result, not a process file") + f" (expected {process})"
    return doc, None


def valid_processes(rundir: results.RunDir, cell_id: str, repeat: int,
                    run_id: str) -> dict[int, dict]:
    """{index: result} of the cell's valid process files (run --repeat K) of this run."""
    out = {}
    for i in range(1, repeat + 1):
        doc, _ = check_result(rundir.cell_path(cell_id, i), run_id, cell_id, i)
        if doc is not None:
            out[i] = doc
    return out
