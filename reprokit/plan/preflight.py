"""Preflight: decide, per cell and before anything is launched, whether it can run on this host.

Pure functions over data: the compatibility tables (reprokit/plan/compat.py reads them) and the host
described as data, so every GPU rule is testable on a machine without a GPU. What a fingerprint cannot
say (a Docker engine, built images, the probe cache, the local environments) is probed by
reprokit/runners/host_preflight.py, which then calls `cell_verdicts` here. Exercised on a real GPU once:
the local runner's rules on one H100 (docs/gpu-run); the image rules never.

A verdict is::

    {"runnable": bool, "status": "ok" | "jit" | "probe" | "blocked",
     "reasons": ["one line", ...],            # every failed check and every warning
     "checks": [{"name": str, "ok": bool, "detail": str}, ...],
     "env": {"CUDA_CACHE_PATH": ..., ...}}      # variables the runner should set (JIT cache), or {}

`ok` runs natively; `jit` runs, but some kernels exist only as PTX, so the first start JIT-compiles
them (up to ~30 minutes), the CUDA cache must be persisted and the JIT is kept out of the timings;
`probe` ("needs a probe") is not launched: its kernels would reach this GPU only through PTX JIT,
and whether that PTX exists and works cannot be known from data, so a capability probe of the
image on this host decides (suite gpu-smoke; reprokit/plan/probe_cache.py keeps its outcome per host
and image); `blocked` must not be launched.

The probe gate applies to the Docker runner: a cached ok probe of the
same host GPU (model, compute capability, driver) and image ID makes a `jit` stack runnable
("probed <date>"), a cached failure blocks it with the probe's error, and no entry is `probe`. A
cached failure blocks a native stack too. The probe cells themselves are never gated: where the
stack needs PTX JIT they run with CUDA_FORCE_PTX_JIT=1 (`env`). The Slurm runner keeps the `jit`
verdict: its runs do not record probes yet. None of this ran on a GPU.

The local runner runs no image: its GPU cells are judged on the environment that would run them
(`environments`: each stack's local environment or --python interpreter, probed by running it:
reprokit/plan/env_rules.py, probed by runners/env_preflight.py): first whether it can use a GPU at all (check
`environment`), then the driver against its CUDA build and the GPU against its compiled
architecture list, by the same rules as an image's binaries. Its fallback chains walk environments.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reprokit.plan.compat import load_compat, requirement_holds, stack_from_compat, version_tuple

# How an image directory and flavour map to a local image tag (the build command's convention).
IMAGE_TAG = "reprokit/{image}:{flavour}"

RUNNERS = ("local", "docker", "slurm")
_RANK = {"ok": 0, "jit": 1, "probe": 2, "blocked": 3}
IMAGE_RUNNERS = ("docker",)  # the probe cache is written by Docker runs only
PROBE_COMMAND = "reproduce.py run --suite gpu-smoke --runner docker"


def runs_images(runner: str, host: Mapping[str, Any]) -> bool:
    """Whether `runner` runs the stacks' images here, so the GPU probe cache gates them: the Docker
    runner, or the Slurm runner with a container launcher (host["launcher"], host_from_fingerprint)."""
    from reprokit.plan.probe_cache import CONTAINER_LAUNCHERS

    return runner in IMAGE_RUNNERS or (runner == "slurm" and host.get("launcher") in CONTAINER_LAUNCHERS)


def probe_command(runner: str, host: Mapping[str, Any]) -> str:
    """The command that records a probe for what this runner runs."""
    if runner == "slurm":
        return (f"reproduce.py run --suite gpu-smoke --runner slurm --slurm-launcher {host.get('launcher')} "
                "--device gpu")
    return PROBE_COMMAND


# ---------------------------------------------------------------------------------------- host


def parse_cc(value: Any) -> tuple[int, int] | None:
    """Compute capability from "9.0", (9, 0), [9, 0] or 9.0; None if absent or unreadable."""
    if value is None:
        return None
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return int(value[0]), int(value[1])
    text = str(value).strip()
    major, _, minor = text.partition(".")
    if not major.isdigit() or (minor and not minor.isdigit()):
        return None
    return int(major), int(minor or 0)


def parse_cuda_driver_version(value: Any) -> tuple[int, int] | None:
    """The driver's CUDA version from "12.4", 12040 (cuDriverGetVersion) or (12, 4)."""
    if value is None:
        return None
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        number = int(value)
        if number < 1000:
            return number, 0
        return number // 1000, (number % 1000) // 10
    return parse_cc(value)


def host_from_fingerprint(
    fp: Mapping[str, Any],
    *,
    engine_present: bool | None = None,
    images: Mapping[str, Any] | None = None,
    launcher: str | None = None,
) -> dict[str, Any]:
    """Turn a host fingerprint into the host description `check_cell` takes.

    Reads fp["nvidia"]["available"] and fp["gpus"] (each with name, compute_capability,
    driver_version, cuda_driver_version). Engine and image state are not part of the fingerprint:
    the caller passes what it probed. `images` maps an image tag (IMAGE_TAG) or directory name to
    "present" | "buildable" | "missing" or {"present": bool, "buildable": bool, "image_id": str}
    (the image ID is what the probe cache is keyed by). `launcher`: the Slurm launcher that runs the
    cells (a container launcher's images are gated by the probe cache as the Docker runner's are).
    """
    nvidia = fp.get("nvidia") or {}
    available = bool(nvidia.get("available"))
    gpus = []
    for index, gpu in enumerate((fp.get("gpus") or []) if available else []):
        gpus.append(
            {
                "index": gpu.get("index", index),
                "name": gpu.get("name") or "unknown GPU",
                "compute_capability": gpu.get("compute_capability"),
                "driver_version": gpu.get("driver_version") or nvidia.get("driver_version"),
                "cuda_driver_version": gpu.get("cuda_driver_version") or nvidia.get("cuda_driver_version"),
            }
        )
        if mig_enabled(gpu) is not None:  # the MIG blocker's condition (None: not recorded)
            gpus[-1]["mig_enabled"] = mig_enabled(gpu)
    return {
        "host_id": fp.get("host_id"),
        "driver_glibc_needed": (nvidia.get("driver_libraries") or {}).get("glibc_needed"),
        "engine_present": engine_present,
        "images": dict(images or {}),
        "launcher": launcher,
        "nvidia_available": available,
        "gpus": gpus,
    }


def mig_enabled(gpu: Mapping[str, Any]) -> bool | None:
    """A fingerprint GPU's MIG mode: its mig_mode.current; False when NVML said NotSupported (a GPU
    without MIG); None when not known (no such record)."""
    mode = gpu.get("mig_mode")
    if isinstance(mode, Mapping) and "current" in mode:
        return bool(mode["current"])
    if "NotSupported" in str((gpu.get("errors") or {}).get("mig_mode") or ""):
        return False
    return None


# ----------------------------------------------------------------------------------- helpers


def _prefix_match(table: Iterable[Mapping[str, Any]], cuda: str) -> Mapping[str, Any] | None:
    """The table row whose `cuda` components are the longest prefix of `cuda`'s components."""
    wanted = version_tuple(cuda)
    best = None
    for row in table:
        key = version_tuple(row["cuda"])
        if wanted[: len(key)] == key and (best is None or len(key) > len(version_tuple(best["cuda"]))):
            best = row
    return best


def _cc_text(cc: tuple[int, int]) -> str:
    return f"{cc[0]}.{cc[1]}"


def _sm(cc: tuple[int, int]) -> str:
    return f"sm_{cc[0]}{cc[1]}"


def coverage_mode(binary: Mapping[str, Any], cc: tuple[int, int]) -> str:
    """ "native", "jit", "none" or "unknown" for one binary on a GPU of capability `cc`."""
    sass, ptx = binary.get("sass"), binary.get("ptx")
    if sass is not None:
        for arch in sass:
            major, minor = parse_cc(arch)
            if major == cc[0] and minor <= cc[1]:
                return "native"
    if ptx is not None and any(parse_cc(arch) <= cc for arch in ptx):
        return "jit"
    if sass is None or ptx is None:
        return "unknown"
    return "none"


def _image_state(host: Mapping[str, Any], image: str, flavour: str) -> str:
    images = host.get("images") or {}
    state = images.get(IMAGE_TAG.format(image=image, flavour=flavour), images.get(image))
    if isinstance(state, Mapping):
        if state.get("present"):
            return "present"
        return "buildable" if state.get("buildable") else "missing"
    if state in ("present", "buildable", "missing"):
        return state
    return "unknown"


def _image_id(host: Mapping[str, Any], image: str, flavour: str) -> str | None:
    images = host.get("images") or {}
    state = images.get(IMAGE_TAG.format(image=image, flavour=flavour), images.get(image))
    return state.get("image_id") if isinstance(state, Mapping) else None


# ---------------------------------------------------------------------------------- verdicts


class _Verdict:
    def __init__(self) -> None:
        self.status = "ok"
        self.reasons: list[str] = []
        self.checks: list[dict[str, Any]] = []
        self.env: dict[str, str] = {}

    def check(
        self, name: str, ok: bool, detail: str, *, status: str | None = None, reason: str | None = None
    ) -> None:
        self.checks.append({"name": name, "ok": ok, "detail": detail})
        if status is None:
            status = "ok" if ok else "blocked"
        if _RANK[status] > _RANK[self.status]:
            self.status = status
        if reason is not None:
            self.reasons.append(reason)
        elif not ok:
            self.reasons.append(detail)

    def result(self) -> dict[str, Any]:
        return {
            "runnable": self.status not in ("blocked", "probe"),
            "status": self.status,
            "reasons": list(dict.fromkeys(self.reasons)),
            "checks": self.checks,
            "env": dict(self.env) if self.status == "jit" else {},
        }


def check_cell(
    stack: Mapping[str, Any],
    host: Mapping[str, Any],
    gpus_needed: int = 0,
    *,
    runner: str = "docker",
    compat: Mapping[str, Any] | None = None,
    probes: list[dict] | None = None,
    probe_cell: bool = False,
    env_mode: bool = False,
) -> dict[str, Any]:
    """Verdict for one cell of `stack` needing `gpus_needed` GPUs on `host` under `runner`.

    `probes`: the entries of the GPU probe cache (reprokit/plan/probe_cache.py; None or [] = none
    recorded). `probe_cell`: the cell is a gpu-smoke probe, which is never gated by the cache.
    `env_mode`: `stack` describes a local environment (env_rules.stack_from_environment), whose
    own probe says first whether it can use a GPU at all."""
    if runner not in RUNNERS:
        raise ValueError(f"unknown runner {runner!r}; expected one of {', '.join(RUNNERS)}")
    if compat is None:
        compat = load_compat()
    needed = max(int(gpus_needed), 1 if stack.get("needs_gpu") else 0)
    flavour = "gpu" if needed else "cpu"
    v = _Verdict()

    if runner == "docker":
        engine = host.get("engine_present")
        v.check(
            "engine",
            engine is True,
            "docker engine reachable"
            if engine
            else (
                "docker engine not reachable: install and start dockerd"
                if engine is False
                else "docker engine state not probed"
            ),
        )
        state = _image_state(host, stack["image"], flavour)
        tag = IMAGE_TAG.format(image=stack["image"], flavour=flavour)
        detail = {
            "present": f"image {tag} present",
            "buildable": f"image {tag} not present; buildable from images/{stack['image']}",
            "missing": f"image {tag} neither present nor buildable",
            "unknown": f"image {tag}: state not probed",
        }[state]
        v.check("image", state in ("present", "buildable"), detail)

    if needed and env_mode:
        from reprokit.plan import env_rules

        if env_rules.check_environment(v, stack["name"], stack.get("environment")):
            _check_gpus(v, stack, host, needed, compat, runner, probes or [], probe_cell)
        else:  # the host's GPUs are said whatever the environment
            _check_gpu_count(v, host, needed)
    elif needed:
        _check_gpus(v, stack, host, needed, compat, runner, probes or [], probe_cell)
    return v.result()


def _check_gpus(
    v: _Verdict, stack: Mapping[str, Any], host: Mapping[str, Any], needed: int, compat: Mapping[str, Any],
    runner: str = "docker", probes: list[dict] | None = None, probe_cell: bool = False,
) -> None:
    if not stack.get("gpu"):
        v.check(
            "gpu_flavour", False, f"stack {stack['name']} has no GPU flavour; the cell needs {needed} GPU(s)"
        )
        return
    gpus = _check_gpu_count(v, host, needed)
    if len(gpus) < needed:
        return
    used = gpus[:needed]
    for gpu in used:
        _check_driver(v, stack, gpu, compat)
        if runner in (compat.get("container_requirement") or {}).get("runners", ()):
            _check_image_requirement(v, stack, gpu, compat)
    jit_on = {}
    for gpu in used:
        jit_on[id(gpu)] = _check_arch(v, stack, gpu, compat)
    for gpu in used:
        _check_blockers(v, stack, gpu)
    if runs_images(runner, host):
        _check_glibc(v, stack, host)
        for gpu in used:
            _check_probe(v, stack, host, gpu, bool(jit_on[id(gpu)]), probes or [], probe_cell,
                         probe_command(runner, host))


def _check_glibc(v: _Verdict, stack: Mapping[str, Any], host: Mapping[str, Any]) -> None:
    """The host driver's libraries, which the container toolkit injects into the image, need a C
    library at least as new as the newest GLIBC_ version they require (host fingerprint
    nvidia.driver_libraries, read from their .gnu.version_r); an older image's glibc cannot load them,
    and the framework then says only that CUDA is unavailable (nvidia-container-toolkit#543)."""
    need, have = host.get("driver_glibc_needed"), stack.get("image_glibc")
    if not need or not have:
        return
    image = f"images/{stack.get('image')}"
    if version_tuple(have) >= version_tuple(need):
        v.check("glibc", True, f"{image} has glibc {have}; the host's driver libraries need >= {need}")
        return
    v.check("glibc", True,
            f"{image} has glibc {have}, below {need} that the host's driver libraries need: the injected "
            "libcuda will not load in it (CUDA unavailable) unless the image's own CUDA compat libraries "
            "are used instead",
            reason=f"warning: {image}'s glibc {have} is older than the {need} the host's driver libraries "
                   "need: expect CUDA to be unavailable in it; use a newer image or a host driver built "
                   "for older glibc")


def _check_gpu_count(v: _Verdict, host: Mapping[str, Any], needed: int) -> list:
    """The `gpu_count` check; returns the host's GPUs."""
    gpus = list(host.get("gpus") or []) if host.get("nvidia_available", True) else []
    v.check(
        "gpu_count",
        len(gpus) >= needed,
        f"cell needs {needed} GPU(s), host has {len(gpus)}"
        + ("" if gpus or host.get("nvidia_available") else " (no NVIDIA driver/NVML)"),
    )
    return gpus


def _gpu_label(gpu: Mapping[str, Any]) -> str:
    return f"GPU {gpu.get('index', '?')} ({gpu.get('name', 'unknown')})"


def _check_driver(
    v: _Verdict, stack: Mapping[str, Any], gpu: Mapping[str, Any], compat: Mapping[str, Any]
) -> None:
    cuda = stack.get("cuda")
    if not cuda:
        return
    label = _gpu_label(gpu)
    row = _prefix_match(compat["cuda_drivers"], cuda)
    driver = gpu.get("driver_version")
    if row is None:
        v.check(
            "driver",
            True,
            f"{label}: no minimum driver recorded for CUDA {cuda}",
            status="ok",
            reason=f"warning: no minimum driver recorded for CUDA {cuda}; driver not checked",
        )
    elif driver is None:
        v.check(
            "driver",
            True,
            f"{label}: driver version unknown; CUDA {cuda} needs >= {row['min_driver']}",
            reason=f"warning: {label} driver version unknown; CUDA {cuda} needs >= {row['min_driver']}",
        )
    else:
        ok = version_tuple(driver) >= version_tuple(row["min_driver"])
        fwd = None if ok else forward_compatibility(stack, gpu, compat)
        v.check(
            "driver",
            ok or fwd["ok"],
            f"{label}: driver {driver} {'>=' if ok else '<'} {row['min_driver']} needed by CUDA {cuda}"
            + ("" if ok else " (forward compatibility)" if fwd["ok"]
               else ": driver too old, upgrade it or use an older stack"),
            reason=f"warning: {label}: driver {driver} runs CUDA {cuda} through forward compatibility"
            if fwd and fwd["ok"] else None,
        )
    driver_cuda = parse_cuda_driver_version(gpu.get("cuda_driver_version"))
    wanted = version_tuple(cuda)[:2]
    if driver_cuda is not None and driver_cuda < wanted:
        have = f"{driver_cuda[0]}.{driver_cuda[1]}"
        same_major_mvc = driver_cuda[0] == wanted[0] and any(  # compat.yaml cuda_drivers
            row.get("minor_version_compatibility") and row["cuda"] == str(wanted[0])
            for row in compat["cuda_drivers"])
        if same_major_mvc:
            v.check("driver_cuda", True,
                    f"{label}: driver supports CUDA {have} < {wanted[0]}.{wanted[1]} (minor-version "
                    "compatibility: limited feature set, no JIT of newer PTX)",
                    reason=f"warning: {label} runs CUDA {cuda} under minor-version compatibility")
            return
        fwd = forward_compatibility(stack, gpu, compat)
        v.check("driver_cuda", fwd["ok"],
                f"{label}: driver supports CUDA {have} < {wanted[0]}.{wanted[1]}: {fwd['text']}",
                reason=f"warning: {label} runs CUDA {cuda} through forward compatibility ({fwd['text']})"
                if fwd["ok"] else None)


def data_center_gpu(gpu: Mapping[str, Any], compat: Mapping[str, Any]) -> bool:
    """Whether a GPU is a data-center part, by its NVML name (compat.yaml forward_compatibility)."""
    names = (compat.get("forward_compatibility") or {}).get("gpu_names") or []
    name = str(gpu.get("name") or "")
    return any(re.search(rf"(^|[\s-]){re.escape(n)}($|[\s-])", name) for n in names)


def forward_compatibility(stack: Mapping[str, Any], gpu: Mapping[str, Any],
                          compat: Mapping[str, Any]) -> dict[str, Any]:
    """Whether a stack newer than the driver's CUDA major runs through forward compatibility on this
    GPU (compat.yaml `forward_compatibility`): {"ok", "text"}."""
    major = version_tuple(stack.get("cuda") or "0")[0]
    package = stack.get("cuda_compat")
    if not data_center_gpu(gpu, compat):
        return {"ok": False, "text": "driver too old for this stack; CUDA forward compatibility (a "
                "newer CUDA on an older driver) is for data-center GPUs only: upgrade the driver"}
    if not package:
        return {"ok": False, "text": f"driver too old for this stack; on this data-center GPU CUDA "
                f"{major} could run through forward compatibility, but images/{stack.get('image')} does "
                f"not install a cuda-compat-{major}-x package: upgrade the driver, or add the package "
                "to the image (compat.yaml forward_compatibility)"}
    return {"ok": True, "text": f"data-center GPU and images/{stack.get('image')} installs {package} "
            "(whether this driver branch is one the package supports is not checked here)"}


def _check_image_requirement(v: _Verdict, stack: Mapping[str, Any], gpu: Mapping[str, Any],
                             compat: Mapping[str, Any]) -> None:
    """The container toolkit's gate: the image's NVIDIA_REQUIRE_CUDA against this GPU's driver."""
    text = stack.get("require_cuda")
    if not text:
        return
    label = _gpu_label(gpu)
    driver_cuda = parse_cuda_driver_version(gpu.get("cuda_driver_version"))
    driver = version_tuple(gpu["driver_version"]) if gpu.get("driver_version") else None
    holds = requirement_holds(text, driver_cuda, driver)
    var = (compat.get("container_requirement") or {}).get("variable", "NVIDIA_REQUIRE_CUDA")
    where = f"images/{stack.get('image')}/recipe.yaml"
    have = (f"driver {gpu.get('driver_version') or 'unknown'}, CUDA "
            f"{'.'.join(map(str, driver_cuda)) if driver_cuda else 'unknown'}")
    if holds is False:
        v.check("image_requirement", False,
                f"{label}: the image requires {var}={text} ({where}) and this {have} satisfies none of "
                "it: the NVIDIA container toolkit refuses to start the container; upgrade the driver")
    elif holds is None:
        v.check("image_requirement", True,
                f"{label}: the image's {var}={text} ({where}) could not be checked against {have}",
                reason=f"warning: {label}: the image's {var}={text} could not be checked against {have}")
    else:
        v.check("image_requirement", True, f"{label}: {have} satisfies the image's {var}={text}")


def _check_arch(
    v: _Verdict, stack: Mapping[str, Any], gpu: Mapping[str, Any], compat: Mapping[str, Any]
) -> list[str]:
    """Architecture coverage of the stack's binaries on `gpu`; returns the critical binaries that
    would reach it only through PTX JIT."""
    label = _gpu_label(gpu)
    cc = parse_cc(gpu.get("compute_capability"))
    if cc is None:
        v.check(
            "arch",
            True,
            f"{label}: compute capability unknown; architecture coverage not checked",
            reason=f"warning: {label} compute capability unknown; architecture coverage not checked",
        )
        return []
    toolkit = _prefix_match(compat["toolkit_max_sass"], stack["cuda"]) if stack.get("cuda") else None
    native_possible = toolkit is None or parse_cc(toolkit["max_sass"]) >= cc
    jit_binaries = []
    for binary in stack["binaries"]:
        mode = coverage_mode(binary, cc)
        name = f"arch:{binary['id']}"
        tag = f"[{binary['evidence']}]"
        if mode == "native":
            v.check(name, True, f"{label}: native SASS for {_sm(cc)} {tag}")
        elif mode == "jit":
            best = max(parse_cc(a) for a in binary["ptx"] if parse_cc(a) <= cc)
            critical = binary.get("critical", True)
            v.check(
                name,
                True,
                f"{label}: no SASS for {_sm(cc)}, PTX compute_{best[0]}{best[1]} will be JIT-compiled {tag}",
                status="jit" if critical else "ok",
            )
            if critical:
                jit_binaries.append(binary["id"])
        elif mode == "unknown":
            if native_possible:
                v.check(
                    name,
                    True,
                    f"{label}: coverage of {binary['id']} unknown {tag}; not checked",
                    reason=f"warning: architecture coverage of {binary['id']} is unverified {tag}",
                )
            else:
                v.check(
                    name,
                    True,
                    f"{label}: coverage of {binary['id']} unknown {tag}; CUDA {stack['cuda']} emits SASS "
                    f"only up to sm_{toolkit['max_sass'].replace('.', '')}, so at best PTX JIT",
                    status="jit",
                    reason=f"warning: {binary['id']} has no possible SASS for {_sm(cc)} and its PTX is "
                    f"unverified {tag}: it may fail with 'no kernel image is available'",
                )
                jit_binaries.append(binary["id"])
        elif binary.get("critical", True):
            v.check(
                name,
                False,
                f"{label}: {binary['id']} has neither SASS nor PTX for {_sm(cc)} {tag}: "
                "no kernel image for this GPU, do not launch",
            )
        else:
            v.check(
                name,
                True,
                f"{label}: part of {binary['id']} has no image for {_sm(cc)} {tag}",
                reason=f"warning: {binary['description']} have no image for {_sm(cc)}; "
                "algorithms that resolve to them fail",
            )
    if jit_binaries:
        jit = compat["jit"]
        v.env.update(jit["cache_env"])
        v.reasons.append(
            f"warning: expect PTX JIT on {label} ({_sm(cc)}) for {', '.join(jit_binaries)}: the first start "
            f"can take ~{jit['first_start_minutes']:g} minutes; persist the CUDA cache "
            f"(CUDA_CACHE_PATH={jit['cache_env']['CUDA_CACHE_PATH']}, "
            f"CUDA_CACHE_MAXSIZE={jit['cache_env']['CUDA_CACHE_MAXSIZE']}); JIT time is excluded from timings"
        )
    return jit_binaries


def _check_probe(
    v: _Verdict, stack: Mapping[str, Any], host: Mapping[str, Any], gpu: Mapping[str, Any], jit: bool,
    probes: list[dict], probe_cell: bool, command: str = PROBE_COMMAND,
) -> None:
    """The probe gate: what the GPU probe cache says about this stack's image on this host GPU."""
    from reprokit.plan import probe_cache

    label = _gpu_label(gpu)
    tag = IMAGE_TAG.format(image=stack["image"], flavour="gpu")
    if v.status == "blocked":  # decided without a probe (no kernel image, driver, blocker, ...)
        return
    if probe_cell:
        if jit:
            v.env["CUDA_FORCE_PTX_JIT"] = "1"
            v.check("probe", True, f"{label}: this cell is the capability probe of {tag}; it runs with "
                    "CUDA_FORCE_PTX_JIT=1, so every kernel it touches comes from PTX", status="jit")
        return
    image_id = _image_id(host, stack["image"], "gpu")
    entry = probe_cache.lookup(probes, host.get("host_id"), gpu, stack["name"], image_id)
    where = f"{tag} on {label}, driver {gpu.get('driver_version') or 'unknown'}"
    if entry is not None and entry["status"] == "failed":
        v.check("probe", False, f"{label}: the capability probe of {tag} failed on {entry['probed'][:10]}: "
                f"{entry['error']}; not runnable on this GPU (a new driver or image needs a new probe: "
                f"`{command}`)")
    elif entry is not None:
        forced = " under CUDA_FORCE_PTX_JIT=1" if entry.get("cuda_force_ptx_jit") else ""
        v.check("probe", True, f"{label}: probed {entry['probed'][:10]}: GEMM and LSTM step of {tag} "
                f"ran and matched the CPU reference{forced}",
                reason=f"probed {entry['probed'][:10]} ({where}): ok{forced}")
    elif jit:
        why = "" if image_id else " (its image ID is not known here, so no probe result can apply)"
        v.check("probe", True, f"{label}: needs a probe: its kernels reach this GPU only through PTX "
                f"JIT and no probe of {tag} is recorded for this host GPU{why}", status="probe",
                reason=f"needs a probe: {stack['name']} reaches {label} only through PTX JIT and no "
                f"capability probe of {tag} is recorded for it{why}; run `{command}`")


def _blocker_applies(when: Mapping[str, Any], gpu: Mapping[str, Any]) -> bool | None:
    """True/False, or None when the GPU description lacks what the condition needs."""
    results = []
    if "cc_at_least" in when:
        cc = parse_cc(gpu.get("compute_capability"))
        results.append(None if cc is None else cc >= parse_cc(when["cc_at_least"]))
    if "driver_cuda_major_above" in when:
        driver_cuda = parse_cuda_driver_version(gpu.get("cuda_driver_version"))
        results.append(None if driver_cuda is None else driver_cuda[0] > when["driver_cuda_major_above"])
    if "mig_enabled" in when:  # the GPU's MIG mode (host_from_fingerprint; None: not recorded)
        mig = gpu.get("mig_enabled")
        results.append(None if mig is None else mig == when["mig_enabled"])
    if any(r is False for r in results):
        return False
    return None if any(r is None for r in results) else True


def _check_blockers(v: _Verdict, stack: Mapping[str, Any], gpu: Mapping[str, Any]) -> None:
    label = _gpu_label(gpu)
    for blocker in stack.get("blockers", []):
        name = f"blocker:{blocker['id']}"
        applies = _blocker_applies(blocker["when"], gpu)
        tag = f"[{blocker['evidence']}]"
        if applies is False:
            v.check(name, True, f"{label}: does not apply")
        elif blocker["effect"] == "warn":
            v.check(
                name,
                True,
                f"{label}: {blocker['summary']} {tag}",
                reason=f"warning: {blocker['summary']} {tag}; {blocker['workaround']}",
            )
        elif blocker.get("mitigated_in_image"):
            v.check(
                name,
                True,
                f"{label}: {blocker['summary']}; mitigated: {blocker.get('mitigation', '')}",
                reason=f"warning: known blocker {blocker['id']} mitigated in the image (unverified on a GPU)",
            )
        elif applies is None:
            v.check(
                name,
                True,
                f"{label}: could not evaluate ({blocker['summary']})",
                reason=f"warning: known blocker {blocker['id']} not evaluated: GPU description incomplete",
            )
        else:
            v.check(
                name,
                False,
                f"{label}: known blocker {blocker['id']}: {blocker['summary']} {tag}; "
                f"workaround: {blocker['workaround']}",
            )


def check_stack_cell(
    stack_name: str,
    host: Mapping[str, Any],
    gpus_needed: int = 0,
    *,
    runner: str = "docker",
    compat: Mapping[str, Any] | None = None,
    probes: list[dict] | None = None,
    probe_cell: bool = False,
    environments: Callable[[str], Mapping[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """`check_cell` for a stack named in compat.yaml. With `environments` (stack -> its local
    environment's probe record: the local runner) a GPU cell is judged on the environment that
    would run it, not on the stack's image (reprokit/plan/env_rules.py)."""
    if compat is None:
        compat = load_compat()
    needs = max(int(gpus_needed), 0) > 0
    if environments is not None and needs:
        from reprokit.plan import env_rules

        stack = env_rules.stack_from_environment(stack_name, environments(stack_name), compat)
        return check_cell(stack, host, gpus_needed, runner=runner, compat=compat, probes=probes,
                          probe_cell=probe_cell, env_mode=True)
    return check_cell(stack_from_compat(stack_name, compat), host, gpus_needed, runner=runner,
                      compat=compat, probes=probes, probe_cell=probe_cell)


def summary(verdict: Mapping[str, Any]) -> str:
    """One phrase for a verdict: "runnable", "runnable (PTX JIT)", "runnable (probed <date>)",
    "needs a probe", "not runnable" or "not implemented"."""
    status = verdict.get("status")
    if status == "not_implemented":
        return "not implemented"
    if status == "blocked":
        return "not runnable"
    if status == "probe":
        return "needs a probe"
    probed = [c["detail"].split(": ")[1] for c in verdict.get("checks", [])
              if c["name"] == "probe" and c["ok"] and ": probed " in c["detail"]]
    if probed:
        return f"runnable ({sorted(probed)[0]})"
    return "runnable (PTX JIT)" if status == "jit" else "runnable"


def cell_verdicts(cells: Iterable[Any], host: Mapping[str, Any], runner: str,
                  compat: Mapping[str, Any] | None = None, probes: list[dict] | None = None,
                  cache_warning: str | None = None,
                  stacks: Mapping[str, Any] | None = None,
                  device: str = "cpu",
                  environments: Callable[[str], Mapping[str, Any] | None] | None = None,
                  ) -> dict[str, dict[str, Any]]:
    """Verdict per cell id on a described host (`suite_verdicts` without the engine probing).

    On a GPU run (`device` "gpu") a cell needs the GPUs it uses there (`Cell.gpus_on`: one for a
    number published on one GPU, none for one published on a CPU); a cell published on several GPUs
    needs them on any run. A GPU cell whose own stack is not runnable here walks its stack's
    fallback chain (reprokit/plan/fallback.py): its verdict is then the first accepted link's, with
    `chain`."""
    from reprokit.plan import fallback, probe_cache

    compat = compat if compat is not None else load_compat()
    if stacks is None:
        from reprokit.catalog.suites import load_stacks

        stacks = load_stacks()
    out: dict[str, dict[str, Any]] = {}
    for cell in cells:
        if not cell.implemented:
            out[cell.id] = {"runnable": False, "status": "not_implemented",
                            "reasons": [cell.reason or "workload not implemented"], "checks": []}
            continue
        is_probe = probe_cache.is_probe(cell.workload)
        needed = max(cell.needs_gpus, cell.gpus_on(device))

        def check(stack: str, needed=needed, is_probe=is_probe) -> dict[str, Any]:
            return check_stack_cell(stack, host, needed, runner=runner, compat=compat,
                                    probes=probes, probe_cell=is_probe, environments=environments)

        out[cell.id] = fallback.resolve(
            cell.stack, check(cell.stack), check, host=host, needs_gpu=needed > 0,
            runner=runner, compat=compat, stacks=stacks, probe_cell=is_probe,
            environments=environments, describe=summary)
        links = (out[cell.id].get("chain") or {}).get("links") or [out[cell.id]]
        if cache_warning and any(c["name"] == "probe" for x in links for c in x.get("checks", [])):
            out[cell.id]["reasons"].append(cache_warning)  # a link it walked past needed the cache
    return out
