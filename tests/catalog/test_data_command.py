"""`reproduce.py data` and `run --data`: the data-set catalogue against bench/corpora.py, checking a
directory of small files in the real formats (digests recorded on first use, a changed file fails),
user errors, and a real cell run on real files by the local and the Docker runner."""

import hashlib
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from reprokit import results
from reprokit.catalog import datasets, suites
from reprokit.catalog.suites import Cell, Suite
from reprokit.commands import data as data_cmd
from reprokit.errors import UserError
from reprokit.plan.plan import Options, bench_facts, job_cell, make_plan
from reprokit.run.execute import execute
from reprokit.runners.local import LocalRunner

QUIET = lambda *_: None  # noqa: E731
WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "house", "big", "red",
         "<unk>", "N", "and", "of", "in", "was", "it", "is"]
PTB_CELL_PARAMS = {"batch": 4, "seq_len": 6, "hidden": 8, "emb": 8, "layers": 3, "vocab": 50,
                   "dataset": "ptb", "phase": "forward"}


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ptb_text(lines, seed):
    out = []
    for i in range(lines):
        n = 5 + (i * 7 + seed) % 9
        out.append(" " + " ".join(WORDS[(i * 31 + j * 17 + seed) % len(WORDS)] for j in range(n))
                   + " \n")
    return "".join(out)


def write_data(root):
    """Small files in the real formats: PTB and WikiText-2 in their own subdirectories, the raw
    WikiText-2 under its archive's name, nietzsche.txt directly in the root."""
    (root / "ptb").mkdir(parents=True)
    for split, (lines, seed) in {"train": (60, 1), "valid": (10, 2), "test": (12, 3)}.items():
        (root / "ptb" / f"ptb.{split}.txt").write_text(ptb_text(lines, seed), encoding="utf-8")
    (root / "wikitext-2").mkdir()
    wiki = " \n = Valkyria Chronicles = \n \n The game began in 2010 . \n \n It is a <unk> game . \n"
    for split in ("train", "valid", "test"):
        (root / "wikitext-2" / f"wiki.{split}.tokens").write_text(wiki, encoding="utf-8")
    (root / "wikitext-2-raw").mkdir()
    (root / "wikitext-2-raw" / "wiki.train.raw").write_text(
        " \n = Valkyria Chronicles III = \n The game's battle system, the BliTZ, is carried over.\n",
        encoding="utf-8")
    (root / "nietzsche.txt").write_text("PREFACE\n\n\nSupposing that Truth is a woman--what then?\n",
                                        encoding="utf-8")
    return root


@pytest.fixture
def data_dir(tmp_path):
    return write_data(tmp_path / "data")


@pytest.fixture
def lock(tmp_path):
    return tmp_path / "lock" / "data-lock.json"


def cli(repo, *args):
    return subprocess.run([sys.executable, str(repo / "reproduce.py"), *args], capture_output=True,
                          text=True, timeout=120, cwd=str(repo))


# -- the catalogue ----------------------------------------------------------------------------
def test_the_stand_in_sizes_are_the_catalogues_and_reach_bench_through_the_job_file():
    """datasets.yaml is the one copy of the sizes: a job file carries every reading (facts.stand_ins),
    each size with its source, and a workload's stand-in is made from them."""
    stand_ins = bench_facts()["stand_ins"]
    seen = set()
    for ds in datasets.catalogue().values():
        for r in ds["readings"]:
            spec = stand_ins[r["corpus"]]
            seen.add(r["corpus"])
            assert r["vocab"]["value"] == spec["vocab_size"], r["corpus"]
            assert {s: t["value"] for s, t in r["tokens"].items()} == spec["splits"], r["corpus"]
            assert spec["level"] == ds["level"]
            for t in [r["vocab"], *r["tokens"].values()]:
                assert "seed_workloads.md" in t["source"]
        assert {u["corpus"] for u in ds["used_by"]} <= {r["corpus"] for r in ds["readings"]}
        assert all("seed_workloads.md" in o["source"] for o in ds["origin"])
    assert seen == set(stand_ins)
    corpora = datasets.bench_corpora()
    c = corpora.stand_in("ptb", "valid", vocab_size=10, n_tokens=50)
    assert c.info["reading"] == stand_ins["ptb"]["reading"]
    assert c.info["vocab_status"] == stand_ins["ptb"]["vocab_status"]


def test_catalogue_covers_every_suite_cell_that_reads_a_data_set():
    no_files = {"synthetic"}
    for name in suites.suite_names():
        for c in suites.load_suite(name).cells:
            wanted = c.params.get("dataset")
            if wanted and wanted not in no_files:
                assert datasets.dataset_for(c.workload, c.params), (name, c.id)
    cells = [c for s in suites.suite_names() for c in suites.load_suite(s).cells]
    for name, ds in datasets.catalogue().items():  # and no entry is stale
        for u in ds["used_by"]:
            assert any(datasets.dataset_for(c.workload, c.params) == (name, u) for c in cells), u


def test_describe_lists_origin_files_cells_and_stand_ins(repo, lock):
    p = cli(repo, "data", "--lock", str(lock))
    assert p.returncode == 0, p.stderr
    assert "simple-examples.tgz" in p.stdout and "30177ea32e27c525793142b6bf2c8e2d" in p.stdout
    assert "recorded on first use" in p.stdout and "stand-in" in p.stdout
    doc = json.loads(cli(repo, "data", "--json", "--lock", str(lock)).stdout)
    assert sorted(doc["datasets"]) == ["nietzsche", "ptb", "wikitext-2", "wikitext-2-raw"]
    assert "003/pytorch/eager_cudnn/forward" in doc["datasets"]["ptb"]["cells"]["stacked-lstm-2019"]
    assert doc["datasets"]["nietzsche"]["stand_ins"]["nietzsche"]["vocab_size"] == 57
    assert doc["lock"] == {"path": str(lock), "recorded_files": 0}


def test_data_lock_is_one_option_name_for_run_and_data(repo, data_dir, lock, tmp_path):
    """`data --data-lock` names the same file as `run --data-lock`; the old `data --lock` still
    works, unlisted, and its errors name the spelling used."""
    p = cli(repo, "data", "--check", str(data_dir), "--subset", "--data-lock", str(lock), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["lock"] == str(lock) and lock.is_file()
    help_text = cli(repo, "data", "--help").stdout
    assert "--data-lock PATH" in help_text and "--lock" not in help_text.replace("--data-lock", "")
    for opt in ("--data-lock", "--lock"):
        bad = cli(repo, "data", "--check", str(data_dir), "--subset", opt, str(tmp_path))
        assert bad.returncode == 2
        assert bad.stderr.strip() == (f"reproduce.py: error: {opt} {tmp_path} is a directory; pass {opt} "
                                      "PATH naming a file")


# -- checking a directory -----------------------------------------------------------------------
def test_check_records_digests_on_first_use_then_a_changed_file_fails(repo, data_dir, lock):
    p = cli(repo, "data", "--check", str(data_dir), "--subset", "--lock", str(lock), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads(p.stdout)
    assert rep["ok"] and {s["name"]: s["status"] for s in rep["datasets"]} == {
        "ptb": "ok", "wikitext-2": "ok", "wikitext-2-raw": "ok", "nietzsche": "ok"}
    files = {f["path"]: f for s in rep["datasets"] for f in s["files"]}
    assert {f["verdict"] for f in files.values()} == {"recorded"}
    recorded = json.loads(lock.read_text())["files"]
    assert len(recorded) == 8
    assert recorded["ptb/ptb.train.txt"]["sha256"] == sha(data_dir / "ptb" / "ptb.train.txt")
    assert recorded["nietzsche/nietzsche.txt"]["sha256"] == sha(data_dir / "nietzsche.txt")

    again = cli(repo, "data", "--check", str(data_dir), "--subset", "--lock", str(lock))
    assert again.returncode == 0 and "result: ok" in again.stdout
    assert again.stdout.count(": match") >= 8 and "recorded" not in again.stdout.split("result")[0]

    victim = data_dir / "ptb" / "ptb.valid.txt"
    victim.write_text(" a different file \n", encoding="utf-8")
    bad = cli(repo, "data", "--check", str(data_dir), "--subset", "--lock", str(lock))
    assert bad.returncode == 1
    assert "ptb.valid.txt" in bad.stdout and "mismatch" in bad.stdout and "FAILED" in bad.stdout
    assert json.loads(lock.read_text())["files"] == recorded  # a mismatch never rewrites the lock

    accept = cli(repo, "data", "--check", str(data_dir), "--subset", "--lock", str(lock), "--update-lock")
    assert accept.returncode == 0 and "re-recorded" in accept.stdout
    entry = json.loads(lock.read_text())["files"]["ptb/ptb.valid.txt"]
    assert entry["sha256"] == sha(victim)
    assert entry["replaces"] == recorded["ptb/ptb.valid.txt"]["sha256"]


def test_check_compares_counts_from_the_bench_loaders(data_dir, lock):
    rep = datasets.check_dir(data_dir, lock, subset=True)
    ptb = next(s for s in rep["datasets"] if s["name"] == "ptb")
    loaded = datasets.bench_corpora().load_ptb(str(data_dir / "ptb"))
    counts = {(c["quantity"], c["split"]): c for c in ptb["counts"]}
    assert counts[("tokens", "train")]["measured"] == loaded["train"].n_tokens
    assert counts[("tokens", "valid")]["measured"] == loaded["valid"].n_tokens
    assert counts[("vocab", "train")]["measured"] == loaded["train"].vocab_size
    assert counts[("lines", "train")]["measured"] == 60
    assert counts[("tokens", "train")]["documented"] == 929589
    assert counts[("tokens", "train")]["verdict"] == "differs"  # tiny files, not the real PTB
    raw = next(s for s in rep["datasets"] if s["name"] == "wikitext-2-raw")
    assert [c["reading"] for c in raw["counts"]] == ["wikitext-2-char-keras-mxnet"] * 2
    assert rep["ok"]  # counts are informative by default ...
    strict = datasets.check_dir(data_dir, lock, strict=True, subset=True)
    assert not strict["ok"]  # ... and fail with --strict (verified / recomputed / third-party)
    assert any("ptb: tokens ptb train differs" in p for p in strict["problems"])
    assert not any("nietzsche" in p for p in strict["problems"])  # unverified counts never fail


def test_layout_archive_subdirectory_and_incomplete_set(repo, tmp_path, lock):
    root = tmp_path / "d"
    src = write_data(tmp_path / "src")
    (root / "simple-examples" / "data").mkdir(parents=True)
    for split in ("train", "valid"):
        name = f"ptb.{split}.txt"
        (root / "simple-examples" / "data" / name).write_bytes((src / "ptb" / name).read_bytes())
    (root / "simple-examples.tgz").write_bytes(b"not the archive")
    p = cli(repo, "data", "--check", str(root), "--subset", "--lock", str(lock), "--json")
    assert p.returncode == 1
    rep = json.loads(p.stdout)
    ptb = next(s for s in rep["datasets"] if s["name"] == "ptb")
    assert ptb["status"] == "incomplete" and ptb["dir"] == str(root / "simple-examples" / "data")
    # an incomplete set records no digest (not even as "first use")
    assert [f["verdict"] for f in ptb["files"]] == ["unrecorded", "unrecorded", "missing"]
    assert "until ptb checks out" in ptb["files"][0]["why"]
    assert ptb["archive"]["verdict"] == "mismatch"  # md5 from seed_workloads.md 4.4
    assert "ptb: incomplete" in rep["problems"]
    assert not lock.exists() or not any(k.startswith("ptb/") for k in json.loads(lock.read_text())["files"])


def test_a_file_that_fails_the_check_is_not_recorded_as_first_use(data_dir, lock):
    """--strict with a count that differs: the set fails, and its digests stay unrecorded, so the
    right file later checks out instead of 'mismatching' the wrong one."""
    bad = datasets.check_dir(data_dir, lock, names=["ptb"], strict=True, subset=True)
    assert not bad["ok"]
    ptb = bad["datasets"][0]
    assert {f["verdict"] for f in ptb["files"]} == {"unrecorded"}
    assert not lock.exists() or not json.loads(lock.read_text())["files"]
    good = datasets.check_dir(data_dir, lock, names=["ptb"], subset=True)  # counts informative: it checks out
    assert good["ok"] and {f["verdict"] for f in good["datasets"][0]["files"]} == {"recorded"}


@pytest.mark.parametrize("case", ["missing", "file", "bad_lock", "bad_text"])
def test_user_errors_are_one_line_and_exit_2(repo, tmp_path, data_dir, lock, case):
    target = data_dir
    if case == "missing":
        target = tmp_path / "nowhere"
    elif case == "file":
        target = data_dir / "nietzsche.txt"
    elif case == "bad_lock":
        lock.parent.mkdir(parents=True)
        lock.write_text("{not json")
    else:
        (data_dir / "nietzsche.txt").write_bytes(b"\xff\xfe\xfa not utf-8")
    p = cli(repo, "data", "--check", str(target), "--lock", str(lock))
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("reproduce.py: error:")
    assert {"missing": "does not exist", "file": "not a directory", "bad_lock": "data lock",
            "bad_text": "nietzsche.txt is not UTF-8 text"}[case] in lines[0]


def test_run_data_missing_dir_is_exit_2(repo, tmp_path):
    p = cli(repo, "run", "--suite", "smoke", "--runner", "local", "--data", str(tmp_path / "no"),
            "--results", str(tmp_path / "results"), "--no-report")
    assert p.returncode == 2 and "does not exist" in p.stderr


def test_command_function_returns_the_exit_status(data_dir, lock, capsys):
    args = SimpleNamespace(check=str(data_dir), data_lock=str(lock), lock_option="--data-lock",
                           update_lock=False, strict=False, subset=True, json=True)
    assert data_cmd.run(args) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "data_check"
    (data_dir / "nietzsche.txt").write_text("changed\n")
    assert data_cmd.run(args) == 1


# -- run --data --------------------------------------------------------------------------------
def ptb_cell(stack="torch-1.3"):
    return Cell(id="003/pytorch/eager_cudnn/forward", source="003", stack=stack,
                framework="pytorch", workload="s003_pytorch", variant="eager_cudnn",
                params=dict(PTB_CELL_PARAMS), metrics=("time_per_batch", "seq_per_s"))


def tiny_plan(cells, data=None):
    budget = {"min_samples": 3, "max_samples": 10, "time_budget_s": 0, "warmup": 1}
    suite = Suite("stacked-lstm-2019", "test", ["003"],
                  {"budget": budget, "quick_budget": budget, "timeout_s": 300}, list(cells))
    plan = make_plan(suite, Options())
    plan.options.data = data
    return plan


def test_without_data_nothing_changes(data_dir, lock):
    plan = tiny_plan([ptb_cell()])
    assert job_cell(plan.runnable[0], plan.suite, plan.options)["params"] == PTB_CELL_PARAMS
    data = datasets.prepare_run(plan.runnable, data_dir, lock, say=QUIET, subset=True)
    plan.options.data = data
    params = job_cell(plan.runnable[0], plan.suite, plan.options)["params"]
    assert params["data_dir"] == str((data_dir / "ptb").resolve())
    assert params["sha256"]["ptb.train.txt"] == sha(data_dir / "ptb" / "ptb.train.txt")
    other = Cell(id="smoke/x", source="smoke", stack="smoke-python", framework="python",
                 workload="smoke_stdlib", variant="matmul", params={"n": 8}, metrics=("matmul_time",))
    assert job_cell(other, plan.suite, plan.options)["params"] == {"n": 8}


def test_absent_data_set_keeps_its_stand_in_and_a_changed_file_stops_the_run(tmp_path, lock):
    root = tmp_path / "only-nietzsche"
    root.mkdir()
    (root / "nietzsche.txt").write_text("abc\n")
    msgs = []
    data = datasets.prepare_run([ptb_cell()], root, lock, say=msgs.append, subset=True)
    assert data["datasets"] == {} and data["stand_ins"] == ["ptb"]
    assert "stand-in" in msgs[0]
    full = write_data(tmp_path / "full")
    datasets.prepare_run([ptb_cell()], full, lock, say=QUIET, subset=True)  # records ptb
    (full / "ptb" / "ptb.train.txt").write_text(" changed \n")
    with pytest.raises(datasets.UserError, match="ptb.train.txt has sha256"):
        datasets.prepare_run([ptb_cell()], full, lock, say=QUIET, subset=True)


def _check_real_result(rundir, data_dir, data_dir_in_cell):
    res = rundir.load_cell("003/pytorch/eager_cudnn/forward")
    assert res["status"] == "ok", (res.get("reason"), res.get("traceback"))
    ds = res["extra"]["dataset"]
    assert ds["stand_in"] is False and ds["file"] == "ptb.train.txt"
    assert ds["sha256"] == sha(data_dir / "ptb" / "ptb.train.txt")
    assert ds["sha256_verified"] is True  # the harness checked the digest the host passed
    assert res["params"]["data_dir"] == data_dir_in_cell
    assert datasets.provenance(res["extra"])["kind"] == "real"
    run = json.loads(rundir.run_file.read_text())
    assert run["data"]["datasets"]["ptb"]["data_dir"] == str((data_dir / "ptb").resolve())
    return res


@pytest.fixture
def no_peak_probe(monkeypatch):
    """The run's CPU peak probe takes seconds and is not what these tests check."""
    monkeypatch.setattr("reprokit.run.execute._cpu_peak", lambda say: None)


def test_tiny_run_with_data_records_the_real_files_sha256(tmp_path, data_dir, lock, no_peak_probe):
    plan = tiny_plan([ptb_cell()])
    plan.options.data = datasets.prepare_run(plan.runnable, data_dir, lock, say=QUIET, subset=True)
    rundir = results.RunDir(tmp_path / "run-data")
    execute(plan, LocalRunner(say=QUIET), rundir, ["test"], say=QUIET)
    _check_real_result(rundir, data_dir, str((data_dir / "ptb").resolve()))
    from reprokit.report import report
    report.render(rundir)
    md = (rundir.path / "report.md").read_text()
    assert "real files (ptb.train.txt sha256 " in md


def test_docker_runner_mounts_the_data_read_only(tmp_path, data_dir, lock, no_peak_probe,
                                                 monkeypatch):
    from conftest import docker_client

    client = docker_client()  # skipped only when no engine answers (CI starts one)
    from reprokit.containers.build import build_image
    from reprokit.runners.docker import DockerRunner
    # The CPU flavour CI builds anyway (tests/runners/test_docker_runner.py); cached after the first build.
    monkeypatch.setenv("REPROKIT_IMAGE_LOCK", str(tmp_path / "image-lock.json"))
    build_image(client, "legacy-2017-pytorch", say=QUIET)
    runner = DockerRunner(say=QUIET)
    runner.prepare("torch-0.1", suites.load_stacks()["torch-0.1"])
    plan = tiny_plan([ptb_cell(stack="torch-0.1")])
    plan.options.data = datasets.prepare_run(plan.runnable, data_dir, lock, say=QUIET, subset=True)
    rundir = results.RunDir(tmp_path / "run-docker")
    execute(plan, runner, rundir, ["test"], say=QUIET)
    res = _check_real_result(rundir, data_dir, "/data/ptb")
    mounts = {m["target"]: m for m in res["runner"]["mounts"]}
    assert mounts["/data"]["read_only"] is True
    assert mounts["/data"]["source"] == str(data_dir.resolve())


def test_container_job_rewrites_data_dirs(tmp_path):
    from reprokit.containers.spec import container_job
    root = tmp_path / "data"
    job = {"schema_version": 1, "run_id": "r", "stack": "s", "kit": {"version": "x",
                                                                     "git_commit": None},
           "out_dir": "/x", "facts": bench_facts(), "device": "cpu", "data_root": str(root),
           "cells": [{"id": "a", "source": "003", "workload": "w", "params": {
               "data_dir": str(root / "ptb")}, "metrics": [], "budget": {"min_samples": 1},
               "protocol": "budget"},
                     {"id": "b", "source": "003", "workload": "w", "params": {
                         "data_dir": str(root)}, "metrics": [], "budget": {"min_samples": 1},
                      "protocol": "budget"},
                     {"id": "c", "source": "003", "workload": "w", "params": {}, "metrics": [],
                      "budget": {"min_samples": 1}, "protocol": "budget"}]}
    path = tmp_path / "jobs" / "s.json"
    path.parent.mkdir()
    path.write_text(json.dumps(job))
    copy, data_root = container_job(path)
    out = json.loads(copy.read_text())
    assert data_root == str(root)
    assert [c["params"].get("data_dir") for c in out["cells"]] == ["/data/ptb", "/data", None]
    assert out["data_root"] == "/data"
    # the job was written by an older kit: the container's copy is brought to the current version
    from reprokit import formats
    assert out["schema_version"] == formats.version("job") > job["schema_version"]


def test_provenance_of_stand_in_real_and_synthetic_results():
    c = datasets.bench_corpora()
    stand = c.stand_in("ptb", "valid", vocab_size=20, n_tokens=200).label()
    assert datasets.provenance({"dataset": stand}) == {
        "kind": "stand-in", "text": "stand-in data (ptb)"}
    nested = {"train": dict(stand, name="wikitext-2-kawakami"), "valid": stand}
    assert datasets.provenance({"dataset": nested})["kind"] == "stand-in"
    real = {"name": "ptb", "stand_in": False, "file": "ptb.train.txt", "sha256": "ab" * 32}
    assert datasets.provenance({"dataset": real})["text"] == \
        "real files (ptb.train.txt sha256 abababababab)"
    synthetic = {"name": "synthetic", "stand_in": False, "n_samples": 10}
    assert datasets.provenance({"dataset": synthetic}) is None
    assert datasets.provenance({}) is None


def test_junk_files_are_not_a_data_set_and_nothing_is_recorded(repo, tmp_path, lock):
    """Three tiny identical junk files once passed as "ptb: ok" and their digests were recorded as
    first use. Counts far from the documented ones (datasets.yaml `plausibility`) now fail the check
    whatever --strict, and nothing is recorded; --subset accepts a deliberate subset, recorded as one."""
    root = tmp_path / "junk"
    (root / "ptb").mkdir(parents=True)
    for split in ("train", "valid", "test"):
        (root / "ptb" / f"ptb.{split}.txt").write_text("junk junk junk\n", encoding="utf-8")
    p = cli(repo, "data", "--check", str(root), "--lock", str(lock))
    assert p.returncode == 1, p.stdout + p.stderr
    assert ("ptb: not this data set: lines of train is 1, documented 42,068 (third-party) and 6 more"
            in p.stdout)
    assert "ptb: files present, NOT this data set" in p.stdout
    assert not lock.exists() or not json.loads(lock.read_text())["files"]
    with pytest.raises(UserError, match="--data-subset"):
        datasets.prepare_run([ptb_cell()], root, lock, say=QUIET)
    ok = cli(repo, "data", "--check", str(root), "--lock", str(lock), "--subset")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    recorded = json.loads(lock.read_text())["files"]
    assert recorded["ptb/ptb.train.txt"]["subset"] is True
    data = datasets.prepare_run([ptb_cell()], root, lock, say=QUIET, subset=True)
    assert data["datasets"]["ptb"]["subset"] is True


def test_a_data_file_without_newlines_is_refused_by_its_line_length(repo, tmp_path, lock):
    """A data file whose one line is longer than checks.MAX_LINE_BYTES (a 2 GB file without a
    newline was read whole by the line count: MemoryError at 2.19 GB RSS, exit 3): refused in one line
    before any count, nothing recorded, memory bounded by the read block. The file is made only just
    longer than the bound."""
    from reprokit import checks

    root = tmp_path / "long"
    (root / "ptb").mkdir(parents=True)
    for split in ("valid", "test"):
        (root / "ptb" / f"ptb.{split}.txt").write_text("junk junk junk\n", encoding="utf-8")
    with open(root / "ptb" / "ptb.train.txt", "wb") as f:
        f.write(b"the cat sat " * (checks.MAX_LINE_BYTES // 12 + 1))
    p = cli(repo, "data", "--check", str(root), "--lock", str(lock), "--subset")
    assert p.returncode == 2, p.stdout + p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert f"has a line longer than {checks.MAX_LINE_BYTES:,} bytes" in line and "ptb.train.txt" in line
    assert "Traceback" not in p.stderr and not lock.exists()
