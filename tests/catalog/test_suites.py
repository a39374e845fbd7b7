"""Suite, published, source and stack data: schemas, expansion, mapping of every published number."""

import csv

import pytest

from reprokit.catalog import suites
from reprokit.errors import UserError


def test_every_suite_loads_and_has_unique_cells():
    names = suites.suite_names()
    assert {"legacy-2017", "keras-mxnet-2018", "cudnn-lstm-2018", "stacked-lstm-2019",
            "smoke"} <= set(names)
    for n in names:
        s = suites.load_suite(n)
        assert s.cells and len({c.id for c in s.cells}) == len(s.cells)
        for c in s.cells:
            assert c.implemented or c.reason, f"{c.id} is not implemented and gives no reason"


def test_legacy_2017_has_the_issue_cells():
    s = suites.load_suite("legacy-2017")
    ids = {c.id for c in s.cells}
    for fw_variant in ["theano/fastlstm", "tensorflow/basic_lstm", "tensorflow/fused_lstm",
                       "tensorflow/cudnn_lstm", "pytorch/nn_lstm"]:
        for cfg in ["b128-s30-h512", "b128-s30-h1024", "b128-s100-h512", "b128-s100-h1024"]:
            assert f"000/{fw_variant}/{cfg}" in ids
    assert "001/pytorch/word_lm/b128-s128-h1024" in ids


def test_every_published_number_is_data_and_maps_to_a_cell(repo):
    # tests/data/published_numbers.csv: a byte-for-byte copy of shared/reference/published_numbers.csv
    # (sha256 in tests/data/README.md), so a clone on its own can check the imported data against it
    rows = list(csv.DictReader(open(repo / "tests" / "data" / "published_numbers.csv", newline="")))
    numbers = [n for n in suites.all_sources_published() if "csv_line" in n]  # those the CSV holds
    assert len(numbers) == len(rows) and {n["provenance"]["source"] for n in numbers} == {
        r["suite_source"][:3] for r in rows}
    all_cells = {c.id for n in suites.suite_names() for c in suites.load_suite(n).cells}
    for n, r in zip(numbers, rows):
        assert n["value"] == float(r["value"]) and n["unit"] == r["unit"]
        assert n["provenance"]["source_label"] == r["suite_source"]
        assert n["environment"]["gpu"] == r["gpu"]
        assert n["cell"] in all_cells, n["id"]


def test_defects_are_attached_by_their_selectors():
    n001 = suites.load_published("001")
    assert all("d001-no-sync" in n["defects"] for n in n001)
    evals = [n for n in n001 if n["metric"] == "eval_wps"]
    assert evals and all("d001-eval-is-validation" in n["defects"] for n in evals)
    n000 = suites.load_published("000")
    theano_train = [n for n in n000 if n["workload"]["framework"] == "Theano"
                    and n["metric"] == "train_time_per_example"]
    assert all("d000-tf-transfers" not in n["defects"] for n in theano_train)
    known = {d["id"] for s in suites.load_sources().values() for d in s["defects"]}
    used = {d for n in suites.all_sources_published() for d in n["defects"]}
    assert used <= known
    assert known == used, f"defects matching no number: {known - used}"


def test_every_stack_names_its_image_and_local_provision():
    stacks = suites.load_stacks()
    for name, spec in stacks.items():
        assert spec["local"]["env"] in ("host", "venv")
        if spec["local"]["env"] == "venv":
            assert spec["local"]["requirements"], name


def test_every_budget_takes_enough_samples_for_an_exact_interval():
    """At least 6 timed samples per metric (full and --quick budgets), so the exact 95 % order-statistic
    interval of the median exists (reprokit.analysis.stats.MIN_EXACT_N)."""
    from reprokit.analysis import stats

    for name in suites.suite_names():
        s = suites.load_suite(name)
        for key in ("budget", "quick_budget"):
            assert s.defaults[key]["min_samples"] >= stats.MIN_EXACT_N, (name, key)
        for c in s.cells:
            assert (c.budget or {}).get("min_samples", stats.MIN_EXACT_N) >= stats.MIN_EXACT_N, c.id


def test_a_published_table_with_defaults_is_checked_once_merged():
    """docs/adding-a-benchmark.md step 1: what all rows share is written once in `defaults`; each number
    is checked against published.schema.json with them merged, so a row the defaults leave incomplete
    is named like any schema error."""
    from reprokit import validate

    doc = {"schema_version": 1, "source": "900",
           "defaults": {"provenance": {"table": "T1"}, "workload": {},
                        "environment": {"gpu": "Tesla P40", "framework": "torch",
                                        "framework_version": "1.0"}},
           "numbers": [{"id": "900-1", "value": 1.0, "unit": "ms", "metric": "m", "cell": None,
                        "provenance": {"row_label": "r"}, "environment": {"gpu": "Tesla P100"}}]}
    (n,) = suites.expand_published(doc)["numbers"]
    assert n["provenance"] == {"table": "T1", "row_label": "r", "source": "900"}
    assert n["environment"]["gpu"] == "Tesla P100" and n["environment"]["framework"] == "torch"
    assert validate.errors("published", suites.expand_published(doc)) == []
    del doc["defaults"]["environment"]["framework_version"]
    doc["numbers"][0]["environment"] = {}
    assert validate.errors("published", suites.expand_published(doc))  # no version anywhere
    doc["defaults"]["units"] = "ms"
    with pytest.raises(UserError, match="defaults may hold only provenance, workload, environment"):
        suites.expand_published(doc)


def test_a_group_that_needs_a_gpu_keeps_it_when_its_numbers_were_published_on_one(data_copy):
    """A GPU-only group (`needs_gpus: 1`) whose numbers were published on one GPU: its cells need a
    GPU (they were planned on a CPU host, the numbers' one GPU read as "runs on the run's device");
    the same group over numbers published on a CPU is a data error."""
    from reprokit import kitdata

    root = data_copy
    suite = root / "suites" / "stacked-lstm-2019.yaml"
    text = suite.read_text()
    suite.write_text(text.replace("    workload: s003_tensorflow\n",
                                  "    workload: s003_tensorflow\n    needs_gpus: 1\n", 1))
    with kitdata.using(kitdata.KitData(root)):
        cells = {c.id: c for c in suites.load_suite("stacked-lstm-2019").cells}
    tf = [c for cid, c in cells.items() if cid.startswith("003/tensorflow/eager_fine_grained/")]
    assert tf and all(c.needs_gpus == 1 for c in tf), [(c.id, c.needs_gpus) for c in tf]
    assert all(c.needs_gpus == 0 for cid, c in cells.items() if cid.startswith("003/pytorch/"))
    pub = root / "published" / "003.yaml"
    pub.write_text(pub.read_text().replace("gpu: GeForce RTX 2080 Ti",
                                           "gpu: 'none (CPU: 6-core/12-thread Intel family 6 model 63)'"))
    with kitdata.using(kitdata.KitData(root)):
        with pytest.raises(UserError, match="needs_gpus: 1, but its published"):
            suites.load_suite("stacked-lstm-2019")
