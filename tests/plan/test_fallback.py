"""Fallback chains on new GPUs: reprokit/plan/fallback.py through preflight.

Hosts are stored fingerprints of Ampere (A100), Hopper (H100) and Blackwell (B200, RTX 5090) GPUs
(tests/data/fingerprints; made by hand, no such host was fingerprinted). Nothing here ran on a GPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reprokit import formats
from reprokit.catalog import suites
from reprokit.plan import compat as compat_data
from reprokit.plan import fallback, preflight, probe_cache
from reprokit.results import RunDir
from reprokit.run.record import finish_result as _finish_result
from reprokit.run.record import placeholder_result
from reprokit.runners.base import CellOutcome

ROOT = Path(__file__).resolve().parents[2]
FPS = ROOT / "tests" / "data" / "fingerprints"
COMPAT = compat_data.load_compat()
STACKS = suites.load_stacks()
GPU_STACKS = sorted(n for n, s in COMPAT["stacks"].items() if s["gpu"])
HOSTS = ("a100", "h100", "b200", "rtx5090")


def stored(name: str) -> dict:
    return json.loads((FPS / f"{name}.json").read_text())


def image_id(stack: str) -> str:
    return "sha256:" + suites.load_stacks()[stack]["image"].replace("-", "0").ljust(12, "0")


def host(name: str, driver: str | None = None, cuda: str | None = None) -> dict:
    """A stored host, the engine up and every GPU image built with an ID (so probes can apply)."""
    fp = stored(name)
    for g in fp["gpus"]:
        g["driver_version"] = driver or g["driver_version"]
        g["cuda_driver_version"] = cuda or g["cuda_driver_version"]
    images = {preflight.IMAGE_TAG.format(image=suites.load_stacks()[s]["image"], flavour="gpu"):
              {"present": True, "image_id": image_id(s)} for s in GPU_STACKS}
    return preflight.host_from_fingerprint(fp, engine_present=True, images=images), fp


def probes_ok(fp: dict, stacks, tmp_path: Path) -> list[dict]:
    """Probe-cache entries as a gpu-smoke run on this host leaves them, each probe passed."""
    cache = tmp_path / "probes.json"
    for stack in stacks:
        result = {"schema_version": formats.version("cell_result"), "kind": "cell_result",
                  "run_id": "20261125T100000Z-gpu-smoke",
                  "cell_id": f"gpu-smoke/{stack}", "stack": stack,
                  "workload": suites.load_suite("gpu-smoke").cell(f"gpu-smoke/{stack}").workload,
                  "params": {"cuda_force_ptx_jit": True}, "device": "gpu", "status": "ok", "reason": None,
                  "started": "2026-11-25T09:59:50Z", "finished": "2026-11-25T10:00:00Z",
                  "extra": {"probe": {"gemm": {"max_rel_error": 1e-6},
                                      "lstm_step": {"max_abs_error_h": 1e-7}}},
                  "runner": {"name": "docker", "image_id": image_id(stack), "image_digest": None}}
        probe_cache.record_result(result, fp, "docker", "gpu", cache)
    return probe_cache.load(cache)["entries"]


def verdicts(suite: str, h: dict, runner: str = "docker", probes=None, device: str = "gpu") -> dict:
    return preflight.cell_verdicts(suites.load_suite(suite).cells, h, runner, COMPAT, probes,
                                   stacks=STACKS, device=device)


def numbers(suite: str) -> list[dict]:
    s = suites.load_suite(suite)
    return [n for src in s.sources for n in suites.load_published(src) if n.get("cell")]


# -- the data ---------------------------------------------------------------------------------------
def test_every_legacy_gpu_stack_has_a_chain_that_names_known_stacks_or_says_why_not():
    for name, entry in COMPAT["stacks"].items():
        if not entry["gpu"] or STACKS[name]["era"] == "modern":
            continue
        links = fallback.chain_of(name, COMPAT)
        assert links, f"{name} has no fallback chain"
        for link in links:
            if link["stack"] is None:
                assert link["why_not"] and link["source"] and link["candidate"], (name, link)
            else:
                assert COMPAT["stacks"][link["stack"]]["gpu"], (name, link)
                # same framework, or (Keras on TensorFlow) the framework it ran on
                assert STACKS[link["stack"]]["framework"] in (STACKS[name]["framework"], "tensorflow")


def test_a_chain_naming_an_unknown_stack_is_rejected(tmp_path):
    data = yaml.safe_load((ROOT / "reprokit" / "data" / "compat.yaml").read_text())
    data["fallbacks"]["tf-1.2"].append({"stack": "tf-9.9", "kind": "modern"})
    bad = tmp_path / "compat.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(compat_data.CompatError, match="unknown stack 'tf-9.9'"):
        compat_data.load_compat(bad)
    data["fallbacks"]["tf-1.2"][-1] = {"stack": None, "kind": "nearest"}  # no candidate, no reason
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(Exception, match="candidate"):
        compat_data.load_compat(bad)


# -- a GPU run checks the GPU for single-GPU cells ------------------------------------------------------
def test_a_cell_published_on_one_gpu_is_checked_against_the_gpu_on_a_gpu_run():
    """Preflight once passed `needs_gpus` (0 for a one-GPU number), so a GPU run's
    single-GPU cells were checked as CPU cells: no driver, architecture or probe check at all."""
    h, _ = host("h100")
    cell = next(c for c in suites.load_suite("legacy-2017").cells if c.stack == "tf-1.2")
    assert cell.needs_gpus == 0
    on_gpu = verdicts("legacy-2017", h)[cell.id]
    names = {c["name"] for c in on_gpu["chain"]["links"][0]["checks"]}
    assert {"gpu_count", "driver"} <= names and any(n.startswith("arch:") for n in names)
    on_cpu = verdicts("legacy-2017", h, device="cpu")[cell.id]
    assert "chain" not in on_cpu and not any(c["name"] == "gpu_count" for c in on_cpu["checks"])


# -- Hopper ---------------------------------------------------------------------------------------------
def test_h100_without_probes_tf12_runs_on_the_modern_tf_and_says_why():
    h, _ = host("h100")
    v = verdicts("legacy-2017", h)
    tf = [c for c in suites.load_suite("legacy-2017").cells if c.stack == "tf-1.2"]
    assert tf
    for c in tf:
        chain = v[c.id]["chain"]
        assert v[c.id]["runnable"] and fallback.stack_to_run(c.stack, v[c.id]) == "tf-modern"
        assert [(x["stack"], x["status"]) for x in chain["links"]] == [
            ("tf-1.2", "probe"), (None, "unavailable"), ("tf-modern", v[c.id]["status"])]
        sub = chain["substitution"]
        assert sub["original"].startswith("GPU stack tf-1.2 (image legacy-2017-tensorflow: tensorflow 1.2.1")
        assert sub["used"].startswith("fallback link tf-modern (image modern: tensorflow 2.21.0")
        assert "NVIDIA H100 80GB HBM3 (CC 9.0)" in sub["why"] and "needs a probe" in sub["why"]
        assert "nvidia-tensorflow 1.15.5" in sub["why"] and "gpu-smoke" in sub["why"]


def test_h100_on_driver_570_the_cuda13_torch_link_is_refused_and_the_chain_says_so():
    h, _ = host("h100")  # R570: CUDA 12.8; the modern torch image needs CUDA 13.0 (driver >= 580)
    v = verdicts("legacy-2017", h)
    torch = [c for c in suites.load_suite("legacy-2017").cells if c.stack == "torch-0.1"]
    for c in torch:
        assert not v[c.id]["runnable"] and v[c.id]["chain"]["stack"] is None
        last = v[c.id]["reasons"][-1]
        assert last.startswith("fallback chain: no link runs here:")
        assert "torch-modern: not runnable" in last and "< 580 needed by CUDA 13.0" in last


def test_h100_every_legacy_2017_number_maps_to_an_accepted_link_once_the_originals_are_probed(tmp_path):
    """The issue's acceptance case: with the probes a GPU user runs first (gpu-smoke), every
    published number of legacy-2017 maps to a link preflight accepts, the substitution named."""
    h, fp = host("h100")
    probes = probes_ok(fp, ["theano-0.9", "torch-0.1"], tmp_path)  # tf-1.2's probe not run
    v = verdicts("legacy-2017", h, probes=probes)
    cells = {c.id: c for c in suites.load_suite("legacy-2017").cells}
    ran_on = {}
    for n in numbers("legacy-2017"):
        c = cells[n["cell"]]
        assert v[c.id]["runnable"], (n["id"], v[c.id]["reasons"])
        ran_on[n["id"]] = fallback.stack_to_run(c.stack, v[c.id])
        if ran_on[n["id"]] != c.stack:
            assert fallback.substitution(v[c.id])["used"].startswith(f"fallback link {ran_on[n['id']]}")
        else:
            assert fallback.substitution(v[c.id]) is None
    assert set(ran_on.values()) == {"theano-0.9", "torch-0.1", "tf-modern"}
    assert len(ran_on) == len(numbers("legacy-2017")) >= 54  # 48 of source 000, 6 of 001


def test_h100_on_driver_580_torch_falls_back_to_the_modern_torch_without_probes():
    h, _ = host("h100", driver="580.95.05", cuda="13.0")
    v = verdicts("legacy-2017", h)
    for c in suites.load_suite("legacy-2017").cells:
        used = fallback.stack_to_run(c.stack, v[c.id])
        expected = {"tf-1.2": "tf-modern", "torch-0.1": "torch-modern", "theano-0.9": "theano-0.9"}[c.stack]
        assert used == expected, (c.id, v[c.id]["reasons"])
        assert v[c.id]["runnable"] is (c.stack != "theano-0.9")  # Theano: no link but its own


# -- Ampere and Blackwell ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", HOSTS)
@pytest.mark.parametrize("suite", ["legacy-2017", "stacked-lstm-2019", "cudnn-lstm-2018", "keras-mxnet-2018"])
def test_every_cell_runs_on_an_accepted_link_or_names_every_link_it_tried(name, suite):
    h, _ = host(name, driver="580.95.05", cuda="13.0")
    for cell_id, v in verdicts(suite, h).items():
        chain = v.get("chain")
        if v["runnable"]:
            if chain:
                assert chain["stack"] and chain["substitution"], cell_id
            continue
        if chain:  # refused: every link it tried is in the reasons
            assert chain["stack"] is None
            tried = [x["stack"] or x["candidate"] for x in chain["links"][1:]]
            assert all(t in v["reasons"][-1] for t in tried), (cell_id, tried)


def test_torch13_on_ampere_is_blocked_by_its_pruned_libraries_and_runs_on_the_modern_torch():
    h, _ = host("a100", driver="580.95.05", cuda="13.0")
    v = verdicts("stacked-lstm-2019", h)
    for c in suites.load_suite("stacked-lstm-2019").cells:
        if c.stack != "torch-1.3" or c.device == "cpu":
            continue
        chain = v[c.id]["chain"]
        assert chain["links"][0]["status"] == "blocked"
        assert any("torch13-pruned-cudnn-cublas" in r for r in chain["links"][0]["reasons"])
        assert chain["stack"] == "torch-modern" and v[c.id]["runnable"]


# -- where chains do not apply -----------------------------------------------------------------------------
def test_no_chain_for_the_local_runner_for_cpu_runs_or_for_probe_cells():
    h, _ = host("h100")
    assert not any("chain" in v for v in verdicts("legacy-2017", h, runner="local").values())
    assert not any("chain" in v for v in verdicts("legacy-2017", h, device="cpu").values())
    probes = verdicts("gpu-smoke", h)
    assert probes["gpu-smoke/tf-1.2"]["status"] == "jit" and "chain" not in probes["gpu-smoke/tf-1.2"]


# -- the substitution lands in the cell's result -------------------------------------------------------------
def test_the_substitution_is_the_first_entry_of_the_results_substitutes(tmp_path):
    h, _ = host("h100")
    cell = next(c for c in suites.load_suite("legacy-2017").cells if c.stack == "tf-1.2")
    v = verdicts("legacy-2017", h)[cell.id]
    rundir = RunDir(tmp_path / "run")
    rundir.cells_dir.mkdir(parents=True)
    harness_result = placeholder_result("r1", cell, "ok", None, "gpu")
    harness_result.update(reason=None, stack="tf-modern",
                          implementation={"substitutes": [{"original": "TensorFlow 1.x top-level graph API",
                                                           "used": "tf.compat.v1", "why": "TF 2"}]})
    rundir.write_cell(harness_result)
    res = _finish_result(rundir, "r1", cell, CellOutcome("ok", None, 1.0, None, {}), STACKS["tf-modern"],
                         "docker", "gpu", None, None, fallback.substitution(v))
    subs = res["implementation"]["substitutes"]
    assert subs[0] == fallback.substitution(v) and len(subs) == 2
    assert rundir.load_cell(cell.id)["implementation"]["substitutes"][0]["used"].startswith("fallback link")
    from reprokit.analysis import standins
    from reprokit.reader.result import CellResult
    kinds = {s["id"]: s["kind"] for s in standins.of_cell(CellResult.from_doc(res))}
    assert kinds.get("gpu-fallback-link") == "version"


# -- the command line ----------------------------------------------------------------------------------------
def cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "reproduce.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_preflight_plans_for_a_stored_h100_fingerprint_and_names_the_links():
    p = cli("preflight", "--suite", "legacy-2017", "--runner", "docker", "--device", "gpu",
            "--fingerprint", str(FPS / "h100.json"), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    tf = [v for cid, v in out.items() if "/tensorflow/" in cid]
    assert tf and all(v["chain"]["stack"] == "tf-modern" and v["runnable"] for v in tf)


@pytest.mark.parametrize("content,expected", [(None, "cannot read it"), ("{nope", "not valid JSON"),
                                              ('{"gpus": 3}', "not a host fingerprint")])
def test_a_bad_fingerprint_file_is_one_line_and_exit_2(tmp_path, content, expected):
    f = tmp_path / "fp.json"
    if content is not None:
        f.write_text(content)
    p = cli("preflight", "--suite", "legacy-2017", "--fingerprint", str(f))
    assert p.returncode == 2, p.stderr
    assert expected in p.stderr and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
