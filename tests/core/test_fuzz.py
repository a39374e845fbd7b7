"""The readers and the reconciler under a coverage-guided fuzzer (atheris, libFuzzer), for a fixed time.

Each target of tests/fuzz/targets.py (run.json, cell results, job files, the kit's data files, an image
archive's manifest and lock and the archive file, a crate's metadata and the crate file) runs as
`python tests/fuzz/run_fuzz.py TARGET ...` for REPROKIT_FUZZ_SECONDS seconds (default 12: about 100 s
for all of them), from a corpus seeded with the committed runs (docs/sample-run, tests/data/runs), the
kit's data files, an archive as `reproduce.py archive` writes it and a crate `reproduce.py export`
wrote. Any exception but the kit's own one-line UserError (and, for check_result, anything but its
(doc, None) / (None, reason) answer) is a finding: libFuzzer stops, writes the input and the test
fails with the traceback. The number of executions does not decide anything (it depends on the
machine); each test prints it.

A finding, once fixed, is stored under tests/fuzz/findings/TARGET/ and replayed here every time.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FUZZ = REPO / "tests" / "fuzz"
FINDINGS = FUZZ / "findings"
sys.path.insert(0, str(FUZZ))

import targets  # noqa: E402

SECONDS = int(os.environ.get("REPROKIT_FUZZ_SECONDS", "12"))
KIT_TARGETS = [n for n in targets.TARGETS if n != "selftest"]
KEPT = Path(tempfile.gettempdir()) / "reprokit-fuzz-findings"  # each finding's input, kept


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    # a RAM disk where there is one: every input is written to disk, and run.json is fsynced
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        d = Path(subprocess.check_output(["mktemp", "-d", "-p", str(shm), "reprokit-fuzz.XXXXXX"],
                                         text=True).strip())
    else:
        d = tmp_path_factory.mktemp("fuzz")
    (d / "shared").mkdir()
    targets.seed_crate(d / "shared")  # once, for both crate targets
    yield d
    shutil.rmtree(d, ignore_errors=True)


def fuzz(name: str, work: Path, seconds: int) -> tuple[subprocess.CompletedProcess, Path, Path]:
    corpus, crashes = work / f"corpus-{name}", work / f"crashes-{name}"
    corpus.mkdir()
    crashes.mkdir()
    argv = [sys.executable, str(FUZZ / "run_fuzz.py"), name, str(work),
            f"-max_total_time={seconds}", f"-dict={FUZZ / 'json.dict'}", "-timeout=60",
            "-rss_limit_mb=4096", f"-artifact_prefix={crashes}/", "-print_final_stats=1", str(corpus)]
    env = {**os.environ, "TMPDIR": str(work)}
    p = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 300, cwd=REPO, env=env)
    return p, corpus, crashes


def executions(output: str) -> int:
    m = re.search(r"^Done (\d+) runs in", output, re.M) or re.search(r"stat::number_of_executed_units: (\d+)",
                                                                      output)
    return int(m.group(1)) if m else -1


@pytest.mark.slow
@pytest.mark.parametrize("name", KIT_TARGETS)
def test_fuzz_target_finds_nothing(name, work, capsys):
    p, corpus, crashes = fuzz(name, work, SECONDS)
    out = p.stdout + p.stderr
    found = []
    for f in sorted(crashes.iterdir()):  # kept after the test (pytest keeps its own for 3 runs only)
        found.append(KEPT / f"{name}-{f.name}")
        KEPT.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, found[-1])
    shown = "; ".join(f"{f.name}: {f.read_bytes()[:2000]!r}" for f in found)
    n = executions(out)
    with capsys.disabled():
        print(f"\nfuzz {name}: {n} executions in {SECONDS} s, corpus {len(list(corpus.iterdir()))} inputs, "
              f"{len(found)} finding(s)")
    assert p.returncode == 0 and not found, (
        f"fuzz target {name}: a finding (exit {p.returncode}); input(s): {[str(f) for f in found]}; "
        f"replay with `python tests/fuzz/run_fuzz.py {name} /tmp/fz INPUT`; the input(s): {shown}\n"
        f"{out[-6000:]}")
    assert "INITED" in out and n > 0, out[-3000:]  # it ran, from its seeds


@pytest.mark.slow
def test_a_finding_fails_the_run(work):
    """The planted target raises KeyError on its seed: the run must stop with the input written."""
    p, _, crashes = fuzz("selftest", work, 30)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-3000:]
    assert "planted finding" in out and "KeyError" in out
    found = list(crashes.iterdir())
    assert len(found) == 1 and found[0].read_bytes().startswith(b"boom")


STORED = sorted(p for p in FINDINGS.glob("*/*") if p.is_file()) if FINDINGS.is_dir() else []


@pytest.mark.parametrize("path", STORED, ids=[f"{p.parent.name}/{p.name}" for p in STORED])
def test_stored_finding_is_fixed(path, tmp_path):
    """Each input a fuzz run once failed on (tests/fuzz/findings/TARGET/NAME): now answered by the
    kit's own one-line error or taken."""
    target = targets.TARGETS[path.parent.name](tmp_path / "w", tmp_path / "shared")
    target.one_input(path.read_bytes())


def test_every_target_has_seeds(tmp_path):
    """Each kit target starts from a corpus (the committed runs and files), never from nothing."""
    shared = tmp_path / "shared"
    shared.mkdir()
    for name in KIT_TARGETS:
        if name.startswith("crate"):
            continue  # needs the exported crate (the module fixture makes it for the fuzz tests)
        seeds = targets.TARGETS[name](tmp_path / name, shared).seeds()
        assert seeds and all(isinstance(s, bytes) and s for s in seeds), name


def test_an_archive_member_above_its_read_limit_is_one_line(tmp_path, monkeypatch):
    """The manifest and lock of an image archive are read only up to files.READ_LIMITS['archive']
    (they were read whole, however large): a bigger one is the kit's one-line error."""
    from reprokit import files
    from reprokit.containers import archive
    from reprokit.errors import UserError

    image, lock, manifest = targets.archive_seed()
    monkeypatch.setitem(files.READ_LIMITS, "archive", len(manifest) - 1)
    path = tmp_path / "a.tar"
    targets.write_tar(path, [("images/smoke-python-cpu.tar", image), (archive.LOCK, lock),
                             (archive.MANIFEST, manifest)])
    with pytest.raises(UserError) as e:
        archive.check_archive(path)
    assert f"{archive.MANIFEST} holds more than the {len(manifest) - 1}-byte limit" in str(e.value)
    monkeypatch.setitem(files.READ_LIMITS, "archive", len(manifest))
    assert archive.check_archive(path)["images"][0]["key"] == "smoke-python:cpu"
