"""Every bad input is one line on stderr and exit status 2, refused before anything is written.

CASES mirrors the table in docs/BAD_INPUTS.md row for row (a test checks that they agree). Each
case runs the real command line, in-process through `reprokit.cli.main` or (`proc=True`) as a
`python reproduce.py` subprocess, in a fresh directory ($TMP, the working directory, which also
holds the data and image lock files), and asserts: exit 2, exactly one line on stderr and it is the
row's message (paths under $TMP written as $TMP), no traceback, nothing on stdout, and nothing
written or moved anywhere under $TMP.

Read-only directories and a full disk are real: a tmpfs remounted read-only and a 1 MB tmpfs.
Root ignores permission bits, so these need mount (the tests run as root in CI); a test that
cannot set its precondition fails saying so, it never skips.

After changing a message: `python tests/commands/test_bad_inputs.py --table` runs every case for real and
prints the message each gets; review them, paste them into CASES, then
`python tests/commands/test_bad_inputs.py --write-docs` rewrites the table of docs/BAD_INPUTS.md from CASES.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "tests" / "data" / "runs"
DOC = REPO / "docs" / "BAD_INPUTS.md"
sys.path.insert(0, str(REPO))


@dataclass
class Case:
    situation: str  # keys of SITUATIONS the case needs, space-separated ("" for none)
    command: str  # as typed in $TMP, starting with reproduce.py
    message: str  # the one line on stderr, paths under $TMP as $TMP
    proc: bool = False  # run as a real `python reproduce.py` subprocess
    extra: dict = field(default_factory=dict)


# -- situations: what is on disk before the command runs ----------------------------------------
def _tar(path: Path, members: list[tuple[str, bytes]], gz: bool = False) -> bytes:
    with tarfile.open(path, "w:gz" if gz else "w") as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_700_000_000
            t.addfile(info, io.BytesIO(data))
    return path.read_bytes()


def _archive_members() -> list[tuple[str, bytes]]:
    """The members of an archive as `reproduce.py archive` writes them (one fake image)."""
    image = bytes(range(256)) * 800
    image_id = "sha256:" + "1" * 64
    lock = json.dumps({"schema_version": 1, "kind": "image_lock", "images": {
        "smoke-python:cpu": {"image_id": image_id}}}).encode()
    manifest = {"schema_version": 1, "kind": "image_archive", "created": "2026-11-25T00:00:00Z",
                "suite": "smoke", "flavour": "cpu", "lock_sha256": hashlib.sha256(lock).hexdigest(),
                "images": [{"key": "smoke-python:cpu", "tag": "reprokit/smoke-python:cpu-x",
                            "image_id": image_id, "file": "images/smoke-python-cpu.tar",
                            "sha256": hashlib.sha256(image).hexdigest(), "size": len(image),
                            "layers": {}, "layer_order": [], "config": "c.json"}]}
    return [("images/smoke-python-cpu.tar", image), ("lock.json", lock),
            ("reprokit-archive.json", json.dumps(manifest).encode())]


def _copy_run(src: Path, dst: Path, suite: str | None = None) -> Path:
    shutil.copytree(src, dst)
    if suite:
        run = json.loads((dst / "run.json").read_text())
        run.update(suite=suite, run_id=dst.name, cells=[])
        (dst / "run.json").write_text(json.dumps(run, indent=1))
        shutil.rmtree(dst / "cells")
    return dst


def _damage_first_sample(rundir: Path, text: str) -> None:
    """Write `text` (NaN, 1e308, -0.5) as the first sample of the run's first cell file."""
    f = sorted((rundir / "cells").glob("*.json"))[0]
    doc = json.loads(f.read_text())
    m = next(iter(doc["metrics"].values()))
    m["samples"][0] = "@@"
    f.write_text(json.dumps(doc, indent=1).replace('"@@"', text))


class Mounts:
    """tmpfs mounts made for one test, unmounted after it."""

    def __init__(self):
        self.points: list[Path] = []

    def _mount(self, *args: str) -> None:
        p = subprocess.run(["mount", *args], capture_output=True, text=True)
        if p.returncode:
            pytest.fail(f"cannot set the precondition: `mount {' '.join(args)}` failed "
                        f"({p.stderr.strip() or p.returncode}); these tests need root (CI runs them "
                        "as root): a read-only directory or a full disk cannot be faked otherwise")

    def tmpfs(self, where: Path, size: str) -> Path:
        where.mkdir()
        self._mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where))
        self.points.append(where)
        return where

    def read_only(self, where: Path) -> None:
        self._mount("-o", "remount,ro", str(where))
        try:
            (where / ".probe").write_text("x")
        except OSError:
            return
        pytest.fail(f"cannot set the precondition: {where} is still writable after remount,ro")

    def close(self) -> None:
        for p in reversed(self.points):
            subprocess.run(["umount", "-l", str(p)], capture_output=True)


def _ro(tmp: Path, mounts: Mounts) -> None:
    ro = mounts.tmpfs(tmp / "ro", "4m")
    _copy_run(RUNS / "cpu-a", ro / "run", suite="smoke")
    mounts.read_only(ro)


def _data(tmp: Path, name: str, content: bytes) -> None:
    d = tmp / "data" / "ptb" if name.startswith("ptb") else tmp / "data"
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(content)


def _cells_loop(rundir: Path) -> None:
    shutil.rmtree(rundir / "cells")
    (rundir / "cells").symlink_to("cells")


def _link_first_cell(rundir: Path, target: str) -> None:
    f = sorted((rundir / "cells").glob("*.json"))[0]
    f.unlink()
    f.symlink_to(target)


@functools.cache
def _sample_run() -> Path:
    """docs/sample-run's run with its report as today's kit renders it (`reproduce.py report`), made
    once, outside every case's $TMP. tests/report/test_sample_run.py holds the committed report to
    today's rendering; the cases here are about a command's refusal, which export reaches only past
    its check that the report is current."""
    (run,) = (REPO / "docs" / "sample-run").iterdir()
    where = Path(tempfile.mkdtemp(prefix="reprokit-bad-inputs-"))
    atexit.register(shutil.rmtree, where, ignore_errors=True)
    shutil.copytree(run, where / run.name)
    subprocess.run([sys.executable, str(REPO / "reproduce.py"), "report", run.name], cwd=where,
                   check=True, capture_output=True, timeout=300)
    return where / run.name


def _sample(tmp: Path) -> None:
    shutil.copytree(_sample_run(), tmp / "s")
    (tmp / "s" / "logs").mkdir(exist_ok=True)


def _crate(tmp: Path) -> None:
    subprocess.run([sys.executable, str(REPO / "reproduce.py"), "export", "s", "-o", "s.zip"], cwd=tmp,
                   check=True, capture_output=True, timeout=300)


_LOCKS: list[int] = []  # descriptors holding a run's lock until the test process ends


def _hold_lock(rundir: Path) -> None:
    """The run's lock held as a live driver holds it: an exclusive flock on its .lock file, which
    names the holder (reprokit/reader/lock.py)."""
    import fcntl

    (rundir / ".lock").write_text(json.dumps({"pid": 4242, "host": "node1",
                                              "started": "2026-11-28T00:00:00Z"}))
    fd = os.open(rundir / ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _LOCKS.append(fd)


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


# Bytes a command line can hold but a table must not (`cat` of the table would send them): written
# <ESC>, <BEL> and <LF> in CASES and the table, passed to the command as the bytes themselves.
CONTROLS = {"<ESC>": "\x1b", "<BEL>": "\x07", "<LF>": "\n"}


def argv_of(case: Case) -> list[str]:
    out = []
    for arg in shlex.split(case.command)[1:]:
        for shown, byte in CONTROLS.items():
            arg = arg.replace(shown, byte)
        out.append(arg)
    return out


def _good_ptb(tmp: Path) -> None:
    for split in ("train", "valid", "test"):
        _data(tmp, f"ptb.{split}.txt", b" the cat sat on the mat \n a dog ran \n")


def _newer_store(path: Path) -> None:
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.close()


SITUATIONS = {
    "no-gpu": ("this host has no GPU (NVML finds none; on a host with one the in-process test hides "
               "it)", lambda t, m: None),
    "data-good-ptb": ("`data/ptb/` holds three good PTB files", lambda t, m: _good_ptb(t)),
    "file": ("`results.txt` is a file", lambda t, m: (t / "results.txt").write_text("a file\n")),
    "empty-dir": ("`empty/` is an empty directory", lambda t, m: (t / "empty").mkdir()),
    "ro": ("`ro/` is a read-only file system (tmpfs remounted ro) holding a smoke run `ro/run`", _ro),
    "tiny": ("`tiny/` is a 1 MB file system (tmpfs)", lambda t, m: m.tmpfs(t / "tiny", "1m")),
    "runs": ("`a/` and `b/` are two stored runs (tests/data/runs/cpu-a, cpu-b)",
             lambda t, m: (_copy_run(RUNS / "cpu-a", t / "a"), _copy_run(RUNS / "cpu-b", t / "b"))),
    "b-nan": ("the first sample of `b/`'s first cell file is NaN",
              lambda t, m: _damage_first_sample(t / "b", "NaN")),
    "b-big": ("the first sample of `b/`'s first cell file is 1e308",
              lambda t, m: _damage_first_sample(t / "b", "1e308")),
    "b-neg": ("the first sample of `b/`'s first cell file is -0.5",
              lambda t, m: _damage_first_sample(t / "b", "-0.5")),
    "data-empty": ("`data/ptb/ptb.train.txt` is empty (0 bytes)",
                   lambda t, m: _data(t, "ptb.train.txt", b"")),
    "data-binary": ("`data/nietzsche.txt` holds NUL bytes (a binary file)",
                    lambda t, m: _data(t, "nietzsche.txt", b"PREFACE\n\x00\x01\x02\x00")),
    "data-latin1": ("`data/nietzsche.txt` is Latin-1, not UTF-8",
                    lambda t, m: _data(t, "nietzsche.txt", "caf\xe9 au lait\n".encode("latin-1"))),
    "data-blank": ("`data/ptb/ptb.train.txt` holds only spaces and newlines",
                   lambda t, m: _data(t, "ptb.train.txt", b" \n \n\n")),
    "cut-tar": ("`cut.tar`: a complete archive's first 60 %",
                lambda t, m: (t / "cut.tar").write_bytes(
                    (lambda b: b[:len(b) * 6 // 10])(_tar(t / "cut.tar", _archive_members())))),
    "cut-tar-end": ("`end.tar`: an archive that stops after its image member, before the lock and "
                    "manifest (cut at a member boundary)",
                    lambda t, m: (t / "end.tar").write_bytes(
                        _tar(t / "end.tar", _archive_members())[:512 + 512 * 400])),
    "cut-gz": ("`cut.tar.gz`: a complete gzip archive without its last 100 bytes",
               lambda t, m: (t / "cut.tar.gz").write_bytes(
                   _tar(t / "cut.tar.gz", _archive_members(), gz=True)[:-100])),
    "not-archive": ("`notes.txt` is a text file", lambda t, m: (t / "notes.txt").write_text("notes\n")),
    "bad-date-yaml": ("`python.yaml` maps a date that is no date (`2021-13-01: python3`)",
                      lambda t, m: (t / "python.yaml").write_text("2021-13-01: python3\n")),
    "empty-file": ("`empty.tar` is empty (0 bytes)", lambda t, m: (t / "empty.tar").write_bytes(b"")),
    "plain-tar": ("`plain.tar` is a tar archive of other files",
                  lambda t, m: _tar(t / "plain.tar", [("README", b"hello\n")])),
    # runs and files of the fault battery
    "run-a": ("`a/` is a stored run (tests/data/runs/cpu-a)",
              lambda t, m: _copy_run(RUNS / "cpu-a", t / "a")),
    "smoke-s": ("`s/` is a stored run of suite smoke (tests/data/runs/cpu-b relabelled)",
                lambda t, m: _copy_run(RUNS / "cpu-b", t / "s", suite="smoke")),
    "a-run-json-broken": ("`a/run.json` is not JSON (`{broken`)",
                          lambda t, m: (t / "a" / "run.json").write_text("{broken")),
    "a-cells-loop": ("`a/cells` is a symbolic link to itself (a loop)", lambda t, m: _cells_loop(t / "a")),
    "b-dev-zero": ("`b/`'s first cell file is a symbolic link to /dev/zero",
                   lambda t, m: _link_first_cell(t / "b", "/dev/zero")),
    # crates and links
    "sample": ("`s/` is a stored run with its report (docs/sample-run)", lambda t, m: _sample(t)),
    "s-passwd": ("`s/logs/p.log` is a symbolic link to /etc/passwd",
                 lambda t, m: (t / "s" / "logs" / "p.log").symlink_to("/etc/passwd")),
    "s-fifo": ("`s/logs/p.log` is a FIFO", lambda t, m: os.mkfifo(t / "s" / "logs" / "p.log")),
    "s-crate": ("`s.zip` is the crate `reproduce.py export s -o s.zip` wrote", lambda t, m: _crate(t)),
    "out-dangling": ("`out.html` is a symbolic link to nothing",
                     lambda t, m: (t / "out.html").symlink_to("nowhere")),
    "flood": ("`flood` is an executable that prints without end (`exec yes`)",
              lambda t, m: _executable(t / "flood", "#!/bin/sh\nexec yes\n")),
    "data-long-line": ("`data/ptb/ptb.train.txt` is one line of 4 MiB and 1 byte (no newline; "
                       "checks.MAX_LINE_BYTES is 4 MiB)",
                       lambda t, m: _data(t, "ptb.train.txt", b"x" * (4 * 2**20 + 1))),
    "s-locked": ("a run driver holds `s/`'s lock (flock on `s/.lock`, which names pid 4242 on host "
                 "node1)", lambda t, m: _hold_lock(t / "s")),
    "store-newer": ("`new.sqlite` is a ledger store of format version 99 (a newer kit's)",
                    lambda t, m: _newer_store(t / "new.sqlite")),
    "bare-venv": ("`bare/` is a venv without the kit's packages (`python3 -m venv --without-pip bare`)",
                  lambda t, m: subprocess.run([sys.executable, "-m", "venv", "--without-pip",
                                               str(t / "bare")], check=True, timeout=300)),
}


# -- the cases: one per row of docs/BAD_INPUTS.md -----------------------------------------------
CASES = [
    # run: numbers
    Case("", "reproduce.py run --suite smoke --min-samples nan",
         "reproduce.py: error: --min-samples must be a whole number from 1 to 100000, not 'nan'; pass "
         "e.g. --min-samples 6"),
    Case("", "reproduce.py run --suite smoke --min-samples 0",
         "reproduce.py: error: --min-samples must be a whole number from 1 to 100000, not '0'; pass e.g. "
         "--min-samples 6"),
    Case("", "reproduce.py run --suite smoke --min-samples -3",
         "reproduce.py: error: --min-samples must be a whole number from 1 to 100000, not '-3'; pass e.g. "
         "--min-samples 6"),
    Case("", "reproduce.py run --suite smoke --min-samples 2.5",
         "reproduce.py: error: --min-samples must be a whole number from 1 to 100000, not '2.5'; pass "
         "e.g. --min-samples 6"),
    Case("", "reproduce.py run --suite smoke --min-samples 10000000",
         "reproduce.py: error: --min-samples must be a whole number from 1 to 100000, not '10000000'; "
         "pass e.g. --min-samples 6"),
    Case("", "reproduce.py run --suite smoke --time-budget nan",
         "reproduce.py: error: --time-budget must be a finite number of seconds from 0 to 86400, not "
         "'nan' (not finite); pass e.g. --time-budget 20", proc=True),
    Case("", "reproduce.py run --suite smoke --time-budget inf",
         "reproduce.py: error: --time-budget must be a finite number of seconds from 0 to 86400, not "
         "'inf' (not finite); pass e.g. --time-budget 20"),
    Case("", "reproduce.py run --suite smoke --time-budget -1",
         "reproduce.py: error: --time-budget must be a finite number of seconds from 0 to 86400, not "
         "'-1'; pass e.g. --time-budget 20"),
    Case("", "reproduce.py run --suite smoke --time-budget ten",
         "reproduce.py: error: --time-budget must be a finite number of seconds from 0 to 86400, not "
         "'ten'; pass e.g. --time-budget 20"),
    Case("", "reproduce.py run --suite smoke --time-budget 1e9",
         "reproduce.py: error: --time-budget must be a finite number of seconds from 0 to 86400, not "
         "'1e9'; pass e.g. --time-budget 20"),
    Case("", "reproduce.py run --suite smoke --repeat 0",
         "reproduce.py: error: --repeat must be a whole number from 1 to 100, not '0'; pass e.g. --repeat "
         "3"),
    Case("", "reproduce.py run --suite smoke --repeat -2",
         "reproduce.py: error: --repeat must be a whole number from 1 to 100, not '-2'; pass e.g. "
         "--repeat 3"),
    Case("", "reproduce.py run --suite smoke --repeat nan",
         "reproduce.py: error: --repeat must be a whole number from 1 to 100, not 'nan'; pass e.g. "
         "--repeat 3"),
    Case("", "reproduce.py run --suite smoke --repeat 1.5",
         "reproduce.py: error: --repeat must be a whole number from 1 to 100, not '1.5'; pass e.g. "
         "--repeat 3"),
    Case("", "reproduce.py run --suite smoke --runner docker --gpus 0",
         "reproduce.py: error: --gpus must be a GPU count of at least 1, 'all' or GPU ids, not '0'; pass "
         "e.g. --gpus 1, --gpus all or --gpus 0,1, or drop --gpus for a CPU run"),
    Case("", "reproduce.py run --suite smoke --runner docker --gpus -1",
         "reproduce.py: error: --gpus must be a GPU count of at least 1, 'all' or comma-separated GPU "
         "ids, not '-1'; pass e.g. --gpus 1, --gpus all or --gpus 0,1"),
    Case("", "reproduce.py run --suite smoke --runner docker --gpus nan",
         "reproduce.py: error: --gpus must be a GPU count of at least 1, 'all' or comma-separated GPU "
         "ids, not 'nan'; pass e.g. --gpus 1, --gpus all or --gpus 0,1"),
    # run --runner slurm: its options
    Case("", "reproduce.py run --suite smoke --slurm-partition gpu",
         "reproduce.py: error: --slurm-partition applies to --runner slurm only; add --runner slurm or "
         "drop --slurm-partition"),
    Case("", "reproduce.py run --suite smoke --detach",
         "reproduce.py: error: --detach applies to --runner slurm only; add --runner slurm or drop "
         "--detach"),
    Case("", "reproduce.py run --suite smoke --runner slurm --slurm-mem 12Q",
         "reproduce.py: error: --slurm-mem must be a size such as 16G or 4000M, not '12Q'; pass e.g. "
         "--slurm-mem 16G"),
    Case("", "reproduce.py run --suite smoke --runner slurm --slurm-time 0",
         "reproduce.py: error: --slurm-time must be a whole number from 1 to 525600, not '0'; pass e.g. "
         "--slurm-time 30"),
    # compare: numbers and runs
    Case("runs", "reproduce.py compare a b --alpha 5",
         "reproduce.py: error: --alpha must be a finite number strictly between 0 and 1, not '5'; pass "
         "e.g. --alpha 0.05", proc=True),
    Case("runs", "reproduce.py compare a b --alpha 0",
         "reproduce.py: error: --alpha must be a finite number strictly between 0 and 1, not '0'; pass "
         "e.g. --alpha 0.05"),
    Case("runs", "reproduce.py compare a b --alpha 1",
         "reproduce.py: error: --alpha must be a finite number strictly between 0 and 1, not '1'; pass "
         "e.g. --alpha 0.05"),
    Case("runs", "reproduce.py compare a b --alpha nan",
         "reproduce.py: error: --alpha must be a finite number strictly between 0 and 1, not 'nan' (not "
         "finite); pass e.g. --alpha 0.05"),
    Case("runs", "reproduce.py compare a b --alpha -0.05",
         "reproduce.py: error: --alpha must be a finite number strictly between 0 and 1, not '-0.05'; "
         "pass e.g. --alpha 0.05"),
    Case("runs", "reproduce.py compare a b --threshold inf",
         "reproduce.py: error: --threshold must be a finite number from 0 to 100, not 'inf' (not finite); "
         "pass e.g. --threshold 0.05"),
    Case("runs", "reproduce.py compare a b --threshold -0.1",
         "reproduce.py: error: --threshold must be a finite number from 0 to 100, not '-0.1'; pass e.g. "
         "--threshold 0.05"),
    Case("runs", "reproduce.py compare a b --threshold x",
         "reproduce.py: error: --threshold must be a finite number from 0 to 100, not 'x'; pass e.g. "
         "--threshold 0.05"),
    Case("runs", "reproduce.py compare a a",
         "reproduce.py: error: RUN_A and RUN_B are the same run (a); compare two different runs"),
    Case("runs", "reproduce.py compare a nothere",
         "reproduce.py: error: 'nothere' is not a run: no run.json there; give results/<run-id> or a run "
         "id"),
    Case("runs b-nan", "reproduce.py compare a b",
         "reproduce.py: error: cannot compare b: b/cells/000__tensorflow__basic_lstm__b128-s30-h512.json "
         "is unreadable (NaN is not a number JSON allows); re-run the cell or remove the file", proc=True),
    Case("runs b-big", "reproduce.py compare a b",
         "reproduce.py: error: cannot compare b: b/cells/000__tensorflow__basic_lstm__b128-s30-h512.json "
         "does not match the cell_result schema: metrics/train_time_per_example/samples/0: 1e+308 is "
         "greater than the maximum of 1000000000000000.0; move the file aside and re-measure its cell "
         "with `reproduce.py run --suite SUITE --resume b`"),
    Case("runs b-neg", "reproduce.py compare a b",
         "reproduce.py: error: cannot compare b: b/cells/000__tensorflow__basic_lstm__b128-s30-h512.json "
         "does not match the cell_result schema: metrics/train_time_per_example/samples/0: -0.5 is less "
         "than the minimum of 0; move the file aside and re-measure its cell with `reproduce.py run "
         "--suite SUITE --resume b`"),
    # names, runners, devices, GPUs
    Case("", "reproduce.py run --suite nope",
         "reproduce.py: error: unknown suite 'nope'; known suites: cudnn-lstm-2018, gpu-smoke, "
         "keras-mxnet-2018, legacy-2017, modern, smoke, stacked-lstm-2019", proc=True),
    Case("", "reproduce.py run --suite smoke --cells 'no/such/*'",
         "reproduce.py: error: no cell of suite smoke matches no/such/*; see `reproduce.py list --suite "
         "smoke`"),
    Case("", "reproduce.py run",
         "reproduce.py: error: the following arguments are required: --suite; see `reproduce.py run "
         "--help`"),
    Case("", "reproduce.py run --suite smoke --frobnicate 1",
         "reproduce.py: error: unrecognized arguments: --frobnicate 1; see `reproduce.py --help`"),
    Case("", "reproduce.py run --suite smoke --runner kubernetes",
         "reproduce.py: error: argument --runner: invalid choice: 'kubernetes' (choose from 'auto', "
         "'local', 'docker', 'slurm'); see `reproduce.py run --help`"),
    Case("", "reproduce.py run --suite smoke --device tpu",
         "reproduce.py: error: argument --device: invalid choice: 'tpu' (choose from 'auto', 'cpu', "
         "'gpu'); see `reproduce.py run --help`"),
    Case("", "reproduce.py run --suite smoke --runner local --gpus 1",
         "reproduce.py: error: --gpus applies to the docker runner only; drop --gpus or pass --runner "
         "docker"),
    Case("", "reproduce.py run --suite smoke --device cpu --runner docker --gpus 1",
         "reproduce.py: error: --gpus asks for GPUs but --device cpu for none; drop --gpus or pass "
         "--device gpu"),
    Case("no-gpu", "reproduce.py run --suite smoke --device gpu",
         "reproduce.py: error: --device gpu: this host has no GPU (no NVIDIA driver: "
         "NVMLError_LibraryNotFound: NVML Shared Library Not Found); run with --device cpu (or auto), or "
         "on a host with an NVIDIA GPU and its driver"),
    Case("no-gpu", "reproduce.py run --suite smoke --runner docker --gpus 1",
         "reproduce.py: error: --gpus 1: this host has no GPU (no NVIDIA driver: "
         "NVMLError_LibraryNotFound: NVML Shared Library Not Found); run with --device cpu (or auto), or "
         "on a host with an NVIDIA GPU and its driver"),
    Case("no-gpu", "reproduce.py preflight --suite smoke --device gpu",
         "reproduce.py: error: preflight --device gpu: this host has no GPU (no NVIDIA driver: "
         "NVMLError_LibraryNotFound: NVML Shared Library Not Found); run it with --device cpu, on the "
         "host with the NVIDIA GPU and its driver, or with --fingerprint FILE of it"),
    Case("", "reproduce.py preflight --suite smoke --fingerprint missing.json",
         "reproduce.py: error: --fingerprint missing.json: cannot read it (No such file or directory); "
         "give the JSON file `reproduce.py fingerprint` wrote on the host to plan for"),
    Case("", "reproduce.py preflight --suite nope",
         "reproduce.py: error: unknown suite 'nope'; known suites: cudnn-lstm-2018, gpu-smoke, "
         "keras-mxnet-2018, legacy-2017, modern, smoke, stacked-lstm-2019"),
    Case("", "reproduce.py list --suite nope",
         "reproduce.py: error: unknown suite 'nope'; known suites: cudnn-lstm-2018, gpu-smoke, "
         "keras-mxnet-2018, legacy-2017, modern, smoke, stacked-lstm-2019"),
    # results directories and runs
    Case("file", "reproduce.py run --suite smoke --results results.txt",
         "reproduce.py: error: --results results.txt is a file, not a directory; pass --results DIR "
         "naming a directory you can write to", proc=True),
    Case("file", "reproduce.py run --suite smoke --results results.txt/new",
         "reproduce.py: error: --results results.txt/new cannot be created: $TMP/results.txt is a file, "
         "not a directory; pass --results DIR naming a directory you can write to"),
    Case("ro", "reproduce.py run --suite smoke --results ro",
         "reproduce.py: error: --results ro is not writable (Read-only file system); pass --results DIR "
         "naming a directory you can write to"),
    Case("ro", "reproduce.py run --suite smoke --results ro/new",
         "reproduce.py: error: --results ro/new does not exist and cannot be created: $TMP/ro is not "
         "writable (Read-only file system); pass --results DIR naming a directory you can write to"),
    Case("tiny", "reproduce.py run --suite smoke --results tiny",
         "reproduce.py: error: only 1 MB free under $TMP/tiny; this run needs about 24 MB (20 MB + 2 MB "
         "for each of 2 cell processes); free space there or pass --results DIR on another disk"),
    Case("", "reproduce.py run --suite smoke --resume nothere",
         "reproduce.py: error: 'nothere' is not a run: no run.json there; give results/<run-id> or a run "
         "id", proc=True),
    Case("empty-dir", "reproduce.py run --suite smoke --resume empty",
         "reproduce.py: error: 'empty' is not a run: no run.json there; give results/<run-id> or a run id"),
    Case("ro", "reproduce.py run --suite smoke --resume ro/run",
         "reproduce.py: error: --resume ro/run is not writable (Read-only file system); make the run "
         "directory writable, or copy it to a writable disk and resume the copy"),
    Case("", "reproduce.py report nothere",
         "reproduce.py: error: 'nothere' is not a run: no run.json there; give results/<run-id> or a run "
         "id"),
    Case("empty-dir", "reproduce.py report empty",
         "reproduce.py: error: 'empty' is not a run: no run.json there; give results/<run-id> or a run id"),
    Case("ro", "reproduce.py report ro/run",
         "reproduce.py: error: the run directory ro/run is not writable (Read-only file system); make it "
         "writable, or copy the run to a writable disk and report the copy", proc=True),
    # data files
    Case("", "reproduce.py data --check nothere",
         "reproduce.py: error: data directory nothere does not exist; pass the directory holding the data "
         "files (see `reproduce.py data` for the layout)"),
    Case("file", "reproduce.py data --check results.txt",
         "reproduce.py: error: data directory results.txt is not a directory; pass the directory holding "
         "the data files, not a file (unpack archives first)"),
    Case("data-empty", "reproduce.py data --check data",
         "reproduce.py: error: data file $TMP/data/ptb/ptb.train.txt is empty (0 bytes); replace it with "
         "the file from simple-examples.tgz, or remove the ptb files to use the stand-in (see "
         "`reproduce.py data`)", proc=True),
    Case("data-blank", "reproduce.py data --check data",
         "reproduce.py: error: data file $TMP/data/ptb/ptb.train.txt holds only white space; replace it "
         "with the file from simple-examples.tgz, or remove the ptb files to use the stand-in (see "
         "`reproduce.py data`)"),
    Case("data-binary", "reproduce.py data --check data",
         "reproduce.py: error: data file $TMP/data/nietzsche.txt is not a text file (a NUL byte at offset "
         "8); replace it with the file from the data set release, or remove the nietzsche files to use "
         "the stand-in (see `reproduce.py data`)"),
    Case("data-good-ptb data-binary", "reproduce.py data --check data",
         "reproduce.py: error: data file $TMP/data/nietzsche.txt is not a text file (a NUL byte at offset "
         "8); replace it with the file from the data set release, or remove the nietzsche files to use "
         "the stand-in (see `reproduce.py data`)"),
    Case("data-latin1", "reproduce.py data --check data",
         "reproduce.py: error: data file $TMP/data/nietzsche.txt is not UTF-8 text (byte 3: invalid "
         "continuation byte); replace it with the file from the data set release, or remove the nietzsche "
         "files to use the stand-in (see `reproduce.py data`)"),
    Case("empty-dir", "reproduce.py data --check empty --lock empty",
         "reproduce.py: error: --lock empty is a directory; pass --lock PATH naming a file"),
    Case("", "reproduce.py data --update-lock",
         "reproduce.py: error: --update-lock, --strict and --subset apply to --check DIR only; add "
         "--check DIR or drop them"),
    Case("", "reproduce.py run --suite smoke --data nothere",
         "reproduce.py: error: --data nothere does not exist; pass the directory holding the data files "
         "(see `reproduce.py data` for the layout)"),
    Case("file", "reproduce.py run --suite smoke --data results.txt",
         "reproduce.py: error: --data results.txt is not a directory; pass the directory holding the data "
         "files (see `reproduce.py data` for the layout)"),
    Case("data-empty", "reproduce.py run --suite stacked-lstm-2019 --cells 003/pytorch/eager_cudnn/forward "
         "--runner local --data data",
         "reproduce.py: error: data file $TMP/data/ptb/ptb.train.txt is empty (0 bytes); replace it with "
         "the file from simple-examples.tgz, or remove the ptb files to use the stand-in (see "
         "`reproduce.py data`)"),
    Case("", "reproduce.py run --suite smoke --data-lock lock.json",
         "reproduce.py: error: --data-lock applies with --data DIR only; add --data DIR or drop "
         "--data-lock"),
    # archives and images
    Case("", "reproduce.py restore missing.tar",
         "reproduce.py: error: archive missing.tar does not exist; give the file `reproduce.py archive -o "
         "FILE` wrote"),
    Case("empty-file", "reproduce.py restore empty.tar",
         "reproduce.py: error: archive empty.tar is empty (0 bytes); give the file `reproduce.py archive "
         "-o FILE` wrote"),
    Case("not-archive", "reproduce.py restore notes.txt",
         "reproduce.py: error: notes.txt is not a tar archive (nor a gzip, bzip2 or xz compressed one); "
         "give the file `reproduce.py archive -o FILE` wrote"),
    Case("cut-tar", "reproduce.py restore cut.tar",
         "reproduce.py: error: cut.tar is truncated or damaged (ReadError: unexpected end of data); copy "
         "it again, or make it again with `reproduce.py archive`", proc=True),
    Case("cut-tar-end", "reproduce.py restore end.tar",
         "reproduce.py: error: end.tar is truncated: it stops after its member "
         "images/smoke-python-cpu.tar without the end-of-archive marker (205312 bytes); copy it again, or "
         "make it again with `reproduce.py archive`"),
    Case("cut-gz", "reproduce.py restore cut.tar.gz",
         "reproduce.py: error: cut.tar.gz is truncated or damaged (EOFError: Compressed file ended before "
         "the end-of-stream marker was reached); copy it again, or make it again with `reproduce.py "
         "archive`"),
    Case("plain-tar", "reproduce.py restore plain.tar",
         "reproduce.py: error: plain.tar: no reprokit-archive.json inside; not a reprokit archive (or one "
         "cut short while it was written): make it again with `reproduce.py archive`"),
    Case("empty-dir", "reproduce.py restore empty",
         "reproduce.py: error: archive empty is not a file; give the file `reproduce.py archive -o FILE` "
         "wrote"),
    Case("empty-dir", "reproduce.py archive --suite smoke -o empty",
         "reproduce.py: error: -o empty is a directory; pass -o FILE in a directory you can write to"),
    Case("file", "reproduce.py archive --suite smoke -o results.txt/smoke.tar",
         "reproduce.py: error: -o results.txt/smoke.tar: the directory results.txt is a file, not a "
         "directory; pass -o FILE in a directory you can write to"),
    Case("tiny", "reproduce.py archive --suite smoke -o tiny/smoke.tar",
         "reproduce.py: error: only 1 MB free under $TMP/tiny; the archive needs about 10 MB (the 2 "
         "image(s) as the lock records them, uncompressed); free space there or pass -o FILE on another "
         "disk"),
    Case("", "reproduce.py archive --image nope -o smoke.tar",
         "reproduce.py: error: unknown image dir 'nope' (no images/nope/Dockerfile); known: "
         "2018-keras-mxnet, 2018-keras-tf, 2018-tf-cudnnlstm, 2019-pytorch, 2019-tensorflow, "
         "legacy-2017-pytorch, legacy-2017-tensorflow, legacy-2017-theano, modern, smoke-python"),
    Case("", "reproduce.py build --image nope",
         "reproduce.py: error: unknown image dir 'nope' (no images/nope/Dockerfile); known: "
         "2018-keras-mxnet, 2018-keras-tf, 2018-tf-cudnnlstm, 2019-pytorch, 2019-tensorflow, "
         "legacy-2017-pytorch, legacy-2017-tensorflow, legacy-2017-theano, modern, smoke-python"),
    Case("", "reproduce.py build --stack nope",
         "reproduce.py: error: unknown stack 'nope'; known: jax-modern, keras-mxnet-1.2, keras-tf-1.8, "
         "smoke-python, tf-1.2, tf-1.8, tf-2.0, tf-modern, theano-0.9, torch-0.1, torch-1.3, torch-modern"),
    Case("", "reproduce.py build --suite smoke --flavour tpu",
         "reproduce.py: error: argument --flavour: invalid choice: 'tpu' (choose from 'cpu', 'gpu'); see "
         "`reproduce.py build --help`"),
    Case("", "reproduce.py build --suite smoke --wheelhouse nothere",
         "reproduce.py: error: --wheelhouse nothere does not exist; pass the directory holding the "
         "wheels, or drop --wheelhouse to download them"),
    Case("empty-dir", "reproduce.py build --suite smoke --lock empty",
         "reproduce.py: error: --lock empty is a directory; pass --lock PATH naming a file in a directory "
         "you can write to"),
    # data's lock option has run's name, --data-lock (--lock still works: row 67)
    Case("empty-dir", "reproduce.py data --check empty --data-lock empty",
         "reproduce.py: error: --data-lock empty is a directory; pass --data-lock PATH naming a file"),
    Case("", "reproduce.py generate --check --reference-csv nothere.csv",
         "reproduce.py: error: --reference-csv nothere.csv is not a file; give the published_numbers.csv "
         "of the reference, or leave the option out"),
    # --python STACK=PATH, the user's own interpreter for a stack (reprokit/runners/byo.py)
    Case("", "reproduce.py run --suite smoke --python torch-0.1",
         "reproduce.py: error: --python must be STACK=PATH, not 'torch-0.1'; pass e.g. --python "
         "torch-1.3=/usr/bin/python3 (the interpreter that runs that stack's cells)"),
    Case("", "reproduce.py run --suite smoke --python nope=python3",
         "reproduce.py: error: --python nope=python3: unknown stack 'nope'; known: jax-modern, "
         "keras-mxnet-1.2, keras-tf-1.8, smoke-python, tf-1.2, tf-1.8, tf-2.0, tf-modern, theano-0.9, "
         "torch-0.1, torch-1.3, torch-modern"),
    Case("", "reproduce.py run --suite smoke --python torch-0.1=nothere",
         "reproduce.py: error: --python torch-0.1=nothere: no such file; give the path of an existing "
         "Python interpreter (e.g. the output of `which python` with the module or environment loaded)",
         proc=True),
    Case("empty-dir", "reproduce.py run --suite smoke --python torch-0.1=empty",
         "reproduce.py: error: --python torch-0.1=empty is a directory; give the interpreter itself (e.g. "
         "$TMP/empty/bin/python)"),
    Case("not-archive", "reproduce.py run --suite smoke --python torch-0.1=notes.txt",
         "reproduce.py: error: --python torch-0.1=notes.txt is not executable; give the path of a Python "
         "interpreter you can run (check its permissions)"),
    Case("bare-venv", "reproduce.py run --suite smoke --python torch-0.1=bare/bin/python",
         "reproduce.py: error: --python torch-0.1=$TMP/bare/bin/python: that interpreter cannot import "
         "torch (ModuleNotFoundError: No module named 'torch'); name an interpreter with torch installed "
         "(e.g. the cluster's module for it), or drop the option to use the kit's environment"),
    Case("", "reproduce.py run --suite smoke --runner docker --python torch-0.1=nothere",
         "reproduce.py: error: --python names interpreters for the local runner and the Slurm local "
         "launcher, not --runner docker (which runs images); drop --python or use --runner local"),
    Case("", "reproduce.py run --suite smoke --python-config nothere.yaml",
         "reproduce.py: error: --python-config nothere.yaml: cannot read it (No such file or directory); "
         "give a YAML file mapping stack names to interpreter paths (torch-1.3: /usr/bin/python3)"),
    Case("bad-date-yaml", "reproduce.py run --suite smoke --python-config python.yaml",
         "reproduce.py: error: --python-config python.yaml: holds a value YAML cannot build (month must "
         "be in 1..12); give a YAML file mapping stack names to interpreter paths (torch-1.3: "
         "/usr/bin/python3)"),
    Case("", "reproduce.py preflight --suite smoke --python torch-0.1=nothere",
         "reproduce.py: error: --python torch-0.1=nothere: no such file; give the path of an existing "
         "Python interpreter (e.g. the output of `which python` with the module or environment loaded)"),
    Case("", "reproduce.py preflight --suite smoke --runner docker --python torch-0.1=nothere",
         "reproduce.py: error: --python applies to --runner local here (the Slurm local launcher runs the "
         "same environments: judge them with --runner local); add --runner local or drop --python"),
]


CASES += [
    # the bad inputs of the fault battery (the other cases: FAULTS below)
    Case("", "reproduce.py run --suite smoke --cells '<ESC>]0;pwned<BEL>no/such/*'",
         "reproduce.py: error: no cell of suite smoke matches \\x1b]0;pwned\\x07no/such/*; see "
         "`reproduce.py list --suite smoke`"),
    Case("", "reproduce.py run --suite smoke --allow-changed-data",
         "reproduce.py: error: --allow-changed-data applies to --resume RUN only; drop it, or add "
         "--resume RUN"),
    Case("run-a smoke-s", "reproduce.py compare a s",
         "reproduce.py: error: RUN_A is a run of suite legacy-2017 and RUN_B of suite smoke: two suites "
         "share no cell, so nothing can be compared; compare two runs of one suite", proc=True),
    Case("run-a a-run-json-broken", "reproduce.py report a",
         "reproduce.py: error: a/run.json is unreadable (Expecting property name enclosed in double "
         "quotes: line 1 column 2 (char 1)); run.json is the run's record: restore it from a copy of "
         "the run, or start a new run"),
    Case("run-a a-run-json-broken", "reproduce.py run --suite legacy-2017 --resume a",
         "reproduce.py: error: a/run.json is unreadable (Expecting property name enclosed in double "
         "quotes: line 1 column 2 (char 1)); run.json is the run's record: restore it from a copy of "
         "the run, or start a new run"),
    Case("run-a a-cells-loop", "reproduce.py report a",
         "reproduce.py: error: a/cells is a symbolic link that leads to no directory (a loop, or its "
         "target is gone); move it aside (mv a/cells a/cells.bad) and try again: the cells whose "
         "results it held are then measured again by --resume", proc=True),
    Case("run-a a-cells-loop", "reproduce.py run --suite legacy-2017 --resume a",
         "reproduce.py: error: a/cells is a symbolic link that leads to no directory (a loop, or its "
         "target is gone); move it aside (mv a/cells a/cells.bad) and try again: the cells whose "
         "results it held are then measured again by --resume"),
    Case("runs b-dev-zero", "reproduce.py compare a b",
         "reproduce.py: error: cannot compare b: b/cells/000__tensorflow__basic_lstm__b128-s30-h512.json "
         "is unreadable ([Errno 22] not a regular file (a device, FIFO or socket; a symlink to one): "
         "'b/cells/000__tensorflow__basic_lstm__b128-s30-h512.json'); re-run the cell or remove the "
         "file"),
]


CASES += [
    # crates and the probes of a user's interpreter (the other cases: FAULTS below)
    Case("sample s-passwd", "reproduce.py export s -o x.zip",
         "reproduce.py: error: s/logs/p.log is a symbolic link (to /etc/passwd); export never follows "
         "links out of a run: replace it with the file it stands for, or remove it, then export"),
    Case("sample s-fifo", "reproduce.py export s -o x.zip",
         "reproduce.py: error: s/logs/p.log is not a regular file or directory (a FIFO, socket or "
         "device); remove it from the run, then export", proc=True),
    Case("sample", "reproduce.py export s -o /proc/nope/x.zip",
         "reproduce.py: error: cannot write the crate to /proc/nope/x.zip (No such file or directory); "
         "give -o a file in a directory you can write"),
    Case("sample s-crate out-dangling", "reproduce.py report s.zip --out out.html",
         "reproduce.py: error: out.html exists; give another directory with --out (the run is written "
         "there)"),
    Case("flood", "reproduce.py run --suite smoke --python torch-0.1=flood",
         "reproduce.py: error: --python torch-0.1=$TMP/flood: $TMP/flood printed more than 1,048,576 "
         "bytes to the environment probe (it was stopped): is it a Python interpreter?; give the path of "
         "a working Python interpreter", proc=True),
]

CASES += [
    # new-benchmark: identifiers checked whole, a title of one printable line (nothing written)
    Case("", "reproduce.py new-benchmark 'abc<LF>' --title t --stack torch-0.1",
         "reproduce.py: error: source id 'abc\\n' is not 3-12 lower-case letters or digits; choose one "
         "like 005"),
    Case("", "reproduce.py new-benchmark abc --title 'x<LF>schema_version: 99<LF>source: evil' "
         "--stack torch-0.1",
         "reproduce.py: error: --title 'x\\nschema_version: 99\\nsource: evil' holds the character U+000A (a "
         "control character); give the title as one line of printable text", proc=True),
    Case("", "reproduce.py new-benchmark abc --title t --stack torch-0.1 --suite 's<LF>'",
         "reproduce.py: error: suite name 's\\n' is not lower-case letters, digits and '-' only; give "
         "--suite like source-abc"),
    Case("", "reproduce.py new-benchmark abc --title t --stack torch-0.1 --framework 'torch<LF>'",
         "reproduce.py: error: framework 'torch\\n' cannot name a workload module; give --framework, e.g. "
         "torch"),
]

CASES += [
    # exit 3 where a user error or a full disk is meant; wording of export and report CRATE
    Case("sample s-crate", "reproduce.py report s.zip --out /proc/nope/out",
         "reproduce.py: error: --out /proc/nope/out: its parent directory does not exist and cannot be"
         " created: /proc is not writable (No such file or directory); give --out a directory on a "
         "writable disk"),
    Case("sample out-dangling", "reproduce.py report s --rejudge out.html",
         "reproduce.py: error: --rejudge out.html: it is a symbolic link to nowhere, which does not "
         "exist; name a new directory (the original run and any earlier rejudged copy are kept as they"
         " are)"),
    Case("sample s-locked", "reproduce.py export s -o x.zip",
         "reproduce.py: error: s is still being written by a run driver (pid 4242 on node1 holds its "
         "lock s/.lock); wait for the run to end, then export it"),
    Case("sample ro", "reproduce.py export s -o ro/x.zip",
         "reproduce.py: error: ro/.x.zip.part: Read-only file system; give a place on a writable disk,"
         " then export again (no crate was written)"),
    Case("data-long-line", "reproduce.py data --check data --subset",
         "reproduce.py: error: data file $TMP/data/ptb/ptb.train.txt has a line longer than 4,194,304 "
         "bytes (by offset 4,194,305), the longest a data file's line may be: it is not the data set's "
         "text; replace it with the file from simple-examples.tgz, or remove the ptb files to use the "
         "stand-in (see `reproduce.py data`)", proc=True),
    # a resume honours or refuses every option that changes measurements: --design too
    Case("run-a", "reproduce.py run --suite legacy-2017 --resume a --design auto",
         "reproduce.py: error: cannot resume cpu-a: it was measured with a fixed design (--design full, "
         "or --repeat K), this command measures with --design auto; resume with the run's options (its "
         "command is in run.json, argv) or start a new run"),
    # the ledger
    Case("", "reproduce.py ledger nope",
         "reproduce.py: error: DIR nope does not exist; give folders that hold crates or run directories"),
    Case("run-a", "reproduce.py ledger a --jobs 0",
         "reproduce.py: error: --jobs 0 is not a number of processes; give --jobs 1 or more"),
    Case("run-a not-archive", "reproduce.py ledger a --store notes.txt",
         "reproduce.py: error: --store notes.txt is not an SQLite file (a ledger's store); give another "
         "--store, or move that file aside to start a new store"),
    Case("run-a", "reproduce.py ledger a --out /proc/nope/out",
         "reproduce.py: error: --out /proc/nope/out does not exist and cannot be created: /proc is not "
         "writable (No such file or directory); give --out a writable directory"),
    Case("run-a not-archive", "reproduce.py ledger a --out notes.txt",
         "reproduce.py: error: --out notes.txt is a file, not a directory; give --out a writable directory"),
    Case("run-a store-newer", "reproduce.py ledger a --store new.sqlite",
         "reproduce.py: error: --store new.sqlite is a ledger store of format version 99, newer than this "
         "kit's (2); use the kit that made it or another --store"),
]


@dataclass
class Fault:
    """A case of the fault battery that is not one command refused in one line with nothing written
    (a fault, an exit status other than 2, or a refusal that comes later): the table below the first
    in docs/BAD_INPUTS.md, each row naming the test that reproduces it (they live beside the code they
    test; test_every_fault_names_a_test_that_exists keeps the names honest)."""
    situation: str
    command: str
    outcome: str  # what happens now (and what happened before, in parentheses)
    exit: str
    tests: str  # tests/FILE.py::NAME, comma-separated


FAULTS = [
    Fault("a smoke run measured, its directory renamed and moved, one cell file removed",
          "reproduce.py run --suite smoke --quick --cells smoke/python/matmul/n24 --runner local "
          "--resume elsewhere/renamed-run",
          "the removed cell is measured again under the run id run.json records, nothing is moved "
          "aside (the id came from the directory name: every new result went to cells/.invalid as "
          "'belongs to another run', at every resume)", "0",
          "tests/run/test_moved_run.py::test_resuming_a_renamed_run_keeps_what_it_measures"),
    Fault("a cell file of a complete run is a symbolic link to /dev/zero",
          "reproduce.py report RUN",
          "the file is left in place unread (not a regular file), its cell listed INVALID, the report "
          "written; `run --resume` moves it to cells/.invalid (it was read until MemoryError, exit 3, or "
          "the OOM killer)", "1",
          "tests/core/test_bounded_reads.py::"
          "test_a_cell_file_linked_to_dev_zero_is_listed_by_report_and_left_in_place"),
    Fault("a cell's reason and a run.json string hold OSC and CSI escape sequences",
          "reproduce.py report RUN",
          "report.md and report.html show them as \\x1b...; no control byte is written (`cat "
          "report.md` ran them)", "1",
          "tests/commands/test_escapes.py::test_an_escape_in_a_reason_and_in_run_json_is_not_rendered_raw"),
    Fault("the validated-data cache holds a blob planted from another key, or edited",
          "reproduce.py list",
          "the blob is ignored, the data file parsed, validated and cached again (an edited document "
          "was used silently, a foreign one gave exit 3)", "0",
          "tests/core/test_files.py::test_a_planted_or_foreign_cache_entry_is_ignored_and_rebuilt"),
    Fault("a run's cell_specs record another definition of a cell than the suite's data gives now",
          "reproduce.py run --suite smoke --quick --cells smoke/python/matmul/n24 --runner local "
          "--resume RUN",
          "refused in one line (after the runner line, before any cell runs; the run's lock file is "
          "the only file touched); with --allow-changed-data it resumes and records a changed_data "
          "incident (it exited 0 and mixed both definitions)", "2 (0 with --allow-changed-data)",
          "tests/run/test_resume_changed_data.py::"
          "test_resume_after_the_data_changed_is_refused_then_allowed_and_recorded"),
    Fault("`data/ptb/` whose word counts differ from the published ones",
          "reproduce.py data --check data --strict",
          "the set fails and its files say 'unrecorded', no digest is written, so the right file "
          "later checks out (a 'first use' digest of the failed file made it 'mismatch')", "1",
          "tests/catalog/test_data_command.py::test_a_file_that_fails_the_check_is_not_recorded_as_first_use"),  # noqa: E501
    Fault("the reader of the run's output exits after one line",
          "reproduce.py run --suite smoke --quick --cells 'smoke/python/*' --runner local 2>&1, piped into "
          "head -1",
          "printing ends, the run finishes: run.json complete, the report written (the run died on "
          "EPIPE with run.json pending and no report)", "0",
          "tests/commands/test_closed_streams.py::test_a_run_whose_reader_closes_the_pipe_finishes, "
          "tests/commands/test_closed_streams.py::test_a_closed_reader_of_a_listing_is_exit_zero"),
    Fault("a complete run with a crashed cell",
          "reproduce.py report RUN",
          "one line naming the cell, exit status as the run's own (it was 0)", "1",
          "tests/commands/test_exit_status.py::test_report_of_a_run_with_a_crashed_cell_is_exit_1"),
    Fault("two runs of one suite with no metric measured in both",
          "reproduce.py compare A B",
          "one line saying so (it said '0 metrics compared')", "1",
          "tests/analysis/test_compare.py::test_nothing_measured_in_both_is_exit_1"),
    Fault("-", "reproduce.py --debug list",
          "the listing, with --debug as the command's flag (it was refused)", "0",
          "tests/commands/test_closed_streams.py::test_debug_before_the_command_is_the_commands_flag"),
    Fault("a Docker cell running; its driver killed with SIGKILL",
          "reproduce.py run --suite smoke --runner docker ...",
          "the container stops itself (stale heartbeat) and the driver's successor, a watcher the "
          "driver started in a session of its own, removes it and saves its output as the cell's log; "
          "were the successor killed too, the next command that talks to the engine does (the exited "
          "container stayed listed until the next resume)", "-",
          "tests/run/test_faults.py::test_docker_a_killed_driver_leaves_a_container_that_stops_itself, "
          "tests/containers/test_docker_reaper.py::"
          "test_the_drivers_successor_removes_its_containers_once_it_is_dead, "
          "tests/containers/test_docker_reaper.py::"
          "test_the_next_command_removes_exited_containers_of_dead_drivers_only"),
    Fault("a local cell running; its driver stopped with SIGSTOP (Ctrl-Z), continued later",
          "reproduce.py run --suite smoke --runner local ...",
          "the cell sees the heartbeat go stale and ends; the driver, continued, records it as "
          "interrupted and --resume measures it (it measured unobserved until its timeout)", "1",
          "tests/run/test_faults.py::test_a_stopped_driver_stops_its_local_cell_and_resume_measures_it"),
    Fault("found by fuzzing the readers (tests/core/test_fuzz.py) or probing its targets: a data file "
          "that is not UTF-8; a crate with a damaged deflate stream, an unknown zip "
          "version, members that clash, an empty member name, a metadata directory or an @id that is not a "
          "string; a job "
          "file that is a list; an image archive's lock whose entry is not an object",
          "reproduce.py list, verify CRATE, export RUN or restore ARCHIVE (the inputs: tests/fuzz/findings)",
          "the kit's one-line error (each was an internal error, exit 3)", "2 (a crate: 1)",
          "tests/core/test_fuzz.py::test_stored_finding_is_fixed"),
    Fault("a Slurm run fanned out over three nodes with different CPU sets (scripts/slurm-multinode.sh)",
          "SLURM_CONF=/etc/slurm-multinode/slurm.conf reproduce.py run --suite smoke --runner slurm "
          "--quick --repeat 3",
          "each process records its node and the node's fingerprint, the report lists every process "
          "under its node with the node's CPU, each cell is judged on its own node's CPU and GEMM "
          "probe (it was the driver host's), a cell whose processes ran on several nodes has no CPU "
          "peak and says why", "0",
          "tests/runners/test_slurm_multinode.py::test_a_suite_fans_out_over_all_nodes_each_cell_with_its_own_node, "  # noqa: E501
          "tests/runners/test_slurm_multinode.py::test_a_slurm_cells_cpu_device_is_its_nodes_not_the_driver_hosts"),  # noqa: E501
    Fault("a node of a multi-node Slurm run killed (every process of its network namespace) while "
          "its cell runs and the other nodes' cells run on",
          "reproduce.py run ... --runner slurm, then --resume RUN",
          "its process ends interrupted with NODE_FAIL, the others finish; --resume re-runs only the "
          "lost one, on a node that is up, every result file kept byte for byte", "1, then 0",
          "tests/runners/test_slurm_multinode.py::"
          "test_a_node_killed_mid_run_is_node_fail_others_finish_resume_reruns_it_elsewhere"),
    Fault("a multi-node Slurm run's driver killed with SIGKILL; then a node; the other nodes' "
          "processes end while no driver follows them",
          "reproduce.py run ... --runner slurm --resume RUN",
          "the ended processes get their job, node and node fingerprint, the lost one is re-run "
          "elsewhere, the running ones are re-attached (an ended process kept only what its harness "
          "wrote: no node, so its CPU was judged as the driver host's)", "0",
          "tests/runners/test_slurm_multinode.py::"
          "test_a_node_lost_while_no_driver_follows_is_rerun_and_the_others_keep_their_nodes, "
          "tests/runners/test_slurm_multinode.py::"
          "test_a_driver_killed_while_cells_run_on_several_nodes_is_reattached"),
    # crates, probes, caches and node loss
    Fault("a crate whose member is a symbolic link, a device or a FIFO (described in its metadata), or "
          "whose metadata or a log is there twice (an evil first copy)",
          "reproduce.py verify CRATE",
          "refused in one line naming the member before anything is extracted (verified; unzip made the "
          "link or extracted the evil copy)", "1",
          "tests/report/test_crate_safety.py::"
          "test_verify_refuses_link_and_special_members_even_when_described, "
          "tests/report/test_crate_safety.py::test_verify_refuses_a_member_that_is_there_twice"),
    Fault("a crate with a member that inflates to 1 GiB of zeros (a zip bomb); a 5.4 MB one inflating to "
          "5 GiB in docs/measurements.md",
          "reproduce.py verify bomb.zip",
          "refused in one line before any byte is inflated: nothing written to TMPDIR, 0.13 s for the "
          "5 GiB one (4.9 GB written over 43 s)", "1",
          "tests/report/test_crate_safety.py::test_a_zip_bomb_is_refused_before_anything_is_written"),
    Fault("SIGTERM while verify or export works", "reproduce.py verify CRATE, reproduce.py export RUN",
          "one line 'interrupted by SIGTERM', every temporary directory and the half-written crate "
          "removed (3.9 GB left behind; a copy of the run left)", "143",
          "tests/report/test_crate_safety.py::test_sigterm_removes_the_temporary_files"),
    Fault("TMPDIR without space for a good crate's files (free space and ENOSPC stood in)",
          "reproduce.py verify CRATE",
          "one line naming the disk and the fix (free space there or set TMPDIR) (exit 1, 'the crate "
          "was altered')", "2",
          "tests/report/test_crate_safety.py::test_a_full_disk_while_checking_is_exit_2_naming_the_disk"),
    Fault("a run holding a file whose name has a space, a non-ASCII letter, a newline or a %",
          "reproduce.py export RUN -o x.zip, then reproduce.py verify x.zip",
          "verified (exit 1, '... is missing': percent-encoded in the metadata, not in the zip)", "0",
          "tests/report/test_crate_safety.py::test_any_file_name_the_run_can_hold_round_trips"),
    Fault("an 'interpreter' given with --python that hangs (`sleep 1000`) or leaves a child running",
          "reproduce.py run --suite smoke --python torch-0.1=HANG",
          "one line after the probe's timeout, and its whole process group ended (the sleep was left "
          "running under PID 1); an interpreter that answers but leaves a child is not waited for",
          "2",
          "tests/runners/test_bounded.py::test_a_timeout_ends_the_whole_process_group, "
          "tests/runners/test_bounded.py::test_what_it_left_running_after_answering_is_ended_too"),
    Fault("a results path holding an OSC escape (it sets the terminal's title)",
          "reproduce.py report $'d\\e]0;pw\\a/RUN'",
          "the path is printed as \\x1b]0;pw\\x07 (printed raw)", "1",
          "tests/commands/test_escapes.py::test_an_escape_in_a_results_path_is_shown_by_report"),
    Fault("a data-cache blob forged with its key and sha256 recomputed over an edited payload, or over "
          "garbage", "reproduce.py list",
          "ignored and rebuilt: its MAC does not check (used silently; the garbage gave exit 3 "
          "KeyError)", "0",
          "tests/core/test_files.py::test_a_forged_cache_entry_with_its_key_and_digest_recomputed_is_ignored"),
    Fault("a data-cache blob forged by someone who can read the data file (its MAC recomputed with the "
          "file's public bytes), or a consistent garbage document", "reproduce.py list --suite smoke",
          "ignored and rebuilt: entries are signed with a random per-cache key stored 0600 beside the "
          "cache (printed 'TAMPERED-IN-CACHE'; the garbage gave exit 3 KeyError 'groups')", "0",
          "tests/core/test_files.py::"
          "test_a_cache_entry_forged_by_someone_who_can_read_the_data_file_is_not_used"),
    Fault("a full HOME left a 0-byte or cut-short clock-probe program cached under its final name",
          "reproduce.py run --suite smoke --quick",
          "the cached program is checked (a whole, executable ELF) and rebuilt beside its final name, then "
          "renamed (every later run said 'clock not measured')", "0",
          "tests/probes/test_measured_clock.py::test_a_cut_short_cached_probe_program_is_rebuilt_not_trusted"),
    Fault("a multi-node Slurm run whose cell's node loses its slurmd (SIGSTOP or SIGKILL) mid-cell; the "
          "cell's process runs on under slurmstepd",
          "reproduce.py run ... --runner slurm",
          "the task's heartbeat (`.alive`) shows it still runs: followed to its end, kept with its own "
          "exit status and node (said 'interrupted ... NODE_FAIL', merged with node: null)", "0",
          "tests/runners/test_slurm_launchers.py::"
          "test_a_cell_whose_node_was_lost_but_finished_is_followed_to_its_end, "
          "tests/runners/test_slurm_multinode.py::test_a_cell_that_outlives_its_nodes_slurmd_is_kept_with_its_node"),
    Fault("`data/ptb/` holds three tiny identical junk files", "reproduce.py data --check data",
          "FAILED: 'ptb: not this data set' with the first of its counts more than 10 % off the documented "
          "ones; nothing recorded; --subset accepts a deliberate subset, recorded as one ('ptb: ok', their "
          "digests recorded as first use)", "1",
          "tests/catalog/test_data_command.py::test_junk_files_are_not_a_data_set_and_nothing_is_recorded"),
    Fault("two racing resumes of a run copied with a stale lock record",
          "reproduce.py run ... --resume RUN (twice)",
          "the refused one names the live holder only (it named the stale holder copied with the run)", "2",
          "tests/run/test_lock_holder.py::test_a_stale_record_copied_with_the_run_is_not_named"),
    # exit 3 where a user error or a full disk is meant; rejudge's half-made copies and its chain
    Fault("a valid crate whose file name holds `]` (`c]1.zip`)", "reproduce.py verify 'c]1.zip'",
          "verified: roc-validator is given the crate as a path (exit 3: the name was parsed as a URL, "
          "'Invalid IPv6 URL')", "0",
          "tests/report/test_crate_safety.py::test_verify_a_crate_whose_path_holds_a_bracket"),
    Fault("TMPDIR with room for a crate's extraction but not for the copy of its run that verify "
          "renders again (a 4 MB tmpfs in the battery)", "reproduce.py verify CRATE",
          "one short line naming the disk, counting both copies, before anything is extracted; a copy "
          "that still meets ENOSPC is one short line too (exit 3, a 40,883-byte line listing every file)",
          "2",
          "tests/report/test_crate_safety.py::test_verify_asks_for_the_space_of_every_copy_it_makes, "
          "tests/report/test_crate_safety.py::test_a_copy_that_meets_a_full_disk_is_one_short_line"),
    Fault("SIGTERM at several points of a rejudge", "reproduce.py report RUN --rejudge OUT",
          "OUT is complete (report.md, report.html, report.json) or absent, its staging directory "
          "removed, no traceback; a second rejudge to OUT works (OUT was left with run.json and cells "
          "but no or part of its report, and refused the next rejudge; once a traceback from a weakref "
          "callback)", "143 (0 when it came after the rename)",
          "tests/report/test_rejudge.py::"
          "test_sigterm_leaves_out_complete_or_absent_and_a_second_rejudge_works"),
    Fault("a rejudged copy judged again", "reproduce.py report COPY --rejudge OUT2",
          "run.json `rejudged` is the chain, oldest first, back to the original run and the data "
          "snapshot it started with (run version 7; the second rejudge overwrote the first)", "0",
          "tests/report/test_rejudge.py::"
          "test_a_rejudge_of_a_rejudged_copy_keeps_the_chain_back_to_the_original"),
    # what finishes is kept and shown; the limit for every runner; the first screen's counts
    Fault("a --repeat 2 run whose second processes the time limit left",
          "reproduce.py run --suite smoke --runner local --time-limit 1m --min-samples 4000 --repeat 2",
          "each cell is reported from its first process, labelled '1 of 2 processes; process 2 of 2: "
          "left by --time-limit ...' (both cells said skipped and the report showed no measurement); "
          "a run that measured no cell exits 1 in one line (it exited 0)", "0 (nothing measured: 1)",
          "tests/run/test_finished_processes.py::"
          "test_cells_whose_second_process_the_limit_left_report_their_first, "
          "tests/run/test_finished_processes.py::test_a_run_that_measured_no_cell_exits_1_saying_so, "
          "tests/run/test_finished_processes.py::"
          "test_only_processes_that_measured_nothing_leave_the_others_reported"),
    Fault("a process stopped by the time limit (or a signal) while it samples",
          "reproduce.py run --suite smoke --cells 'smoke/pytorch/*' --time-limit 1m --min-samples 100000",
          "the samples it took are in its result (`cut`, kept every 5 s by the harness) and the report "
          "lists them (they were lost: the harness wrote only at its end)", "1",
          "tests/run/test_finished_processes.py::test_a_process_stopped_by_the_limit_keeps_what_it_measured"),
    Fault("a sequential run's cells with 3 good processes each, Ctrl-C before the next",
          "reproduce.py run --suite ... (Ctrl-C)",
          "each cell is reported from the processes it finished (every number of it was NOT_RUN)", "130",
          "tests/run/test_finished_processes.py::"
          "test_only_processes_that_measured_nothing_leave_the_others_reported"),
    Fault("the Slurm runner under a run time limit its cells cannot meet",
          "reproduce.py run --suite smoke --runner slurm --time-limit 1m --min-samples 100000",
          "what still runs or waits at the limit is cancelled (scancel) and recorded skipped with the "
          "limit's reason, each job's Slurm limit cut to what is left (every process ran to its end: "
          "198 s for a 1-minute limit)", "1",
          "tests/runners/test_slurm.py::test_the_runs_time_limit_stops_what_still_runs_with_scancel"),
    Fault("the stored H100 003 report's first screen",
          "reproduce.py report docs/gpu-run/20261126T180107Z-stacked-lstm-2019",
          "every NOT_COMPARABLE number is counted under the cause its verdict recorded: 12 peaks too far "
          "apart, 6 whose FLOP model does not describe the work (6 said 'no FLOP model or device "
          "peak', which they have)", "0",
          "tests/report/test_sample_run.py::test_the_h100_report_says_why_each_number_is_context"),
    Fault("a cell the time limit stopped, resumed and stopped again",
          "reproduce.py run ... --time-limit 15m, then --resume RUN --time-limit 15m",
          "its reason gives the second sitting's time (it kept the first's 'after 53 s')", "0",
          "tests/run/test_record.py::test_a_resumed_cell_stopped_by_the_limit_again_says_this_sittings_time"),
    Fault("a cell left by the time limit before it starts", "reproduce.py run ... --time-limit 1m",
          "one line under its own counter '[n/N] CELL: skipped: ...' (printed twice, once indented under "
          "the cell before)", "0",
          "tests/run/test_progress.py::"
          "test_a_cell_left_by_the_time_limit_is_one_line_under_its_own_counter_and_not_in_the_eta"),
    Fault("a folder of runs and crates, one crate with a sample edited after the export",
          "reproduce.py ledger DIR",
          "that crate refused in one line on stderr and listed in ledger.json, nothing of it stored; the "
          "rest built", "0",
          "tests/ledger/test_ledger.py::"
          "test_the_committed_runs_make_one_ledger_and_a_tampered_crate_is_refused_in_one_line, "
          "tests/ledger/test_ledger.py::test_nothing_of_the_tampered_crate_enters_the_store"),
    Fault("every input of a ledger refused, or none found",
          "reproduce.py ledger DIR",
          "one line saying the ledger holds no run, the views written empty", "1",
          "tests/ledger/test_ledger.py::test_nothing_left_is_exit_1_and_a_missing_folder_is_exit_2"),
    Fault("a crate this kit exported whose report.json was edited, with its sha256 and size in the metadata",
          "reproduce.py ledger DIR",
          "refused in one line: its report.json differs from the one computed again from its run", "0",
          "tests/ledger/test_ledger_read.py::"
          "test_a_report_json_this_kit_exported_altered_with_its_checksums_is_refused"),
    Fault("a crate another commit of the kit exported, whose report.json this kit computes otherwise",
          "reproduce.py ledger DIR",
          "taken, its numbers computed again by this kit, its own report recorded as differing", "0",
          "tests/ledger/test_ledger_read.py::"
          "test_another_kit_s_crate_enters_with_its_numbers_computed_again_and_its_own_report_set_beside"),
]


# -- running a case ------------------------------------------------------------------------------
def normalize(text: str, tmp: Path, mask: bool = True) -> str:
    for p in sorted({str(tmp.resolve()), str(tmp)}, key=len, reverse=True):
        text = text.replace(p, "$TMP")
    if not mask:
        return text
    # the NVML reason differs between hosts (no library, no driver, no device)
    return re.sub(r"this host has no GPU \([^;]*\);", "this host has no GPU (...);", text)


def snapshot(root: Path) -> dict[str, tuple]:
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = Path(d) / n
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_size if p.is_file() else None, st.st_mtime_ns)
    return out


def run_case(case: Case, tmp: Path, monkeypatch, capsys) -> tuple[int, str, str]:
    env = {"REPROKIT_DATA_LOCK": str(tmp / "data-lock.json"),
           "REPROKIT_IMAGE_LOCK": str(tmp / "image-lock.json")}
    argv = argv_of(case)
    if case.proc:
        p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), *argv], cwd=tmp,
                           capture_output=True, text=True, timeout=120, env={**os.environ, **env})
        return p.returncode, p.stdout, p.stderr
    from reprokit import cli
    from reprokit.probes import fingerprint

    if "no-gpu" in case.situation.split() and fingerprint.nvml_gpus()[0]:
        monkeypatch.setattr(fingerprint, "nvml_gpus", lambda: ([], {
            "available": False, "reason": "no NVIDIA driver: hidden by the test"}))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(tmp)
    capsys.readouterr()
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def prepare(case: Case, tmp: Path, mounts: Mounts) -> None:
    for key in case.situation.split():
        SITUATIONS[key][1](tmp, mounts)


@pytest.fixture
def mounts():
    m = Mounts()
    yield m
    m.close()


@pytest.fixture
def tmp(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    return d


@pytest.mark.parametrize("case", CASES, ids=[f"{i + 1:02d}" for i in range(len(CASES))])
def test_bad_input(case, tmp, mounts, monkeypatch, capsys):
    prepare(case, tmp, mounts)
    before = snapshot(tmp)
    code, out, err = run_case(case, tmp, monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code == 2, f"exit {code}: {err}"
    assert len(lines) == 1, f"not one line on stderr: {err!r}"
    assert "Traceback" not in out + err and not out.strip(), out
    line = normalize(lines[0], tmp)
    assert line.startswith("reproduce.py: error: ") and "; " in line, line  # problem; fix
    assert line == normalize(case.message, tmp)
    assert snapshot(tmp) == before, "the bad input wrote or moved something"


# -- the docs table and the list agree ------------------------------------------------------------
ROW = re.compile(r"^\| (\d+) \| (.*) \| `` (.*) `` \| `` (.*) `` \| (\d) \|$")


def situation_text(case: Case) -> str:
    return "; ".join(SITUATIONS[k][0] for k in case.situation.split()) or "-"


def table_row(i: int, case: Case) -> str:
    return (f"| {i} | {situation_text(case)} | `` {case.command} `` | `` {case.message} `` | 2 |")


def test_docs_table_and_the_cases_agree():
    rows = [line for line in DOC.read_text().splitlines() if ROW.match(line)]
    want = [table_row(i + 1, c) for i, c in enumerate(CASES)]
    assert len(CASES) >= 40
    for got, exp in zip(rows, want):
        assert got == exp
    assert len(rows) == len(want), f"{len(rows)} rows in {DOC.name}, {len(want)} cases"
    assert not any("|" in c.message or "|" in c.command for c in CASES)


FAULT_ROW = re.compile(r"^\| F(\d+) \| (.*) \| `` (.*) `` \| (.*) \| (.*) \| (.*) \|$")
FAULT_HEADER = "|---|---|---|---|---|---|"


def fault_row(i: int, f: Fault) -> str:
    tests = ", ".join(f"`{t.strip()}`" for t in f.tests.split(","))
    return f"| F{i} | {f.situation} | `` {f.command} `` | {f.outcome} | {f.exit} | {tests} |"


def test_docs_faults_table_and_FAULTS_agree():
    rows = [line for line in DOC.read_text().splitlines() if FAULT_ROW.match(line)]
    assert rows == [fault_row(i + 1, f) for i, f in enumerate(FAULTS)]
    assert not any("|" in (f.situation + f.command + f.outcome + f.exit + f.tests) for f in FAULTS)


def test_every_fault_names_a_test_that_exists():
    import ast

    for f in FAULTS:
        for ref in f.tests.split(","):
            path, _, name = ref.strip().partition("::")
            tree = ast.parse((REPO / path).read_text())
            names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
            assert name.startswith("test_") and name in names, f"{ref}: no such test"


def test_a_subprocess_row_and_an_in_process_row_of_each_command():
    proc = {shlex.split(c.command)[1] for c in CASES if c.proc}
    assert {"run", "compare", "restore", "data", "report"} <= proc
    assert not [c for c in CASES if c.proc and "no-gpu" in c.situation]  # hidden in-process only
    cmds = {shlex.split(c.command)[1] for c in CASES}
    assert {"run", "compare", "preflight", "build", "archive", "restore", "data", "report",
            "list"} <= cmds


# -- the harness refuses to write a sample that is not a finite number >= 0 ------------------------
def _harness():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import harness
    finally:
        sys.path.remove(str(REPO / "bench"))
    return harness


@pytest.mark.parametrize("record", ["timed", "single", "value"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.63])
def test_harness_record_refuses_non_finite_or_negative(record, bad):
    h = _harness()
    ctx = h.CellContext({"id": "x", "params": {}}, {"device": "cpu"})
    with pytest.raises(ValueError) as e:
        if record == "timed":
            ctx.record_timed("step", {"raw_seconds": [0.01, bad, 0.01], "warmup_seconds": [],
                                      "stop_reason": "time_budget"}, "ms", "ms", 1, "m")
        elif record == "single":
            ctx.record_single("compile", bad, "s", "m")
        else:
            ctx.record_value("memory", [1.0, bad], "MB", "m")
    msg = str(e.value)
    assert "refusing to record metric" in msg and repr(bad) in msg and "\n" not in msg
    assert ctx.metrics == {}
    ctx.record_timed("ok", {"raw_seconds": [0.01, 0.02], "warmup_seconds": [0.5],
                            "stop_reason": "time_budget"}, "ms", "ms", 1, "m")
    assert ctx.metrics["ok"]["samples"] == [10.0, 20.0]


def test_harness_cell_with_a_nan_sample_fails_with_a_one_line_reason(tmp_path):
    h = _harness()
    import types

    fake = types.ModuleType("workloads.bad_inputs_nan")
    fake.FRAMEWORK = None

    def run(ctx):
        ctx.record_timed("step_time", {"raw_seconds": [0.01, float("nan")], "warmup_seconds": [],
                                       "stop_reason": "time_budget"}, "ms", "ms", 1, "one step")
    fake.run = run
    sys.modules["workloads.bad_inputs_nan"] = fake
    try:
        cell = {"id": "t/nan", "workload": "bad_inputs_nan", "params": {}, "metrics": ["step_time"]}
        job = {"run_id": "r", "stack": "s", "out_dir": str(tmp_path), "device": "cpu"}
        h.run_cell(cell, job)
    finally:
        del sys.modules["workloads.bad_inputs_nan"]
    text = (tmp_path / "t__nan.json").read_text()
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} written"))
    assert doc["status"] == "failed" and doc["metrics"] == {}
    assert "step_time" in doc["reason"] and "nan" in doc["reason"] and "\n" not in doc["reason"]


# -- regenerating the table -----------------------------------------------------------------------
def _print_table() -> None:
    """Run every case for real and print its row with the message it gets."""
    for i, case in enumerate(CASES):
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            m = Mounts()
            try:
                prepare(case, tmp, m)
                env = {**os.environ, "REPROKIT_DATA_LOCK": str(tmp / "data-lock.json"),
                       "REPROKIT_IMAGE_LOCK": str(tmp / "image-lock.json")}
                p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), *argv_of(case)],
                                   cwd=tmp, capture_output=True, text=True, timeout=300, env=env)
            finally:
                m.close()
            msg = normalize(p.stderr.strip(), tmp, mask=False)
            print(f"{i + 1}\t{p.returncode}\t{case.command}\t{msg}")


def _write_docs() -> None:
    """Rewrite the tables of docs/BAD_INPUTS.md from CASES (whose messages come from --table) and
    FAULTS."""
    lines = DOC.read_text().splitlines()
    kept = [line for line in lines if not ROW.match(line) and not FAULT_ROW.match(line)]
    at = kept.index("|---|---|---|---|---|") + 1
    kept[at:at] = [table_row(i + 1, c) for i, c in enumerate(CASES)]
    at = kept.index(FAULT_HEADER) + 1
    kept[at:at] = [fault_row(i + 1, f) for i, f in enumerate(FAULTS)]
    DOC.write_text("\n".join(kept) + "\n")


if __name__ == "__main__":
    if "--table" in sys.argv:
        _print_table()
    if "--write-docs" in sys.argv:
        _write_docs()


# -- what is not a bad input: a full or read-only disk met later is exit 2, a bug exit 3 ----------
@pytest.mark.parametrize("exc, code", [
    (OSError(28, "No space left on device", "results/r/cells/x.json"), 2),
    (OSError(30, "Read-only file system", "results/r/run.json"), 2),
    (FileNotFoundError(2, "No such file or directory", "/nowhere"), 3),
    (KeyError("cells"), 3),
])
def test_errors_met_after_the_checks_are_one_line(exc, code, monkeypatch, capsys):
    from reprokit import cli
    from reprokit.commands import fingerprint as fp_cmd

    def boom(args):
        raise exc
    monkeypatch.setattr(fp_cmd, "run", boom)
    assert cli.main(["fingerprint"]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    if code == 2:
        assert err[0].startswith("reproduce.py: error: results/r/") and "; " in err[0]
    else:
        assert err[0].startswith("reproduce.py: internal error: ") and "--debug" in err[0]


@pytest.mark.parametrize("command, resume", [("run", True), ("export", False), ("report", False),
                                             ("verify", False)])
@pytest.mark.parametrize("errno_", [28, 30, 13])
def test_a_disk_error_says_the_fix_of_its_command(command, resume, errno_, monkeypatch, capsys):
    """A full or read-only disk met by `export` or `report CRATE` said '(a run keeps its finished
    cells: --resume RUN)', which only a run has; the fix names what to do for the command, and for
    a read-only disk does not say 'free space'."""
    import importlib

    from reprokit import cli

    mod = importlib.import_module(f"reprokit.commands.{command}")

    def boom(args):
        raise OSError(errno_, os.strerror(errno_), "where/x")
    monkeypatch.setattr(mod, "run", boom)
    argv = {"run": ["run", "--suite", "smoke"], "export": ["export", "r"], "report": ["report", "r"],
            "verify": ["verify", "c.zip"]}[command]
    assert cli.main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("reproduce.py: error: where/x: ") and "; " in line, line
    assert ("--resume RUN" in line) == resume, line
    assert ("free space" in line) == (errno_ == 28), line
