"""The driver (reprokit/run/driver.py) makes the plan once, for the device and runner it chose: the
framework-default twins exist only on a GPU and never where their cell runs on a CPU, and the default
design is the chosen runner's (not that of a second plan made for `--runner auto`)."""

from __future__ import annotations

from reprokit import cli
from reprokit.catalog import suites
from reprokit.catalog.suites import FRAMEWORK_DEFAULT
from reprokit.plan import design
from reprokit.plan import plan as plan_mod
from reprokit.plan.plan import Options, make_plan
from reprokit.run import driver
from tests import models


def test_cells_moved_to_the_cpu_in_a_gpu_run_lose_their_framework_default_twins():
    s = suites.load_suite("modern")
    gpu = make_plan(s, Options(device="gpu"))
    twins = [c for c in gpu.runnable if c.precision == FRAMEWORK_DEFAULT]
    assert twins, "the modern suite has framework-default twins on a GPU"
    stack = twins[0].stack  # --device auto where this stack's environment cannot use the GPU
    on_cpu = {c.id for c in gpu.runnable if c.stack == stack}
    moved = make_plan(s, Options(device="gpu"), on_cpu)
    for c in moved.runnable:
        assert c.device == "cpu" or c.id not in on_cpu, c.id  # moved cells run on the CPU
        assert not (c.precision == FRAMEWORK_DEFAULT and c.stack == stack), c.id
    skipped = {c.id for c, status, _ in moved.not_runnable if status == "skipped"}
    assert {t.id for t in twins if t.stack == stack} <= skipped
    # the other stacks' twins still run on the GPU
    assert any(c.precision == FRAMEWORK_DEFAULT for c in moved.runnable) == \
        any(t.stack != stack for t in twins)


def test_a_run_is_planned_once_with_the_chosen_runners_design(monkeypatch, tmp_path):
    made, seen = [], {}
    real = plan_mod.make_plan

    def counting(*a, **k):
        made.append(a)
        return real(*a, **k)

    def execute(plan, runner, rundir, argv, resume=False, say=print):
        seen.update(plan=plan, runner=runner, argv=argv)
        return models.write_detached_run(rundir, "legacy-2017", runner.name)  # nothing runs, no report

    monkeypatch.setattr(driver, "make_plan", counting)
    monkeypatch.setattr(driver, "execute", execute)
    code = cli.main(["run", "--suite", "legacy-2017", "--cells", "001/*", "--runner", "auto",
                     "--device", "cpu", "--design", "full", "--results", str(tmp_path / "r")])
    assert code == 0 and len(made) == 1
    p, runner = seen["plan"], seen["runner"]
    assert runner.name in ("local", "docker") and p.runner == runner.name
    expected = design.default_options(real(p.suite, Options(cells=["001/*"])), runner.name)
    assert p.options.design == expected.design and p.options.repeat == expected.repeat >= 3
    assert seen["argv"]  # the command line run.json records
    # the default design is by role: on a CPU nothing of 001 (published on GPUs) can be decided, so
    # its cell is measured once, for context, in the fewest iterations the steady-state detection takes
    made.clear()
    assert cli.main(["run", "--suite", "legacy-2017", "--cells", "001/*", "--runner", "auto",
                     "--device", "cpu", "--results", str(tmp_path / "r")]) == 0 and len(made) == 1
    d = seen["plan"].options.design
    assert d["kind"] == "auto" and seen["plan"].options.repeat == 1
    assert {c["role"] for c in d["cells"].values()} == {"context"}
    assert {c["processes"] for c in d["cells"].values()} == {1}
    assert d["judgment"].startswith("on this CPU 0 of 54 numbers and 0 of 15 claims can be decided")


def test_every_option_of_run_reaches_the_request():
    """RunRequest.from_args drops no option: each of `run`'s parsed options is a field of the
    request or of its Slurm part, except --no-report (the command's: it renders the report) and
    --debug (every command's)."""
    from dataclasses import fields

    from reprokit.run.request import RunRequest
    from reprokit.runners.slurm_setup import SlurmRequest

    args = cli.build_parser(["run"]).parse_args(
        ["run", "--suite", "smoke", "--cells", "a*", "b*", "--repeat", "2", "--quick",
         "--python", "pytorch-1.0=/usr/bin/python3", "--slurm-partition", "p1", "--slurm-time", "5",
         "--slurm-gpu-feature", "V100=v100", "--slurm-no-exclusive", "--detach", "--results", "out"])
    req = RunRequest.from_args(args)
    names = {f.name for f in fields(RunRequest)} - {"slurm"}
    slurm = {"detach" if f.name == "detach" else "slurm_" + f.name for f in fields(SlurmRequest)}
    given = set(vars(args)) - {"command", "func", "debug", "no_report"}  # debug: every command's
    assert given == names | slurm, given ^ (names | slurm)
    assert req.cells == ("a*", "b*") and req.repeat == 2 and req.quick and str(req.results) == "out"
    assert req.python == (("pytorch-1.0", "/usr/bin/python3"),)
    assert req.slurm == SlurmRequest(partition="p1", time=5, gpu_feature=(("V100", "v100"),),
                                     no_exclusive=True, detach=True)
    assert req.slurm.used() == ["--slurm-partition", "--slurm-gpu-feature", "--slurm-time",
                                "--slurm-no-exclusive", "--detach"]


def test_a_run_is_asked_for_from_code(tmp_path):
    """The driver takes a RunRequest, not the command line's namespace: a real run of one smoke cell."""
    from reprokit.run.request import RunRequest

    lines: list[str] = []
    req = RunRequest(suite="smoke", quick=True, runner="local", device="cpu", repeat=1,
                     cells=("smoke/python/matmul/*",), results=tmp_path)
    rundir, record = driver.drive(req, ["test"], lines.append)
    assert rundir.path.parent == tmp_path
    assert [(e["cell_id"], e["status"]) for e in record["cells"]] == [("smoke/python/matmul/n24", "ok")]
    assert any(line.startswith("runner: local") for line in lines), lines
