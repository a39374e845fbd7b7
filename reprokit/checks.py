"""Argument and path checks: every bad input is one line naming the problem and the fix.

Each check raises reprokit.errors.UserError (exit status 2) and creates nothing: a bad input is
refused before any work starts and before anything is written. Numbers are checked as argparse
`type=` functions (`option`), so a bad value fails while the command line is parsed; paths,
free space and GPUs are checked by the commands before their first write (docs/BAD_INPUTS.md lists
every bad input and the message it gets).
"""

from __future__ import annotations

import codecs
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from reprokit.errors import UserError

# -- numbers ------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    return f"{x:g}"


def _describe(integer: bool, low: float | None, high: float | None, low_open: bool, high_open: bool,
              unit: str) -> str:
    what = "a whole number" if integer else "a finite number"
    what += f" {unit}" if unit else ""
    if low is not None and high is not None:
        if low_open and high_open:
            return f"{what} strictly between {_fmt(low)} and {_fmt(high)}"
        return f"{what} from {_fmt(low)} to {_fmt(high)}"
    if low is not None:
        return f"{what} {'above' if low_open else 'of at least'} {_fmt(low)}"
    if high is not None:
        return f"{what} {'below' if high_open else 'of at most'} {_fmt(high)}"
    return what


def number(flag: str, text: str, *, integer: bool = False, low: float | None = None,
           high: float | None = None, low_open: bool = False, high_open: bool = False,
           unit: str = "", example: str = "") -> int | float:
    """`text` as the value of `flag`: a (whole) finite number within [low, high] (open ends with
    low_open / high_open). nan, inf, words and out-of-range values are one-line UserErrors."""
    desc = _describe(integer, low, high, low_open, high_open, unit)
    fix = f"pass e.g. {flag} {example}" if example else f"see `reproduce.py --help` for {flag}"
    raw = str(text).strip()
    try:
        value: int | float = int(raw) if integer else float(raw)
    except ValueError:
        raise UserError(f"{flag} must be {desc}, not '{text}'; {fix}") from None
    if not math.isfinite(value):
        raise UserError(f"{flag} must be {desc}, not '{text}' (not finite); {fix}")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        raise UserError(f"{flag} must be {desc}, not '{text}'; {fix}")
    return value


def option(flag: str, **kwargs) -> Callable[[str], int | float]:
    """An argparse `type=` that checks the option's value with `number` (kwargs as there)."""
    def parse(text: str) -> int | float:
        return number(flag, text, **kwargs)
    parse.__name__ = flag.lstrip("-").replace("-", "_")
    return parse


_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def duration(flag: str, low_s: float = 60.0, high_s: float = 30 * 86_400.0) -> Callable[[str], float]:
    """An argparse `type=` for a duration: a number with s, m or h (a bare number is seconds), from
    `low_s` to `high_s`; returns seconds. Anything else is a one-line UserError."""
    def parse(text: str) -> float:
        raw = str(text).strip().lower()
        unit = raw[-1:] if raw[-1:] in _DURATION_UNITS else "s"
        digits = raw[:-1] if raw[-1:] in _DURATION_UNITS else raw
        fix = f"pass e.g. {flag} 14m, {flag} 900s or {flag} 1.5h"
        try:
            value = float(digits) * _DURATION_UNITS[unit]
        except ValueError:
            raise UserError(f"{flag} must be a duration (a number with s, m or h), not '{text}'; "
                            f"{fix}") from None
        if not math.isfinite(value) or not low_s <= value <= high_s:
            raise UserError(f"{flag} must be a duration from {_fmt(low_s)} s to {_fmt(high_s)} s, not "
                            f"'{text}'; {fix}")
        return value
    parse.__name__ = flag.lstrip("-").replace("-", "_")
    return parse


def gpus_option(text: str) -> str:
    """`run --gpus`: 'all', a count of at least 1, or comma-separated GPU ids/UUIDs
    (optionally 'device=...'), as the Docker runner takes them."""
    spec = str(text).strip()
    fix = "pass e.g. --gpus 1, --gpus all or --gpus 0,1"
    ids = spec[len("device="):] if spec.startswith("device=") else spec
    if ids == "all":
        return spec
    if ids.isdigit() and "," not in spec and not spec.startswith("device="):
        if int(ids) < 1:
            raise UserError(f"--gpus must be a GPU count of at least 1, 'all' or GPU ids, not '{text}'; "
                            f"{fix}, or drop --gpus for a CPU run")
        return spec
    parts = ids.split(",")
    if parts and all(p.isdigit() or p.startswith(("GPU-", "MIG-")) for p in parts):
        return spec
    raise UserError(f"--gpus must be a GPU count of at least 1, 'all' or comma-separated GPU ids, "
                    f"not '{text}'; {fix}")


# -- paths --------------------------------------------------------------------------------------


def nearest_existing(path: Path) -> Path:
    """`path` itself when it exists, else its nearest existing ancestor."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _write_error(d: Path) -> OSError | None:
    """Why a file cannot be created in directory d (None when it can). The probe is an unnamed
    temporary file (O_TMPFILE): nothing is left behind, not even for a moment's directory entry."""
    try:
        with tempfile.TemporaryFile(dir=d, prefix=".reprokit-write-test-"):
            pass
    except OSError as e:
        return e
    return None


def writable_dir(path: Path | str, what: str, fix: str) -> Path:
    """A directory that exists, or can be created (its nearest existing ancestor is a writable
    directory), and is writable. Creates nothing. `what` names it in the message ('--results
    results'), `fix` says what to do instead."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UserError(f"{what} is a file, not a directory; {fix}")
    base = nearest_existing(p)
    if not base.is_dir():
        raise UserError(f"{what} cannot be created: {base} is a file, not a directory; {fix}")
    err = _write_error(base)
    if err is not None:
        why = err.strerror or type(err).__name__
        if base == p.absolute():
            raise UserError(f"{what} is not writable ({why}); {fix}")
        raise UserError(f"{what} does not exist and cannot be created: {base} is not writable "
                        f"({why}); {fix}")
    return p


def free_mb(path: Path | str) -> int:
    """MB free on the file system that holds `path` (or would hold it: its nearest existing
    ancestor)."""
    return shutil.disk_usage(nearest_existing(Path(path))).free // 2**20


def free_space(path: Path | str, need_mb: int, what: str, why: str, fix: str) -> None:
    """At least `need_mb` MB free where `path` is (or would be created)."""
    free = free_mb(path)
    if free < need_mb:
        raise UserError(f"only {free} MB free under {nearest_existing(Path(path))}; {what} needs "
                        f"about {need_mb} MB ({why}); {fix}")


RUN_BASE_MB = 20  # run.json, jobs, the report with its plots
CELL_PROCESS_MB = 2  # one cell result and its log (a full legacy-2017 run takes 1.9 MB in all)


def run_space_mb(cell_processes: int) -> int:
    """The disk space a run is expected to need: a fixed part and a share per cell process
    (measured: docs/sample-run holds 21 cells, their logs and the report in 1.9 MB; ten times
    that, since --protocol published takes far more samples)."""
    return RUN_BASE_MB + CELL_PROCESS_MB * max(0, cell_processes)


def output_file(path: Path | str, flag: str, fix: str) -> Path:
    """A file to be written: not a directory, in a directory that exists or can be created and
    is writable. Creates nothing."""
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{flag} {p} is a directory; {fix}")
    writable_dir(p.parent, f"{flag} {p}: the directory {p.parent}", fix)
    return p


def input_file(path: Path | str, what: str, fix: str) -> Path:
    """A file to be read: it exists, is a regular file and is not empty."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"{what} {p} does not exist; {fix}")
    if not p.is_file():
        raise UserError(f"{what} {p} is not a file; {fix}")
    if p.stat().st_size == 0:
        raise UserError(f"{what} {p} is empty (0 bytes); {fix}")
    return p


def input_dir(path: Path | str, what: str, fix: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise UserError(f"{what} {p} does not exist; {fix}")
    if not p.is_dir():
        raise UserError(f"{what} {p} is not a directory; {fix}")
    return p


# The longest line a data file may hold. The corpora's lines are sentences and paragraphs (a few kB
# at most); the readers that come after this check (line counts, bench/corpora.py's loaders) hold a
# line whole, so a file without newlines was read into memory whole (2 GB: MemoryError at 2.19 GB RSS).
MAX_LINE_BYTES = 4 * 2**20


def text_file(path: Path | str, fix: str) -> Path:
    """A data file that is text: not empty, no NUL byte, valid UTF-8 (how bench/corpora.py reads
    every data set), no line longer than MAX_LINE_BYTES. Reads the file once, in blocks."""
    p = Path(path)
    size = p.stat().st_size
    if size == 0:
        raise UserError(f"data file {p} is empty (0 bytes); {fix}")
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, seen_text, line = 0, False, 0  # line: bytes since the last newline
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            nul = block.find(b"\0")
            if nul >= 0:
                raise UserError(f"data file {p} is not a text file (a NUL byte at offset "
                                f"{offset + nul}); {fix}")
            parts = block.split(b"\n")  # the line going on, whole lines, the line begun
            longest = max([line + len(parts[0]), *(len(x) for x in parts[1:])])
            line = line + len(block) if len(parts) == 1 else len(parts[-1])
            if longest > MAX_LINE_BYTES:
                raise UserError(f"data file {p} has a line longer than {MAX_LINE_BYTES:,} bytes (by "
                                f"offset {offset + len(block):,}), the longest a data file's line may "
                                f"be: it is not the data set's text; {fix}")
            try:
                decoder.decode(block)
            except UnicodeDecodeError as e:
                raise UserError(f"data file {p} is not UTF-8 text (byte {offset + e.start}: "
                                f"{e.reason}); {fix}") from None
            offset += len(block)
            seen_text = seen_text or bool(block.strip())
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as e:
            raise UserError(f"data file {p} is not UTF-8 text (it ends inside a character: "
                            f"{e.reason}); {fix}") from None
    if not seen_text:
        raise UserError(f"data file {p} holds only white space; {fix}")
    return p


# -- results ------------------------------------------------------------------------------------


def samples_ok(cell: dict, where: str) -> None:
    """Every sample and raw time of a cell result is a finite number from 0 to the largest
    plausible value (results.PLAUSIBLE_MAX): the harness refuses to write any other, and the result
    reader rejects them; this is the same rule for a result already in memory."""
    from reprokit import results

    cap = getattr(results, "PLAUSIBLE_MAX", 1e15)
    for name, m in (cell.get("metrics") or {}).items():
        for key in ("samples", "raw_seconds", "warmup_seconds"):
            for i, v in enumerate(m.get(key) or []):
                ok = isinstance(v, (int, float)) and not isinstance(v, bool) \
                    and math.isfinite(v) and 0 <= v <= cap
                if not ok:
                    raise UserError(f"{where}: metric {name} {key}[{i}] is {v!r}, not a finite "
                                    f"number from 0 to {cap:g}; the file is damaged: move it aside "
                                    "and re-measure the cell (`reproduce.py run --resume RUN`)")
