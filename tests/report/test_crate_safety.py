"""Crates a reviewer can open safely: what export packs and verify extracts, and the interrupt messages.

Real parts: a smoke run made, exported and verified by the CLI in child processes; hostile crates
built with zipfile (symlink, device and duplicate members, a real zip bomb); real signals sent to a
real export and verify. Each of these failed on f8d1002: export packed /etc/passwd through a link and
verify passed it, verify passed symlink and duplicate members, inflated a 5.4 MB zip to 4.9 GB,
left its temporary files on SIGTERM, called a full disk an altered crate, and lost files whose names
hold a space, a non-ASCII letter or a newline.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from report.test_crate import cli, one_line, smoke_crate  # noqa: F401 (helpers; the `smoke` fixture)
from reprokit.crate import METADATA, checks
from reprokit.errors import UserError

REPO = Path(__file__).resolve().parents[2]
PASSWD = Path("/etc/passwd")


def run_copy(smoke, tmp_path) -> Path:
    run, _ = smoke
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    return copy


def with_member(crate: Path, out: Path, info: zipfile.ZipInfo, data: bytes, describe: bool = True) -> Path:
    """The crate with one more member (its metadata describing it as a File with its true sha256)."""
    import hashlib

    with zipfile.ZipFile(crate) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for i in src.infolist():
            body = src.read(i.filename)
            if i.filename == METADATA and describe:
                meta = json.loads(body)
                meta["@graph"].append({"@id": info.filename, "@type": "File",
                                       "sha256": hashlib.sha256(data).hexdigest(),
                                       "contentSize": str(len(data))})
                root = next(e for e in meta["@graph"] if e["@id"] == "./")
                root.setdefault("hasPart", []).append({"@id": info.filename})
                body = json.dumps(meta).encode()
            dst.writestr(i, body)
        dst.writestr(info, data)
    return out


# -- export ------------------------------------------------------------------------------------------
@pytest.mark.skipif(not PASSWD.is_file(), reason="needs /etc/passwd as the secret")
def test_export_never_packs_what_a_link_in_the_run_points_to(smoke, tmp_path):
    run = run_copy(smoke, tmp_path)
    (run / "logs" / "p.log").symlink_to(PASSWD)
    out = tmp_path / "x.zip"
    p = cli("export", str(run), "-o", str(out))
    assert p.returncode == 2, p.stderr
    line = one_line(p)
    assert "logs/p.log is a symbolic link" in line and "/etc/passwd" in line
    assert not out.exists() and not (tmp_path / ".x.zip.part").exists()
    # a linked cell result too (was exit 3)
    (run / "logs" / "p.log").unlink()
    cell = next((run / "cells").glob("*.json"))
    real = tmp_path / "elsewhere.json"
    shutil.move(cell, real)
    cell.symlink_to(real)
    p = cli("export", str(run), "-o", str(out))
    assert p.returncode == 2 and "is a symbolic link" in one_line(p)
    assert not out.exists()


def test_export_refuses_a_fifo_in_the_run_without_hanging(smoke, tmp_path):
    run = run_copy(smoke, tmp_path)
    os.mkfifo(run / "logs" / "pipe.log")
    p = cli("export", str(run), "-o", str(tmp_path / "x.zip"))
    assert p.returncode == 2, p.stderr
    assert "logs/pipe.log is not a regular file or directory" in one_line(p)


def test_export_to_a_place_it_cannot_write_is_one_line_exit_2(smoke, tmp_path):
    run, _ = smoke
    p = cli("export", str(run), "-o", "/proc/nope/x.zip")
    assert p.returncode == 2, p.stderr
    assert "/proc/nope/x.zip" in one_line(p)


@pytest.mark.parametrize("name", ["a b.log", "é-naïve.log", "new\nline.log", "pct%41.log"])
def test_any_file_name_the_run_can_hold_round_trips(smoke, tmp_path, name):
    run = run_copy(smoke, tmp_path)
    (run / "logs" / name).write_text("kept\n")
    out = tmp_path / "x.zip"
    p = cli("export", str(run), "-o", str(out))
    assert p.returncode == 0, p.stderr
    with zipfile.ZipFile(out) as z:
        assert f"run/logs/{name}" in z.namelist()
    p = cli("verify", str(out))
    assert p.returncode == 0, p.stderr + p.stdout
    assert p.stdout.rstrip().endswith("verified")


# -- verify --------------------------------------------------------------------------------------------
def unix_member(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = mode << 16
    return info


@pytest.mark.parametrize("mode, words", [(stat.S_IFLNK | 0o777, "is a symbolic link"),
                                         (stat.S_IFCHR | 0o666, "is a special file"),
                                         (stat.S_IFIFO | 0o644, "is a special file")])
def test_verify_refuses_link_and_special_members_even_when_described(smoke, tmp_path, mode, words):
    _, crate = smoke
    bad = with_member(crate, tmp_path / "bad.zip", unix_member("run/logs/p.log", mode), b"/etc/passwd")
    p = cli("verify", str(bad))
    assert p.returncode == 1, p.stderr
    line = one_line(p)
    assert "run/logs/p.log" in line and words in line


@pytest.mark.parametrize("member", [METADATA, "run/logs/smoke__python__matmul__n24.log"])
def test_verify_refuses_a_member_that_is_there_twice(smoke, tmp_path, member):
    _, crate = smoke
    out = tmp_path / "twice.zip"
    with zipfile.ZipFile(crate) as src, zipfile.ZipFile(out, "w") as dst:
        dst.writestr(member, b"evil first copy")  # what `unzip -n` keeps
        for i in src.infolist():
            dst.writestr(i, src.read(i.filename))
    p = cli("verify", str(out))
    assert p.returncode == 1, p.stderr
    assert "is there twice" in one_line(p) and member in one_line(p)


def test_a_zip_bomb_is_refused_before_anything_is_written(smoke, tmp_path):
    """A real bomb: 1 GiB of zeros deflated to about 1 MB, added to a real crate as a log."""
    _, crate = smoke
    bomb = tmp_path / "bomb.zip"
    shutil.copy(crate, bomb)
    block = bytes(2**20)
    with zipfile.ZipFile(bomb, "a", zipfile.ZIP_DEFLATED) as z:
        with z.open("run/logs/bomb.log", "w", force_zip64=True) as f:
            for _ in range(1024):
                f.write(block)
    assert bomb.stat().st_size < crate.stat().st_size + 4 * 2**20
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    t0 = time.monotonic()
    p = cli("verify", str(bomb), env={"TMPDIR": str(tmp)})
    took = time.monotonic() - t0
    assert p.returncode == 1, p.stderr
    line = one_line(p)
    assert "run/logs/bomb.log would inflate" in line and "nothing was extracted" in line
    assert list(tmp.iterdir()) == []  # not a byte written
    assert took < 60  # checked before any byte is inflated (the note times it on an idle machine)


def test_a_full_disk_while_checking_is_exit_2_naming_the_disk(smoke, tmp_path, monkeypatch):
    """The disk, not the crate: the free-space check before extracting (shutil.disk_usage made to
    answer 0 bytes free) and a write that meets ENOSPC are UserErrors (exit 2), not 'altered'."""
    import errno

    _, crate = smoke
    real = shutil.disk_usage
    monkeypatch.setattr(checks.shutil, "disk_usage", lambda p: real(p)._replace(free=0))
    with pytest.raises(UserError) as e:
        with checks.opened(crate):
            pass
    assert e.value.exit_code == 2 and "free space there or set TMPDIR" in str(e.value)
    monkeypatch.setattr(checks.shutil, "disk_usage", real)
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.f.close()

        def write(self, _data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checks.os, "fdopen", lambda fd, mode="r": Full(real_fdopen(fd, mode)))
    with pytest.raises(UserError) as e:
        with checks.opened(crate):
            pass
    assert e.value.exit_code == 2 and "no space left" in str(e.value)


def test_verify_a_crate_whose_path_holds_a_bracket(smoke, tmp_path):
    """The crate is given to roc-validator as a path: a relative name holding `]` was parsed as a URL
    with an IPv6 host (ValueError: Invalid IPv6 URL, exit 3)."""
    _, crate = smoke
    shutil.copyfile(crate, tmp_path / "c]1.zip")
    p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), "verify", "c]1.zip"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "verified" and "Traceback" not in p.stderr, p.stderr


@pytest.fixture
def tmpfs(tmp_path):
    """mount(size) -> a tmpfs of that many bytes (real: root needed, as in CI), unmounted after."""
    points = []

    def mount(size: int) -> Path:
        where = tmp_path / f"fs{len(points)}"
        where.mkdir()
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
                           capture_output=True, text=True)
        if p.returncode:
            pytest.fail(f"cannot set the precondition: mount failed ({p.stderr.strip()}); needs root")
        points.append(where)
        return where

    yield mount
    for where in reversed(points):
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _sizes(crate: Path) -> tuple[int, int]:
    """(bytes the crate extracts to, bytes its run directory takes)."""
    with zipfile.ZipFile(crate) as z:
        infos = z.infolist()
    return (sum(i.file_size for i in infos),
            sum(i.file_size for i in infos if i.filename.startswith("run/") and not i.is_dir()))


def test_verify_asks_for_the_space_of_every_copy_it_makes(smoke, tmp_path, tmpfs):
    """TMPDIR holds the extraction but not the second copy of the run the report is rendered again
    in: refused before extracting, in one short line naming the disk (the check counted the
    extraction only; the copy then failed file by file and the 40 kB list was the message, exit 3)."""
    _, crate = smoke
    files_need, run_need = _sizes(crate)
    tmp = tmpfs(files_need + run_need // 2)
    p = cli("verify", str(crate), env={"TMPDIR": str(tmp)})
    assert p.returncode == 2, p.stderr
    line = one_line(p)
    assert len(line) < 400 and "set TMPDIR to a larger disk" in line and str(tmp) in line, line
    assert list(tmp.iterdir()) == []


def test_a_copy_that_meets_a_full_disk_is_one_short_line(smoke, tmp_path, tmpfs, monkeypatch, capsys):
    """The free-space check passed (shutil.disk_usage made to answer plenty) and the copy then meets
    ENOSPC on every file: one short line, exit 2, not shutil.Error's list of every file (exit 3)."""
    import tempfile

    from reprokit import cli as kit_cli

    _, crate = smoke
    files_need, run_need = _sizes(crate)
    tmp = tmpfs(files_need + run_need // 2)
    real = shutil.disk_usage
    monkeypatch.setattr(checks.shutil, "disk_usage", lambda p: real(p)._replace(free=2**40))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    capsys.readouterr()
    code = kit_cli.main(["verify", str(crate)])
    err = capsys.readouterr().err
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert len(line) < 400 and "no space left" in line and "set TMPDIR" in line, line
    assert list(tmp.iterdir()) == []


def test_report_out_a_dangling_link_is_one_line_exit_2(smoke, tmp_path):
    _, crate = smoke
    out = tmp_path / "out"
    out.symlink_to(tmp_path / "nowhere")
    p = cli("report", str(crate), "--out", str(out))
    assert p.returncode == 2, p.stderr
    assert "exists" in one_line(p)
    assert not (tmp_path / "nowhere").exists()


# -- signals --------------------------------------------------------------------------------------------
def _stop_when(proc: subprocess.Popen, tmp: Path, prefix: str) -> Path:
    """Freeze `proc` (SIGSTOP) as soon as its temporary directory appears, so the signal that
    follows lands while it works."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        made = [p for p in tmp.iterdir() if p.name.startswith(prefix)]
        if made:
            proc.send_signal(signal.SIGSTOP)
            return made[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.001)
    raise AssertionError(f"no {prefix}* directory appeared")


@pytest.mark.parametrize("command", ["verify", "export"])
def test_sigterm_removes_the_temporary_files(smoke, tmp_path, command):
    run = run_copy(smoke, tmp_path)
    # slow enough to be caught working; random, so it neither deflates like a bomb nor passes the
    # 256 MiB a member may hold
    with open(run / "logs" / "big.log", "wb") as f:
        for _ in range(200):
            f.write(os.urandom(2**20))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    crate = tmp_path / "big.zip"
    if command == "verify":
        p = cli("export", str(run), "-o", str(crate))
        assert p.returncode == 0, p.stderr
        args, prefix = ["verify", str(crate)], "reprokit-crate-"
    else:
        args, prefix = ["export", str(run), "-o", str(crate)], "reprokit-export-"
    proc = subprocess.Popen([sys.executable, "-m", "reprokit.cli", *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "TMPDIR": str(tmp)})
    try:
        _stop_when(proc, tmp, prefix)
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGCONT)
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "interrupted by SIGTERM" in err and "--resume" not in err, err
    assert list(tmp.iterdir()) == []
    if command == "export":
        assert not crate.exists()
