"""Every NVML function and constant the kit uses exists in the installed nvidia-ml-py.

The NVML code paths run here only against fakes (no GPU on the development machines), and a fake
answers whatever it is asked. This test reads the kit's own source instead: every `<x>.nvml...` /
`<x>.NVML_...` attribute and every quoted NVML function name must be an attribute of the installed
`pynvml`, so a misspelt, renamed or removed call fails here, before a GPU machine finds it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pynvml

from reprokit.probes import gpu_state

REPO = Path(__file__).resolve().parents[2]
ATTRIBUTE = re.compile(r"\.\s*(nvml[A-Z]\w*|NVML_[A-Z0-9_]+)\b")
QUOTED = re.compile(r"[\"'](nvml(?:Device|System|Unit|Event|Gpm|Vgpu|Init|Shutdown)\w*)[\"']")
# names the kit tries in order, using the first the binding has (the newer name first)
ALTERNATIVES = [tuple(gpu_state.REASON_FUNCTIONS)]


def used_names(text: str) -> set[str]:
    return set(ATTRIBUTE.findall(text)) | set(QUOTED.findall(text))


def missing(names: set[str], module=pynvml) -> list[str]:
    out = []
    alternatives = {n: alt for alt in ALTERNATIVES for n in alt}
    for name in sorted(names):
        if name in alternatives:
            if not any(hasattr(module, n) for n in alternatives[name]):
                out.append(" or ".join(alternatives[name]))
        elif not hasattr(module, name):
            out.append(name)
    return sorted(set(out))


def kit_sources() -> list[Path]:
    return sorted((REPO / "reprokit").rglob("*.py")) + sorted((REPO / "bench").rglob("*.py"))


def test_every_nvml_name_the_kit_uses_exists_in_the_installed_binding():
    found: dict[str, set[str]] = {}
    for path in kit_sources():
        for name in used_names(path.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(name, set()).add(str(path.relative_to(REPO)))
    # the scan sees the calls it must see (else it would pass by finding nothing)
    assert {"nvmlInit", "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCudaComputeCapability",
            "NVML_CLOCK_SM"} <= set(found)
    assert len(found) >= 30
    bad = missing(set(found))
    assert bad == [], {b: sorted(found.get(b.split(" or ")[0], ())) for b in bad}


def test_the_check_fails_on_a_misspelt_or_removed_function():
    snippet = ('h = nv.nvmlDeviceGetHandleByIndex(0)\nnv.nvmlDeviceGetUUIDD(h)\n'
               'getattr(nv, "nvmlDeviceGetPowerUsageMw")\nnv.NVML_CLOCK_SMX\n')
    assert missing(used_names(snippet)) == ["NVML_CLOCK_SMX", "nvmlDeviceGetPowerUsageMw",
                                            "nvmlDeviceGetUUIDD"]

    class OldBinding:  # a binding with neither name of the clock event reasons function
        nvmlInit = None
    assert missing({"nvmlDeviceGetCurrentClocksThrottleReasons"}, OldBinding) == [
        " or ".join(gpu_state.REASON_FUNCTIONS)]
