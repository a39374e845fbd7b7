"""CPU labels and theoretical fp32 peaks (reprokit/analysis/cpus.py, reprokit/data/cpus.yaml)."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path

import pytest
import yaml

from reprokit import validate
from reprokit.analysis import cpus
from reprokit.errors import UserError
from tests import models

HASWELL = "none (CPU: 6-core/12-thread Intel family 6 model 63)"
C5_18XL = "none (AWS c5.18xlarge CPU)"
C5_XL = "none (AWS c5.xlarge CPU)"


def fp(vendor="AuthenticAMD", family="25", model="1", stepping="1", flags=("avx", "avx2", "fma"),
       mhz=(2445.404, 2445.404), physical=2, logical=2, usable=2, quota=None, **extra) -> dict:
    """A fingerprint cpu dict shaped like reprokit.probes.fingerprint._cpu_info()."""
    cpu = {"model_name": "AMD EPYC", "vendor": vendor, "family": family, "model": model, "stepping": stepping,
           "flags": sorted(flags) if flags is not None else None, "mhz": list(mhz) if mhz else None,
           "physical_cores": physical, "logical_cores": logical, "usable_cores": usable,
           "cgroup_quota": {"cpus": quota, "reason": None if quota else "no quota"}}
    cpu.update(extra)
    return cpu


def host(**kw) -> dict:
    return {"cpu": fp(**kw)}


# -- the data file -------------------------------------------------------------------------------
def raw_doc() -> dict:
    return yaml.safe_load(resources.files("reprokit.data").joinpath("cpus.yaml").read_text())


def test_data_file_validates():
    assert validate.errors("cpus", raw_doc()) == []
    doc = cpus.load()
    assert doc["schema_version"] == 1
    ids = [e["id"] for e in doc["microarchitectures"]]
    assert len(ids) == len(set(ids))
    for e in doc["microarchitectures"]:
        assert e["sources"] and isinstance(e["verified"], bool)
        if not e["verified"]:
            assert "nverified" in e.get("notes", "")  # an unverified figure says why


@pytest.mark.parametrize("mutate", [
    lambda d: d["microarchitectures"][0].pop("fp32_flops_per_cycle"),
    lambda d: d["microarchitectures"][0].update(vendor="CyrixInstead"),
    lambda d: d["microarchitectures"][0].update(models=["63"]),
    lambda d: d["microarchitectures"][0].update(sources=[]),
    lambda d: d["publication_cpus"][0].update(cores="six"),
    lambda d: d["publication_cpus"][0].pop("match"),
    lambda d: d.update(schema_version=2),
    lambda d: d.update(unexpected=True),
])
def test_malformed_copy_fails_validation(mutate):
    doc = copy.deepcopy(raw_doc())
    mutate(doc)
    assert validate.errors("cpus", doc)
    with pytest.raises(UserError, match="cpus schema"):
        validate.check("cpus", doc, "copy of cpus.yaml")


# -- publication CPUs ----------------------------------------------------------------------------
def test_haswell_publication_cpu():
    c = cpus.publication_cpu(HASWELL)
    assert c["label"] == "Intel Haswell-E (family 6 model 63), 6 cores"
    assert (c["vendor"], c["family"], c["model"], c["uarch"]) == ("GenuineIntel", 6, 63, "haswell-ep")
    assert (c["cores"], c["clock_ghz"], c["flops_per_cycle"]) == (6, 3.5, 32)
    assert c["peak_tflops"] == pytest.approx(0.672)  # 6 x 3.5 GHz x 32 = 672 GFLOP/s
    assert "6 cores x 3.5 GHz x 32 fp32 FLOP/cycle" in c["derivation"] and "= 672 GFLOP/s" in c["derivation"]
    assert c["bandwidth_gbs"] == pytest.approx(68.3)
    assert c["verified"] is False  # exact model unknown, clock inferred from BogoMIPS
    assert c["reason"] is None and c["entry"] == "haswell-e-6core-003" and c["sources"]


@pytest.mark.parametrize("label, cores, tflops, bandwidth", [
    (C5_18XL, 36, 6.912, 255.9),  # 36 x 3.0 GHz x 64
    (C5_XL, 2, 0.384, 128.0),  # 2 x 3.0 GHz x 64
])
def test_aws_c5_publication_cpus(label, cores, tflops, bandwidth):
    c = cpus.publication_cpu(label)
    assert (c["vendor"], c["family"], c["model"], c["uarch_name"]) == ("GenuineIntel", 6, 85, "Skylake-SP")
    assert (c["cores"], c["clock_ghz"], c["flops_per_cycle"]) == (cores, 3.0, 64)
    assert c["peak_tflops"] == pytest.approx(tflops)
    assert c["bandwidth_gbs"] == pytest.approx(bandwidth)
    assert c["verified"] is True
    assert c["label"].startswith(f"Intel Skylake-SP (family 6 model 85), {cores} cores")


def test_c5_sizes_do_not_cross_match():
    assert cpus.publication_cpu(C5_XL)["entry"] == "aws-c5-xlarge"
    assert cpus.publication_cpu(C5_18XL)["entry"] == "aws-c5-18xlarge"
    assert cpus.publication_cpu("none (AWS C5.XLARGE CPU)")["entry"] == "aws-c5-xlarge"
    assert not cpus.same_model(cpus.publication_cpu(C5_XL), cpus.publication_cpu(C5_18XL))


@pytest.mark.parametrize("label", ["none (laptop)", "", "1x Tesla V100-16GB (AWS p3.8xlarge)"])
def test_unknown_publication_cpu_is_none(label):
    assert cpus.publication_cpu(label) is None


def test_every_published_cpu_label_resolves():
    root = resources.files("reprokit.data").joinpath("published")
    labels = set()
    for f in root.iterdir():
        if f.name.endswith(".yaml"):
            text = f.read_text()
            labels |= {lbl for lbl in (HASWELL, C5_18XL, C5_XL) if lbl in text}
    assert labels  # the published data uses these labels
    for lbl in labels:
        assert cpus.publication_cpu(lbl)["peak_tflops"] > 0


# -- run hosts -----------------------------------------------------------------------------------
def test_this_machine_like_host_is_zen3():
    c = cpus.host_cpu(host(flags=("avx", "avx2", "fma", "hypervisor")))
    assert (c["uarch"], c["uarch_name"], c["cores"]) == ("zen3", "Zen 3", 2)
    assert c["label"] == "AMD Zen 3 (family 25 model 1), 2 cores"
    assert c["clock_ghz"] == pytest.approx(2.445404)
    assert c["peak_tflops"] == pytest.approx(2 * 2.445404 * 32 / 1000)
    assert "max 'cpu MHz' reported in /proc/cpuinfo" in c["derivation"]
    assert "boost clocks above it are not counted" in c["derivation"]
    assert "hypervisor" in c["derivation"]
    assert c["verified"] is True and c["reason"] is None


def test_zen4_by_model_and_flags():
    c = cpus.host_cpu(host(model="17", flags=("avx2", "avx512f", "fma")))
    assert c["uarch_name"] == "Zen 4" and c["flops_per_cycle"] == 32
    # a family-25 model outside the known ranges is still Zen 4 when it has AVX-512
    assert cpus.host_cpu(host(model="48", flags=("avx2", "avx512f", "fma")))["uarch_name"] == "Zen 4"
    assert cpus.host_cpu(host(model="48"))["uarch"] is None


def test_zen4_and_zen5_are_different_devices():
    z4 = cpus.host_cpu(host(model="17", flags=("avx2", "avx512f", "fma")))
    z5 = cpus.host_cpu(host(family="26", model="17", flags=("avx2", "avx512f", "fma")))
    assert z5["uarch_name"] == "Zen 5" and z5["flops_per_cycle"] == 64 and z5["verified"] is False
    assert cpus.short_label(z4) != cpus.short_label(z5)
    assert z4["label"] == "AMD Zen 4 (family 25 model 17), 2 cores"
    assert z5["label"] == "AMD Zen 5 (family 26 model 17), 2 cores"
    assert not cpus.same_model(z4, z5)


@pytest.mark.parametrize("stepping, name", [
    ("4", "Skylake-SP"), ("7", "Cascade Lake"), ("5", "Cascade Lake"), (None, "Skylake-SP or Cascade Lake"),
    ("11", "Skylake-SP or Cascade Lake"),
])
def test_intel_family6_model85(stepping, name):
    c = cpus.host_cpu(host(vendor="GenuineIntel", family="6", model="85", stepping=stepping,
                           flags=("avx2", "avx512f", "fma"), mhz=(3000.0, 3400.9), physical=2, logical=4,
                           usable=4))
    assert c["uarch_name"] == name and c["flops_per_cycle"] == 64
    assert c["cores"] == 2  # physical cores, not hyperthreads
    assert c["peak_tflops"] == pytest.approx(2 * 3.4009 * 64 / 1000)  # highest 'cpu MHz'
    assert c["label"] == f"Intel {name} (family 6 model 85), 2 cores"


def test_host_matches_publication_cpu_only_with_same_cores():
    pub = cpus.publication_cpu(C5_XL)
    same = cpus.host_cpu(host(vendor="GenuineIntel", family="6", model="85", stepping="4",
                              flags=("avx512f", "fma"), mhz=(3000.0,)))
    assert cpus.same_model(pub, same)
    assert cpus.same_model({**pub, "kind": "cpu"}, {**same, "kind": "cpu"})
    bigger = cpus.host_cpu(host(vendor="GenuineIntel", family="6", model="85", stepping="4",
                                flags=("avx512f", "fma"), physical=4, logical=8, usable=8))
    assert not cpus.same_model(pub, bigger)
    assert not cpus.same_model(pub, {**same, "kind": "gpu"})
    assert not cpus.same_model(pub, cpus.publication_cpu(HASWELL))


def test_same_model_unknown_fields_false():
    assert not cpus.same_model({}, {})
    assert not cpus.same_model(cpus.host_cpu({}), cpus.host_cpu({}))
    a = cpus.host_cpu(host(physical=None, logical=None, usable=None))
    assert a["cores"] is None and not cpus.same_model(a, a)


def test_cores_counting():
    # affinity limits the run to fewer logical CPUs than there are physical cores
    assert cpus.host_cpu(host(physical=8, logical=16, usable=4))["cores"] == 4
    # a cgroup quota caps further
    c = cpus.host_cpu(host(physical=8, logical=16, usable=16, quota=2.5))
    assert c["cores"] == 2.5 and "cgroup CPU quota" in c["derivation"]
    # no 'core id' (a VM): every usable vCPU counted as a core, and said so
    c = cpus.host_cpu(host(physical=None, logical=4, usable=4))
    assert c["cores"] == 4
    assert "each of the 4 usable logical CPUs (vCPUs) counted as a core" in c["derivation"]


def test_unknown_uarch_falls_back_to_flags():
    c = cpus.host_cpu(host(vendor="GenuineIntel", family="6", model="183", flags=("avx2", "fma")))
    assert c["uarch"] is None and c["flops_per_cycle"] == 32 and c["verified"] is False
    assert c["peak_tflops"] > 0 and c["reason"] is None
    assert "microarchitecture not in cpus.yaml; assumed 2 FMA units of the widest ISA" in c["derivation"]
    c = cpus.host_cpu(host(vendor="GenuineIntel", family="6", model="207", flags=("avx2", "avx512f", "fma")))
    assert c["flops_per_cycle"] == 64 and c["verified"] is False
    c = cpus.host_cpu(host(vendor="GenuineIntel", family="6", model="183", flags=("sse2", "avx")))
    assert c["peak_tflops"] is None and "no 'fma' flag" in c["reason"]


@pytest.mark.parametrize("hostfp", [
    {}, None, {"cpu": None}, {"cpu": {}}, {"cpu": "garbage"},
    {"cpu": {"vendor": "AuthenticAMD"}},
    {"cpu": {"vendor": "AuthenticAMD", "family": "25", "model": "1"}},  # no cores, clock or flags
    {"cpu": {"vendor": "AuthenticAMD", "family": "x", "model": None, "mhz": ["?", None], "flags": None}},
    {"cpu": fp(mhz=None, model_name="AMD EPYC")},  # no clock at all
    {"cpu": fp(physical=None, logical=None, usable=None)},
])
def test_missing_fields_give_a_reason_not_an_exception(hostfp):
    c = cpus.host_cpu(hostfp)
    assert c["peak_tflops"] is None and c["derivation"] is None
    assert isinstance(c["reason"], str) and c["reason"]
    assert isinstance(c["label"], str) and c["label"]


def test_clock_from_model_name_when_no_mhz():
    name = "Intel(R) Xeon(R) Platinum 8124M CPU @ 3.00GHz"
    c = cpus.host_cpu(host(vendor="GenuineIntel", family="6", model="85", stepping="4", mhz=None,
                           flags=("avx512f", "fma"), model_name=name))
    assert c["clock_ghz"] == 3.0 and c["peak_tflops"] == pytest.approx(0.384)
    assert "nominal clock in the model name" in c["derivation"]


# -- labels --------------------------------------------------------------------------------------
@pytest.mark.parametrize("cpu, expected", [
    ({}, "CPU"),
    ({"vendor": "AuthenticAMD"}, "AMD"),
    ({"model_name": "AMD EPYC"}, "AMD EPYC"),
    ({"logical_cores": 4}, "CPU, 4 cores"),
    ({"vendor": "GenuineIntel", "family": "6", "model": "183"}, "Intel family 6 model 183"),
    ({"vendor": "AuthenticAMD", "family": "25", "model": "1"}, "AMD Zen 3 (family 25 model 1)"),
    (fp(), "AMD Zen 3 (family 25 model 1), 2 cores"),
    (fp(physical=1, logical=1, usable=1), "AMD Zen 3 (family 25 model 1), 1 core"),
])
def test_short_label(cpu, expected):
    assert cpus.short_label(cpu) == expected


def test_short_label_of_a_device_is_its_label_and_long_label_adds_detail():
    pub = cpus.publication_cpu(HASWELL)
    assert cpus.short_label(pub) == pub["label"]
    assert "672 GFLOP/s" in cpus.label(pub)
    long = cpus.label(fp())
    assert long.startswith("AMD Zen 3 (family 25 model 1), 2 cores") and "AMD EPYC" in long
    assert "stepping 1" in long and "2.445 GHz" in long
    assert cpus.label({}) == "CPU"
    assert "no peak" in cpus.label(cpus.host_cpu({}))


def test_sample_run_fingerprint():
    paths = sorted((Path(__file__).resolve().parents[2] / "docs" / "sample-run").glob("*/run.json"))
    assert paths, "docs/sample-run holds no run: the committed sample run moved or is gone"
    hostfp = json.load(open(paths[0]))["host_fingerprint"]
    c = cpus.host_cpu(hostfp)
    assert c["label"] == cpus.short_label(hostfp["cpu"])
    assert c["peak_tflops"] is None or c["peak_tflops"] > 0


# -- through devices.py --------------------------------------------------------------------------
def test_devices_use_cpus():
    from reprokit.analysis import devices
    pub = devices.publication_device({"environment": {"gpu": C5_XL}})
    assert pub["kind"] == "cpu" and pub["peak_tflops"] == pytest.approx(0.384)
    assert pub["peak_source"].startswith("2 cores x 3 GHz x 64 fp32 FLOP/cycle")
    machine = models.machine(host(vendor="GenuineIntel", family="6", model="85", stepping="4",
                                  flags=("avx512f", "fma"), mhz=(3000.0,)))
    meas = devices.measured_device(models.cell(device="cpu"), machine)
    assert meas["kind"] == "cpu" and meas["probe_tflops"] is None
    assert devices.same_model(pub, meas)
    unknown = devices.publication_device({"environment": {"gpu": "none (laptop)"}})
    assert unknown["peak_tflops"] is None and "not in cpus.yaml" in unknown["reason"]
