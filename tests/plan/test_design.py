"""The default design (reprokit/plan/design.py): processes x iterations per cell from the
recorded costs and variances (data/cell_costs.yaml, tools/record_cell_costs.py), Kalibera & Jones."""

import importlib.util
import json
import math
import shutil
import statistics
from pathlib import Path

import pytest

from reprokit import kitdata
from reprokit.catalog import suites
from reprokit.plan import design
from reprokit.plan.design import default_options
from reprokit.plan.plan import Options, budget_for, make_plan

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "docs" / "sample-run" / "20261124T200755Z-legacy-2017"


def test_kalibera_jones_iterations():
    # r = ceil(sqrt((c_process / c_iteration) * (T_it^2 / T_proc^2)))
    assert design.kj_iterations(10.0, 0.1, 0.05, 0.05) == 10
    assert design.kj_iterations(5.0, 0.5, 0.01, 0.04) == math.ceil(math.sqrt(10 * 0.0625))
    assert design.kj_iterations(1.0, 1.0, 0.0, 0.1) == 1  # no iteration noise: one iteration is enough


def test_cell_design_fills_the_budget_and_keeps_enough_iterations_for_detection():
    cfg = design.settings()
    c = {"start_s": 2.0, "iteration_s": 0.5, "within_cv": 0.02, "between_cv": None}
    d = design.cell_design(c, wall=40.0, warmup=2, t_process=0.04, cfg=cfg, min_iterations=6)
    assert d["iterations"] == 6  # K&J gives 2; the steady-state detection needs 6
    assert d["processes"] == math.floor(cfg["budget_factor"] * 40.0 / (2.0 + 8 * 0.5))
    tiny = design.cell_design(c, wall=3.0, warmup=0, t_process=0.04, cfg=cfg, min_iterations=6)
    assert tiny["processes"] == cfg["min_processes"]  # never fewer than an interval needs


def test_default_run_of_legacy_2017_uses_the_recorded_design():
    s = suites.load_suite("legacy-2017")
    opts = default_options(make_plan(s, Options()), "local")
    assert opts.design is not None and opts.repeat == opts.design["processes"] >= 3
    assert "cell_costs.yaml" in opts.design["source"] and "bench_rerun_coverage" in opts.design["source"]
    cells = make_plan(s, opts).runnable
    recorded = design.costs("legacy-2017", "local", False, "budget")[0]
    assert set(opts.design["cells"]) == {c.id for c in cells if c.id in recorded}
    min_iter = kitdata.load("steady_state")["min_iterations"]
    assert all(d["iterations"] >= min_iter for d in opts.design["cells"].values())
    # the job budget of a designed cell: exactly its iterations per process
    c = next(c for c in cells if c.id in opts.design["cells"])
    b = design.process_budget(budget_for(c, s, opts), opts.design["cells"][c.id])
    r = opts.design["cells"][c.id]["iterations"]
    assert (b["min_samples"], b["max_samples"], b["time_budget_s"]) == (r, r, 0)
    assert b["warmup"] == budget_for(c, s, opts)["warmup"]


def test_a_suite_without_recorded_costs_keeps_one_process():
    s = suites.load_suite("smoke")  # nothing published to decide
    opts = default_options(make_plan(s, Options()), "local")
    assert opts.design is None and opts.repeat == 1


def test_a_suite_with_published_numbers_but_no_costs_gets_the_fewest_processes_for_an_interval():
    s = suites.load_suite("stacked-lstm-2019")
    assert design.costs("stacked-lstm-2019", "local", False, "budget")[1] is None
    opts = default_options(make_plan(s, Options()), "local")
    assert opts.repeat == design.settings()["min_processes"] and opts.design["cells"] == {}
    assert "no costs recorded" in opts.design["text"]


def test_the_tool_records_costs_from_a_run():
    path = ROOT / "tools" / "record_cell_costs.py"
    spec = importlib.util.spec_from_file_location("record_cell_costs", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    e = tool.entry(SAMPLE)
    assert e["run"] == SAMPLE.name and e["repeat"] == 1
    c = e["cells"]["000/pytorch/nn_lstm/b128-s100-h1024"]
    assert c["between_cv"] is None and c["processes"] == 1  # one process: no process-level variance
    assert c["iteration_s"] > 0 and c["start_s"] > 0 and 0 < c["within_cv"] < 0.2
    assert c["round_s"] > c["iteration_s"]  # forward and train: one more iteration of the design costs both


def test_the_stored_costs_are_the_tools_output_on_the_run_they_name():
    """reprokit/data/cell_costs.yaml's legacy-2017 entry is `record_cell_costs.py --partial --rounds 1`
    of the README command's run on a fresh clone (committed in docs/readme-run/), cell for cell."""
    path = ROOT / "tools" / "record_cell_costs.py"
    spec = importlib.util.spec_from_file_location("record_cell_costs", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    stored = next(m for m in kitdata.load("cell_costs")["measurements"] if m["suite"] == "legacy-2017")
    run = ROOT / "docs" / "readme-run" / stored["run"]
    assert run.is_dir(), f"the run cell_costs.yaml names is not committed: {run}"
    e = tool.entry(run, partial=True, rounds=1)
    assert stored["cells"] == e["cells"] and len(e["cells"]) == 37
    # a one-shot metric (compile_time: 1 sample per process) never sizes a cell
    theano = e["cells"]["000/theano/fastlstm/b128-s30-h512"]
    assert theano["metric"] == "forward_time_per_example" and theano["start_s"] > 60  # a cold compile
    # the word LM's synced and unsynced metrics are one timed loop, counted once
    lm = e["cells"]["001/pytorch/word_lm/b128-s128-h1024"]
    result = json.loads((run / "cells" / "001__pytorch__word_lm__b128-s128-h1024.p1.json").read_text())
    loops = {tuple(m["raw_seconds"]) for m in result["metrics"].values()}
    assert len(loops) == 2 < len(result["metrics"])
    assert lm["round_s"] == round(sum(statistics.median(x) for x in loops), 5)


def _process(i: int, status: str, cell: dict) -> dict:
    return {"index": i, "status": status, "reason": None, "started": cell["started"],
            "finished": cell["finished"], "wall_s": cell["wall_s"], "process_wall_s": cell["wall_s"],
            "result_file": f"cells/x.p{i}.json", "log_file": f"logs/x.p{i}.log"}


def test_a_stopped_run_gives_costs_with_partial_only(tmp_path):
    """`--partial`: a cell of a run stopped between rounds (its finished processes all ok, status
    pending) counts; without it only finished cells do."""
    path = ROOT / "tools" / "record_cell_costs.py"
    spec = importlib.util.spec_from_file_location("record_cell_costs", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    run = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, run)
    f = run / "cells" / "000__pytorch__nn_lstm__b128-s30-h512.json"
    cell = json.loads(f.read_text())
    cell.update(status="pending", reason="process 2 of 3: not run yet",
                processes=[_process(1, "ok", cell)])
    f.write_text(json.dumps(cell))
    cid = "000/pytorch/nn_lstm/b128-s30-h512"
    assert cid not in tool.entry(run)["cells"]
    assert tool.entry(run, partial=True)["cells"][cid] == tool.entry(SAMPLE)["cells"][cid]
    cell["processes"].append(_process(2, "failed", cell))  # a failed process: no costs from it
    f.write_text(json.dumps(cell))
    assert cid not in tool.entry(run, partial=True)["cells"]


def test_a_noisy_cv_never_plans_a_process_its_time_limit_would_kill():
    cfg = {**design.settings(), "timeout_share": 0.5}
    # theano lstm s100-h1024 as recorded in round 1 of the README run (a loaded process)
    c = {"start_s": 231.51, "iteration_s": 7.05643, "round_s": 33.63212, "within_cv": 0.4109,
         "between_cv": None}
    free = design.cell_design(c, None, 0, 0.0383, cfg, 6)
    capped = design.cell_design(c, None, 0, 0.0383, cfg, 6, timeout_s=1200)
    assert free["iterations"] == 29 and free["process_s"] > 1200  # what K&J alone asks for
    assert capped["iterations"] == 10 and capped["process_s"] <= 0.5 * 1200
    tight = design.cell_design(c, None, 0, 0.0383, cfg, 6, timeout_s=300)
    assert tight["iterations"] == 6  # never fewer than steady-state detection needs


def test_the_published_protocol_keeps_its_iterations_and_gets_processes():
    s = suites.load_suite("legacy-2017")
    opts = default_options(make_plan(s, Options(protocol="published")), "local")
    assert opts.repeat == design.settings()["min_processes"] and opts.design["cells"] == {}
    assert "published protocol" in opts.design["text"]


def test_the_design_says_how_far_it_is_over_its_budget():
    cfg = design.settings()
    cells = {"cheap": {"process_s": 2.0, "planned_s": 6.0, "budget_s": cfg["budget_factor"] * 10.0},
             "costly": {"process_s": 20.0, "planned_s": 60.0, "budget_s": cfg["budget_factor"] * 30.0},
             "unknown": {"process_s": 5.0, "planned_s": 15.0, "budget_s": None}}
    b = design.budget_summary(cells, cfg)
    assert b["over"] == ["costly"] and b["no_budget"] == ["unknown"]
    assert b["ratio"] == round((6.0 + 60.0) / 40.0, 2) and b["one_process_s"] == 40.0
    assert "1 of them above their budget" in b["text"] and "1 of 3 cells without" in b["text"]
    within = design.budget_summary({"cheap": cells["cheap"]}, cfg)
    assert within["over"] == [] and "0 of them above" in within["text"]


def test_a_recorded_design_states_its_budget_in_its_text():
    s = suites.load_suite("legacy-2017")
    d = default_options(make_plan(s, Options()), "local").design
    b = d["budget"]
    assert all(c["planned_s"] == round(d["processes"] * c["process_s"], 1) for c in d["cells"].values())
    assert b["text"] in d["text"] and f"planned {b['ratio']:g}x" in d["text"]
    assert len(b["over"]) + len(b["no_budget"]) <= len(d["cells"])


@pytest.mark.parametrize("tool", ["record_cell_costs.py", "record_cell_times.py"])
def test_the_recording_tools_answer_a_bad_run_directory_with_one_line_and_exit_2(tool, tmp_path):
    import subprocess
    import sys
    data = ROOT / "reprokit" / "data"
    before = {n: (data / n).read_bytes() for n in ("cell_costs.yaml", "cell_times.yaml")}
    for arg, says in ((tmp_path / "missing", "does not exist"), (SAMPLE.parent, "does not exist")):
        r = subprocess.run([sys.executable, str(ROOT / "tools" / tool), str(arg)], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and says in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, str(ROOT / "tools" / tool)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "RUN_DIR" in r.stderr  # argparse's usage error
    assert {n: (data / n).read_bytes() for n in before} == before  # nothing written
