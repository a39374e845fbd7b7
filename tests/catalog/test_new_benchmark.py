"""A new published source through the documented path only (docs/adding-a-benchmark.md).

In a copy of the kit (its own git repository, so the files the path touches are counted by git): the
scaffold (`new-benchmark`), the walk-through's edits (the table, a CPU as published, the claim), then
`check-benchmark`, `list`, `preflight`, `run --quick` on the local runner, the report with its
verdicts and claim, `export` and `verify`, each as a real command line. Then eleven faults planted in
the same source, each named by `check-benchmark` (exit 2). The source is synthetic: its "published"
numbers are made up for this test and say so in the file."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.catalog.scaffold import scalar

REPO = Path(__file__).resolve().parents[2]
KIT = ("reprokit", "bench", "report_templates", "images", "compose", "reproduce.py")
SRC = "900"
CPU = "none (6-core/12-thread Intel family 6 model 63)"  # a publication CPU cpus.yaml knows


def _cli(kit: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, str(kit / "reproduce.py"), *args], capture_output=True, text=True,
                       cwd=str(kit), timeout=900)
    if ok:
        assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr[-2000:])
    return p


def _git(kit: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=str(kit),
                          capture_output=True, text=True, check=True).stdout


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def _fill_in(kit: Path, sizes: tuple[int, int] = (32, 64), src: str = SRC) -> None:
    """The walk-through's steps 1 and 5: the table (four numbers on a CPU) and the claim, for the
    scaffold's two sizes n32 and n64 or, with `sizes`, two others (the suite's matrix edited too)."""
    data = kit / "reprokit" / "data"
    if sizes != (32, 64):
        _edit(data / "suites" / f"source-{src}.yaml", "matrix: {n: [32, 64]}",
              f"matrix: {{n: {list(sizes)}}}")
    (small, large), scale = (f"n{n}" for n in sizes), (sizes[0] / 32) ** 2
    pub = data / "published" / f"{src}.yaml"
    _edit(pub, 'imported_from: "TODO: where the numbers were read (paper, table, page or URL, commit)"',
          'imported_from: "synthetic: made up for tests/catalog/test_new_benchmark.py, not a publication"')
    _edit(pub, 'table: "TODO: Table N"', 'table: "Table 1"')
    _edit(pub, 'gpu: "TODO: the device as published"', f'gpu: "{CPU}"')
    _edit(pub, "framework_version: \"TODO: as published, or 'unstated'\"", 'framework_version: "3.5"')
    rows = [(n, m, v) for n, f, t in ((small, 0.05 * scale, 0.2 * scale), (large, 0.2, 0.8))
            for m, v in (("forward_time_per_example", f), ("train_time_per_example", t))]
    table = "numbers:\n" + "".join(
        f"  - id: {src}-T1-{i}\n    value: {v}\n    unit: ms\n    metric: {m}\n"
        f"    cell: {src}/python/dense/{n}\n    provenance: {{row_label: \"dense {n} {m}\"}}\n"
        f"    workload: {{batch: 4, n: {n[1:]}}}\n" for i, (n, m, v) in enumerate(rows, 1))
    _edit(pub, "numbers: []\n", table)
    for name in ("sources.yaml", "flops.yaml"):  # the facts the scaffold left as TODO (steps 2 and 4)
        f = data / name
        text = f.read_text()
        at = text.index(f"model-{src}:") if name == "flops.yaml" else text.index(f"  {scalar(src)}:")
        f.write_text(text[:at] + re.sub(r""""TODO: [^"]*"|'TODO: [^']*'""", '"synthetic: made up for '
                                        'tests/catalog/test_new_benchmark.py"', text[at:]))
    claims = data / "claims.yaml"
    text = claims.read_text()
    at = text.index(f"  # - id: c{src}-")
    block = re.sub(r"^  # ", "  ", text[at:], flags=re.M)
    block = block.replace("/dense/n32", f"/dense/{small}").replace("/dense/n64", f"/dense/{large}")
    for todo, fact in (("the sentence or table the claim rests on, verbatim",
                        f"{small} is faster than {large}"),
                       ("where it is", "Table 1"), ("where the source measured", "CPU")):
        block = block.replace(f'"TODO: {todo}"', f'"{fact}"')
    claims.write_text(text[:at] + block)


@pytest.fixture
def kit(tmp_path_factory) -> Path:
    """A copy of the kit as a clone has it, in a git repository of its own."""
    kit = tmp_path_factory.mktemp("kit")
    for name in KIT:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, kit / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, kit / name)
    _git(kit, "init", "-q")
    _git(kit, "add", "-A")
    _git(kit, "commit", "-qm", "the kit as cloned")
    return kit


def test_a_new_source_through_the_documented_path_end_to_end(kit, tmp_path):
    p = _cli(kit, "new-benchmark", SRC, "--title", "Synthetic dense layer (test)", "--stack", "smoke-python")
    assert "wrote bench/workloads/s900_python.py" in p.stdout
    first = _cli(kit, "check-benchmark", SRC, ok=False)  # the empty table is named, with the fix
    assert first.returncode == 2 and "published/900.yaml is missing or has no numbers" in first.stdout
    # every fact the scaffold could not know is named until it is written (a newcomer's helper found
    # check-benchmark saying "wired in completely" over unwritten TODOs and no claim)
    assert "sources.yaml: source 900, repository: still \"TODO: " in first.stdout
    assert "flops.yaml: model model-900, reference: still " in first.stdout
    assert "note: claims.yaml has no claim of source 900" in first.stdout
    _fill_in(kit, (16, 128))  # 64x the work per example: a claim no load on this machine overturns
    touched = sorted(line[3:] for line in _git(kit, "status", "--porcelain", "-uall").splitlines())
    assert touched == ["bench/workloads/s900_python.py", "reprokit/data/claims.yaml",
                       "reprokit/data/flops.yaml", "reprokit/data/published/900.yaml",
                       "reprokit/data/sources.yaml", "reprokit/data/suites/source-900.yaml"]  # six files
    ok = _cli(kit, "check-benchmark", SRC)
    assert "source 900: 0 problem(s)" in ok.stdout and "wired in completely" in ok.stdout
    listed = json.loads(_cli(kit, "list", "--suite", "source-900", "--json").stdout)
    assert {n["id"] for n in listed["published"]} == {f"{SRC}-T1-{i}" for i in range(1, 5)}
    assert "runnable" in _cli(kit, "preflight", "--suite", "source-900").stdout
    results = tmp_path / "results"
    _cli(kit, "run", "--suite", "source-900", "--quick", "--runner", "local", "--results", str(results))
    (run,) = [d for d in results.iterdir() if (d / "run.json").exists()]
    rep = json.loads((run / "report.json").read_text())
    numbers = {n["id"]: n for n in rep["numbers"]}
    # published on another CPU: not decided here, and the report says why
    assert len(numbers) == 4
    verdicts = {k: n["verdict"] for k, n in numbers.items()}
    assert set(verdicts.values()) == {"NOT_COMPARABLE"}, verdicts
    assert all("Haswell" in n["reason"] for n in numbers.values()), [n["reason"] for n in numbers.values()]
    (claim,) = [c for c in rep["claims"] if c["id"] == f"c{SRC}-smaller-is-faster"]
    assert claim["status"] == "HOLDS", claim  # 64x the work per example: decided on any CPU
    assert rep["real_work"]["metrics_checked"] == rep["real_work"]["metrics_passed"] == 4
    crate = tmp_path / "s.crate.zip"
    _cli(kit, "export", str(run), "-o", str(crate))
    assert "passed" in _cli(kit, "verify", str(crate)).stdout


def test_a_source_named_in_letters_with_a_selected_defect_and_a_claim_checks_clean(kit):
    """A source id of letters (the claim's id is c<ID>-..., which the claims schema took only for three
    digits), and a defect selecting numbers by metric and framework in a `defaults`-style published
    file, whose numbers carry their framework in `environment` (the selector read `workload.framework`
    and ended check-benchmark with exit 3, KeyError)."""
    src = "synth"
    _cli(kit, "new-benchmark", src, "--title", "Synthetic dense layer (test)", "--stack", "smoke-python")
    _fill_in(kit, src=src)
    _edit(kit / "reprokit" / "data" / "sources.yaml", "      timing: \"synthetic: made up for "
          "tests/catalog/test_new_benchmark.py\"\n    defects: []\n",
          "      timing: \"synthetic: made up for tests/catalog/test_new_benchmark.py\"\n    defects:\n"
          "      - id: dsynth-fwd\n        kind: timer\n        summary: \"made up: the forward timer\"\n"
          "        reference: \"made up for this test\"\n"
          "        applies_to: {metric: [forward_time], framework: [python]}\n")
    p = _cli(kit, "check-benchmark", src, ok=False)
    assert p.returncode == 0 and f"source {src}: 0 problem(s)" in p.stdout, p.stdout + p.stderr
    listed = json.loads(_cli(kit, "list", "--suite", f"source-{src}", "--json").stdout)
    got = {n["id"]: n["defects"] for n in listed["published"]}
    assert got == {f"{src}-T1-{i}": (["dsynth-fwd"] if i % 2 else []) for i in range(1, 5)}, got


PLANTED = {  # fault -> what check-benchmark's line must say
    "a number whose cell no suite has": "names cell 900/python/dense/n99, which no suite has",
    "a number of a metric its cell lacks": "is a 'backward_time_per_example' of cell",
    "a number on a device without a peak": "'Imaginary GPU 9000', which has no peak",
    "a FLOP model that does not cover the config": "does not cover number",
    "a metric no workload reports": "metric 'joules_per_token', which bench/workloads/s900_python.py never",
    "a claim naming a missing cell": "claim c900-smaller-is-faster names cell 900/python/dense/n7",
    "a number id used twice": "number id 900-T1-1 is used twice",
    "a cell whose workload is missing": "bench/workloads/s900_missing.py does not exist",
    "a metric whose quantity is missing": "metric 'forward_time_per_example' of number 900-T1-1 has no entry "
                                          "in metric_quantities",
    "a defect that selects no number": "defect d900-nothing applies to no published number",
    "a GPU stack in the defaults of a CPU table": "but inherits cudnn '5.1' from the table's defaults",
}


def test_check_benchmark_names_each_of_eleven_planted_faults(kit):
    _cli(kit, "new-benchmark", SRC, "--title", "Synthetic dense layer (test)", "--stack", "smoke-python")
    _fill_in(kit)
    assert _cli(kit, "check-benchmark", SRC).returncode == 0  # clean before the faults
    data = kit / "reprokit" / "data"
    pub, suite = data / "published" / "900.yaml", data / "suites" / "source-900.yaml"
    _edit(pub, "cell: 900/python/dense/n64\n    provenance: {row_label: \"dense n64 forward",
          "cell: 900/python/dense/n99\n    provenance: {row_label: \"dense n64 forward")
    _edit(pub, "metric: train_time_per_example\n    cell: 900/python/dense/n64",
          "metric: backward_time_per_example\n    cell: 900/python/dense/n64")
    _edit(pub, "  - id: 900-T1-2\n", "  - id: 900-T1-2\n    environment: {gpu: 'Imaginary GPU 9000'}\n")
    _edit(pub, "  - id: 900-T1-3\n", "  - id: 900-T1-1\n")
    _edit(data / "flops.yaml", 'forward_flops_per_item: "2 * n * n"',
          'forward_flops_per_item: "2 * n * n * depth"')
    _edit(suite, "metrics: [forward_time_per_example, train_time_per_example]",
          "metrics: [forward_time_per_example, train_time_per_example, joules_per_token]")
    _edit(data / "claims.yaml", "      - 900/python/dense/n64\n", "      - 900/python/dense/n7\n")
    _edit(suite, "    matrix: {n: [32, 64]}\n", "    matrix: {n: [32, 64]}\n"
          "  - {id: \"900/python/other/n{n}\", source: \"900\", stack: smoke-python, framework: python,\n"
          "     workload: s900_missing, variant: other, metrics: [forward_time_per_example],\n"
          "     params: {n: 8}}\n")
    _edit(data / "flops.yaml", "  forward_time_per_example: item\n", "")
    made_up = '"synthetic: made up for tests/catalog/test_new_benchmark.py"\n'
    _edit(data / "sources.yaml", made_up + "    defects: []\n", made_up + "    defects:\n"
          '      - {id: d900-nothing, kind: timer, summary: "made up", reference: "made up",\n'
          '         applies_to: {metric: [no_such_metric]}}\n')
    _edit(pub, f'    gpu: "{CPU}"\n', f'    gpu: "{CPU}"\n    cudnn: "5.1"\n')  # every row is a CPU's
    p = _cli(kit, "check-benchmark", SRC, ok=False)
    assert p.returncode == 2, p.stdout + p.stderr
    problems = [line for line in p.stdout.splitlines() if line.startswith("problem: ")]
    for fault, said in PLANTED.items():
        assert any(said in line for line in problems), (fault, p.stdout)
    for line in problems:  # each line names one planted fault, and has its fix
        assert sum(said in line for said in PLANTED.values()) == 1 and "(fix: " in line, line


def _digests(kit: Path) -> dict[str, str]:
    import hashlib
    out = {}
    for top in ("reprokit/data", "bench"):
        for p in sorted((kit / top).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                out[str(p.relative_to(kit))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


BAD_SCAFFOLDS = {  # argv after new-benchmark -> what the one line on stderr names
    "an id with a final newline": (["abc\n", "--title", "t", "--stack", "torch-0.1"], "source id 'abc\\n'"),
    "a suite with a final newline": (["abd", "--title", "t", "--stack", "torch-0.1", "--suite", "s\n"],
                                     "suite name 's\\n'"),
    "a framework with a final newline": (["abe", "--title", "t", "--stack", "torch-0.1", "--framework",
                                          "torch\n"], "framework 'torch\\n'"),
    "a title that writes keys": (["abf", "--title", "x\nschema_version: 99\nsource: evil", "--stack",
                                  "torch-0.1"], "--title 'x\\nschema_version: 99\\nsource: evil' holds"),
    "a title with a control character": (["abg", "--title", "x\x1b]0;t\x07", "--stack", "torch-0.1"],
                                         "holds the character U+001B"),
}


@pytest.mark.parametrize("case", sorted(BAD_SCAFFOLDS))
def test_new_benchmark_refuses_what_it_cannot_write_back_and_writes_nothing(kit, case):
    """`new-benchmark $'abc\\n'` wrote published/abc\\n.yaml and a key "abc\\n" into sources.yaml
    (`$` matches before a final newline), after which every command reading sources.yaml exited 2; a
    title with newlines wrote its own keys into the published file."""
    argv, said = BAD_SCAFFOLDS[case]
    before = _digests(kit)
    p = _cli(kit, "new-benchmark", *argv, ok=False)
    assert p.returncode == 2 and not p.stdout, (p.stdout, p.stderr)
    (line,) = p.stderr.strip().splitlines()
    assert said in line and "Traceback" not in p.stderr, line
    assert _digests(kit) == before
    assert _cli(kit, "list", "--suite", "smoke").returncode == 0  # the kit's data still loads


def test_new_benchmark_writes_a_title_of_quotes_colons_and_backslashes_as_given(kit):
    title = 'He said "fast": 2x # not a comment \\ and \'quoted\''
    _cli(kit, "new-benchmark", SRC, "--title", title, "--stack", "smoke-python")
    import ast

    import yaml
    data = kit / "reprokit" / "data"
    assert yaml.safe_load((data / "sources.yaml").read_text())["sources"][SRC]["title"] == title
    pub = yaml.safe_load((data / "published" / f"{SRC}.yaml").read_text())
    assert pub["defaults"]["provenance"]["source_label"] == title and pub["source"] == SRC
    doc = ast.get_docstring(ast.parse((kit / "bench" / "workloads" / "s900_python.py").read_text()))
    assert doc.startswith(f"Source {SRC} ({title}).")
    assert _cli(kit, "check-benchmark", SRC, ok=False).returncode == 2  # loads; only the TODOs are named


IMPOSSIBLE = {  # what is written in place of the first number's value or unit -> what the problem says
    "a value that is not a number": (("value: 0.05\n", "value: .nan\n"),
                                     "'.nan' on line"),
    "a negative value": (("value: 0.05\n", "value: -0.5\n"), "-0.5 is less than the minimum of 0"),
    "a zero time": (("value: 0.05\n", "value: 0\n"), "0 is less than or equal to the minimum of 0"),
    "a value beyond any time": (("value: 0.05\n", "value: 1.0e+308\n"), "is greater than the maximum of"),
    "a unit the kit does not know": (("value: 0.05\n    unit: ms\n", "value: 0.05\n    unit: furlongs\n"),
                                     "'furlongs' is not valid under any of the given schemas "
                                     "(expected a unit"),
    "a speed unit on a time metric": (("value: 0.05\n    unit: ms\n", "value: 0.05\n    unit: words/s\n"),
                                      "forward_time_per_example is a time but 'words/s' is a rate unit"),
    "a key given twice": (("value: 0.05\n", "value: 0.05\n    value: 5\n"),
                          "key 'value' is given twice (lines"),
}


def test_check_benchmark_refuses_impossible_published_data(kit):
    """Each of these gave `check-benchmark` "wired in completely": a .nan, negative, zero or 1e308
    time, an unknown unit, a speed unit on a time metric, a key given twice (the later won)."""
    _cli(kit, "new-benchmark", SRC, "--title", "Synthetic dense layer (test)", "--stack", "smoke-python")
    _fill_in(kit)
    pub = kit / "reprokit" / "data" / "published" / f"{SRC}.yaml"
    good = pub.read_text()
    assert _cli(kit, "check-benchmark", SRC).returncode == 0
    for fault, ((old, new), said) in IMPOSSIBLE.items():
        assert good.count(old) >= 1, fault
        pub.write_text(good.replace(old, new, 1))
        p = _cli(kit, "check-benchmark", SRC, ok=False)
        problems = [line for line in p.stdout.splitlines() if line.startswith("problem: ")]
        assert p.returncode == 2 and len(problems) == 1, (fault, p.stdout, p.stderr)
        assert said in problems[0] and "published/900.yaml" in problems[0] and "(fix: " in problems[0], \
            (fault, problems[0])
    pub.write_text(good)


def test_a_suite_file_that_names_itself_twice_does_not_load(kit):
    """A suite file giving `name` twice was read with the later name: it could name itself after
    another suite. Any data file with a key given twice is refused in one line naming file and key."""
    suite = kit / "reprokit" / "data" / "suites" / "smoke.yaml"
    text = suite.read_text()
    assert text.count("\nname: smoke\n") == 1
    suite.write_text(text.replace("\nname: smoke\n", "\nname: smoke\nname: legacy-2017\n"))
    p = _cli(kit, "list", "--suite", "smoke", ok=False)
    assert p.returncode == 2 and not p.stdout, (p.stdout, p.stderr)
    (line,) = p.stderr.strip().splitlines()
    assert "reprokit/data/suites/smoke.yaml: key 'name' is given twice (lines" in line
    assert "keep one of the two" in line


def test_an_interrupted_sequential_run_is_reported_from_its_processes_and_resumed(kit, tmp_path):
    """The default design runs a deciding cell in 3 to 6 processes. Stopped by SIGINT once every cell
    has 2 (before the design's first look), the run keeps them: the report decides the claim from those
    processes and marks the cells pending, not NOT_RUN; `--resume` with another --repeat is refused
    naming the design it would continue; `--resume` continues the same design."""
    import os
    import signal
    import time

    _cli(kit, "new-benchmark", SRC, "--title", "Synthetic dense layer (test)", "--stack", "smoke-python")
    _fill_in(kit, (16, 128))
    results = tmp_path / "results"
    proc = subprocess.Popen([sys.executable, str(kit / "reproduce.py"), "run", "--suite", "source-900",
                             "--runner", "local", "--results", str(results)], cwd=str(kit),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600
    while len(list(results.glob("*/cells/*.p2.json"))) < 2 and proc.poll() is None:
        assert time.monotonic() < deadline, "no second process of each cell in 10 minutes"
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()[0]
    os.kill(proc.pid, signal.SIGINT)
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode != 0 and "interrupted by SIGINT" in out, out
    assert re.search(r"0 finished cell\(s\) and [4-9] ok cell process\(es\)", out), out
    (run,) = [d for d in results.iterdir() if (d / "run.json").exists()]
    _cli(kit, "report", str(run), ok=False)
    rep = json.loads((run / "report.json").read_text())
    (claim,) = [c for c in rep["claims"] if c["id"] == f"c{SRC}-smaller-is-faster"]
    assert claim["status"] == "HOLDS", claim  # 64x the work: decided from 2 processes a cell
    statuses = {c["cell_id"]: c["status"] for c in json.loads((run / "run.json").read_text())["cells"]}
    assert set(statuses.values()) == {"pending"}, statuses
    other = _cli(kit, "run", "--suite", "source-900", "--runner", "local", "--resume", str(run), "--repeat",
                 "3", ok=False)  # another K on resume: refused with the design it continues and the way out
    assert other.returncode == 2 and "runs the default design (deciding cells sequentially, up to 6" in \
        other.stderr and "drop --repeat to continue it" in other.stderr, other.stderr
    resumed = _cli(kit, "run", "--suite", "source-900", "--runner", "local", "--resume", str(run))
    said = resumed.stdout + resumed.stderr
    assert "processes 1, 2 of 6 kept" in said and "done in" in said, said
    statuses = {c["cell_id"]: c["status"] for c in json.loads((run / "run.json").read_text())["cells"]}
    assert set(statuses.values()) == {"ok"}, statuses


def test_a_table_whose_train_column_copies_its_forward_one_says_so_first(kit, tmp_path):
    """A table's own contradiction is decided from its numbers alone: a column copied into another is
    a note of check-benchmark and a clause of the report's first screen (not a footnote)."""
    _cli(kit, "new-benchmark", SRC, "--title", "Synthetic dense layer (test)", "--stack", "smoke-python")
    _fill_in(kit, (16, 128))
    pub = kit / "reprokit" / "data" / "published" / f"{SRC}.yaml"
    text = re.sub(r'row_label: "dense (n\d+) [a-z_]+"', r'row_label: "dense \1"', pub.read_text())
    for train, forward in (("0.05", "0.0125"), ("0.8", "0.2")):  # the train column copies the forward one
        text = text.replace(f"value: {train}\n    unit: ms\n    metric: train",
                            f"value: {forward}\n    unit: ms\n    metric: train")
    pub.write_text(text)
    said = _cli(kit, "check-benchmark", SRC).stdout
    assert "column 'train_time_per_example' equals column 'forward_time_per_example' in all 2 rows" in said, \
        said
    results = tmp_path / "results"
    _cli(kit, "run", "--suite", f"source-{SRC}", "--quick", "--runner", "local", "--results", str(results))
    (run,) = [d for d in results.iterdir() if (d / "run.json").exists()]
    (line,) = json.loads((run / "report.json").read_text())["first_screen"]
    assert [f["kind"] for f in line["table"]] == ["identical_columns"], line["table"]
    assert "its published table contradicts itself: Table 1: column" in line["answer"]
    first = (run / "report.md").read_text().split("\n## ")[1]  # the first screen: "Does it hold here?"
    assert first.startswith("Does it hold here?") and "contradicts itself" in first, first


def test_a_source_on_a_new_gpu_and_cpu_with_a_stand_in_touches_nine_files_by_hand(kit):
    """The guide's count for a source that leaves what the kit knows: the six files, plus the new
    GPU's peak (peaks.yaml), the new CPU (cpus.yaml) and the stand-in's class (standins.yaml)."""
    _cli(kit, "new-benchmark", SRC, "--title", "Synthetic dense layer (test)", "--stack", "smoke-python")
    _fill_in(kit)
    data = kit / "reprokit" / "data"
    made_up = "made up for tests/catalog/test_new_benchmark.py"
    pub = data / "published" / f"{SRC}.yaml"
    _edit(pub, "  - id: 900-T1-1\n", "  - id: 900-T1-1\n    environment: {gpu: 'Imaginary GPU 9000'}\n")
    _edit(pub, "  - id: 900-T1-2\n",
          "  - id: 900-T1-2\n    environment: {gpu: 'none (Imaginary CPU 7, 8 cores)'}\n")
    assert _cli(kit, "check-benchmark", SRC, ok=False).returncode == 2  # two devices without a peak
    _edit(data / "peaks.yaml", "gpus:\n", "gpus:\n  imaginary-9000:\n    name: Imaginary GPU 9000\n"
          "    match: ['Imaginary GPU 9000']\n    fp32_tflops: 10.0\n    verified: false\n"
          f"    sources: ['{made_up}']\n    memory_bandwidth_gbs: 500.0\n    bandwidth_verified: false\n"
          f"    bandwidth_sources: ['{made_up}']\n")
    _edit(data / "cpus.yaml", "publication_cpus:\n", "publication_cpus:\n  - id: imaginary-cpu-7\n"
          "    match: ['Imaginary CPU 7']\n    label: Imaginary CPU 7, 8 cores\n    vendor: GenuineIntel\n"
          "    family: 6\n    model: 63\n    uarch: haswell-ep\n    cores: 8\n    clock_ghz: 3.0\n"
          f"    clock_source: '{made_up}'\n    bandwidth_gbs: 50.0\n    bandwidth_source: '{made_up}'\n"
          f"    sources: ['{made_up}']\n    verified: false\n")
    workload = kit / "bench" / "workloads" / f"s{SRC}_python.py"
    _edit(workload, '    ctx.describe(framework="python"',
          '    ctx.substitute("Torch7 nn (Lua)", "nested lists in Python", "no Lua stack in the kit")\n'
          '    ctx.describe(framework="python"')
    _edit(data / "standins.yaml", "standins:\n", "standins:\n  - id: torch7-as-python\n    kind: framework\n"
          "    original: 'Torch7'\n    short: \"Python lists for Torch7 nn\"\n"
          f"    why: \"{made_up}\"\n")
    said = _cli(kit, "check-benchmark", SRC).stdout
    assert f"source {SRC}: 0 problem(s)" in said, said
    touched = sorted(line[3:] for line in _git(kit, "status", "--porcelain", "-uall").splitlines())
    assert touched == ["bench/workloads/s900_python.py", "reprokit/data/claims.yaml",
                       "reprokit/data/cpus.yaml", "reprokit/data/flops.yaml", "reprokit/data/peaks.yaml",
                       "reprokit/data/published/900.yaml", "reprokit/data/sources.yaml",
                       "reprokit/data/standins.yaml", "reprokit/data/suites/source-900.yaml"]  # nine
    guide = (REPO / "docs" / "adding-a-benchmark.md").read_text()
    assert "that is nine files by hand" in " ".join(guide.split())
