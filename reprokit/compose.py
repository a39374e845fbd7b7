"""Compose files generated from the suite data: compose/<suite>.yml (CPU) and, for suites whose
numbers were published on GPUs, compose/<suite>.gpu.yml.

    python -m reprokit.compose                 regenerate every compose file
    python -m reprokit.compose --check         exit 1 when a committed file differs from the data
    python -m reprokit.compose run-dir --suite S DIR [--quick] [--flavour cpu|gpu]
                                               write DIR/jobs/<stack>.docker.json and
                                               DIR/compose.env for one compose run, then:
    docker-compose --env-file DIR/compose.env -f compose/S.yml up

One service per stack of the suite: image = the stack's alias tag reprokit/<dir>:<flavour> (moved
by `reproduce.py build` to the newest build; the exact tag and image ID are in images/lock.json),
command = the harness on that stack's whole job, and the DockerRunner's container as
reprokit/runners/cell_container.py describes it (environment, mounts) with its security settings.
Per-cell timeouts are the DockerRunner's job: compose runs each stack's job in one container.
GPU services reserve GPUs by id (deploy.resources.reservations.devices.device_ids: 0..N-1 for
the most GPUs a cell of the stack needs), with NVIDIA_VISIBLE_DEVICES naming the same ids, and
mount the stack image's CUDA JIT cache volume (its name comes from compose.env, written by
`run-dir`, which also creates the volume and hands it to the run's user when an engine answers;
without one compose creates reprokit-jit-<dir>-gpu itself). CPU services set
NVIDIA_VISIBLE_DEVICES=void. File format 3.8, accepted by docker-compose 1.29 and `docker compose`.
The GPU files were never run: no GPU here.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from reprokit import images, results, suites
from reprokit.plan import Options, make_job, make_plan
from reprokit.runners import cell_container as spec
from reprokit.runners.docker import (
    BENCH_IN_CONTAINER,
    MEM_LIMIT,
    NOBODY,
    PIDS_LIMIT,
    RESULTS_IN_CONTAINER,
    TMPFS,
)

REPO = Path(__file__).resolve().parent.parent
COMPOSE = REPO / "compose"
FORMAT = "3.8"


def env_name(stack: str, prefix: str = "REPROKIT_IMAGE_ID_") -> str:
    return prefix + "".join(ch if ch.isalnum() else "_" for ch in stack).upper()


def jit_env_name(stack: str) -> str:
    """compose.env's variable naming the stack's CUDA JIT cache volume."""
    return env_name(stack, "REPROKIT_JIT_VOLUME_")


def jit_key(stack: str) -> str:
    """The compose file's own key of the stack's JIT cache volume."""
    return "jit-" + "".join(ch if ch.isalnum() else "-" for ch in stack).lower()


def suite_stacks(suite: suites.Suite) -> dict[str, int]:
    """Stacks of the suite in first-use order -> most GPUs any of its cells needs."""
    out: dict[str, int] = {}
    for c in suite.cells:
        out[c.stack] = max(out.get(c.stack, 0), c.needs_gpus)
    return out


def is_gpu_suite(suite: suites.Suite) -> bool:
    """A suite with published sources: every published number was measured on GPUs."""
    return bool(suite.sources)


def service(stack: str, spec_: dict, flavour: str, gpus: int) -> dict:
    run_dir = "${REPROKIT_RUN_DIR:-../results/compose}"
    ids = [str(i) for i in range(max(1, gpus))] if flavour == "gpu" else []
    env = spec.environment(spec_, flavour, ids, image_id="${%s:-}" % env_name(stack))
    jit = jit_key(stack) if flavour == "gpu" else None
    volumes = []
    for m in spec.mounts("../bench", run_dir, f"{run_dir}/cells", jit_volume=jit):
        volumes.append({"type": m.type, "source": m.source, "target": m.target,
                        "read_only": m.read_only})
    svc = {
        "image": images.alias_tag(spec_["image"], flavour),
        "command": ["python3", f"{BENCH_IN_CONTAINER}/harness.py",
                    f"{RESULTS_IN_CONTAINER}/jobs/{stack}.docker.json"],
        "working_dir": BENCH_IN_CONTAINER,
        "user": "${REPROKIT_USER:-%s}" % NOBODY,
        "network_mode": "none",
        "privileged": False,
        "read_only": True,
        "init": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "tmpfs": [f"{k}:{v}" for k, v in TMPFS.items()],
        "mem_limit": "${REPROKIT_DOCKER_MEMORY:-%s}" % MEM_LIMIT,
        "memswap_limit": "${REPROKIT_DOCKER_MEMORY:-%s}" % MEM_LIMIT,
        "pids_limit": PIDS_LIMIT,
        "environment": env,
        "volumes": volumes,
        "labels": {"org.reprokit.stack": stack},
    }
    if flavour == "gpu":  # never run: no GPU here
        svc["deploy"] = {"resources": {"reservations": {"devices": [
            {"driver": "nvidia", "device_ids": ids, "capabilities": ["gpu"]}]}}}
    return svc


def compose_doc(suite_name: str, flavour: str = "cpu") -> dict:
    suite = suites.load_suite(suite_name)
    specs = suites.load_stacks()
    stacks = suite_stacks(suite)
    doc: dict = {"version": FORMAT,
                 "services": {stack: service(stack, specs[stack], flavour, gpus)
                              for stack, gpus in stacks.items()}}
    if flavour == "gpu":
        doc["volumes"] = {jit_key(stack): {"name": "${%s:-%s}" % (
            jit_env_name(stack), spec.jit_volume_default(specs[stack]["image"], flavour))}
            for stack in stacks}
    return doc


def render(suite_name: str, flavour: str = "cpu") -> str:
    head = [f"# Generated by `python -m reprokit.compose` from reprokit/data/suites/{suite_name}.yaml"
            " and reprokit/data/stacks.yaml: do not edit.",
            f"# Prepare a run directory: python -m reprokit.compose run-dir --suite {suite_name}"
            f"{' --flavour gpu' if flavour == 'gpu' else ''} DIR",
            "# then: docker-compose --env-file DIR/compose.env -f "
            f"compose/{file_name(suite_name, flavour)} up"]
    if flavour == "gpu":
        head.append("# GPU variant: never run (no GPU on the machines this kit was developed on).")
    body = yaml.safe_dump(compose_doc(suite_name, flavour), sort_keys=False, width=100)
    return "\n".join(head) + "\n" + body


def file_name(suite_name: str, flavour: str) -> str:
    return f"{suite_name}.yml" if flavour == "cpu" else f"{suite_name}.gpu.yml"


def expected_files() -> dict[str, str]:
    """File name under compose/ -> content, for every suite."""
    out = {}
    for name in suites.suite_names():
        out[file_name(name, "cpu")] = render(name, "cpu")
        if is_gpu_suite(suites.load_suite(name)):
            out[file_name(name, "gpu")] = render(name, "gpu")
    return out


def write_all(folder: Path = COMPOSE) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in expected_files().items():
        p = folder / name
        if not p.exists() or p.read_text() != text:
            results.write_text_atomic(p, text)
            os.chmod(p, 0o644)
        paths.append(p)
    return paths


def stale_files(folder: Path = COMPOSE) -> list[str]:
    want = expected_files()
    have = {p.name for p in folder.glob("*.yml")}
    stale = [n for n, t in want.items() if not (folder / n).exists() or (folder / n).read_text() != t]
    return sorted(stale + [n for n in have - set(want)])


def prepare_run_dir(suite_name: str, run_dir: Path, flavour: str = "cpu", quick: bool = True,
                    client=None) -> Path:
    """Job files (out_dir /results/cells) and compose.env for a compose run of the suite."""
    run_dir = Path(run_dir).resolve()
    suite = suites.load_suite(suite_name)
    plan = make_plan(suite, Options(quick=quick, device="gpu" if flavour == "gpu" else "cpu"))
    kit = results.kit_info()
    cells = run_dir / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    for stack in plan.by_stack():
        job = make_job(plan, stack, run_dir.name, kit, f"{RESULTS_IN_CONTAINER}/cells")
        p = run_dir / "jobs" / f"{stack}.docker.json"
        results.write_json_atomic(p, job, "job")
        p.chmod(0o644)
    if os.getuid() == 0:
        user = NOBODY
        os.chown(cells, *(int(x) for x in NOBODY.split(":")))
    else:
        user = f"{os.getuid()}:{os.getgid()}"
    lines = [f"REPROKIT_RUN_DIR={run_dir}", f"REPROKIT_USER={user}"]
    if client is not None:
        from reprokit.runners.docker import DockerRunner

        specs = suites.load_stacks()
        runner = DockerRunner(device=plan.options.device, client=client, say=lambda *_: None)
        for stack in plan.by_stack():
            found = images.find_image(client, specs[stack]["image"], flavour)
            if found is not None:
                lines.append(f"{env_name(stack)}={found.image_id}")
                if flavour == "gpu":  # the runner's own volume, made the run user's
                    jit = runner.jit_volume(found, specs[stack]["image"], user)
                    lines.append(f"{jit_env_name(stack)}={jit['volume']}")
    env = run_dir / "compose.env"
    env.write_text("\n".join(lines) + "\n")
    return env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m reprokit.compose", description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only compare; exit 1 when stale")
    sub = p.add_subparsers(dest="cmd")
    rd = sub.add_parser("run-dir", help="prepare a run directory for docker-compose")
    rd.add_argument("--suite", required=True)
    rd.add_argument("dir", type=Path)
    rd.add_argument("--flavour", choices=images.FLAVOURS, default="cpu")
    rd.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    if args.cmd == "run-dir":
        client = None
        try:
            import docker
            client = docker.from_env(timeout=10)
            client.ping()
        except Exception:  # image IDs are optional in compose.env
            client = None
        env = prepare_run_dir(args.suite, args.dir, args.flavour, args.quick, client)
        print(f"docker-compose --env-file {env} -f {COMPOSE / file_name(args.suite, args.flavour)} up")
        return 0
    if args.check:
        stale = stale_files()
        for n in stale:
            print(f"compose/{n} is out of date; run `python -m reprokit.compose`", file=sys.stderr)
        return 1 if stale else 0
    for path in write_all():
        print(path.relative_to(REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
