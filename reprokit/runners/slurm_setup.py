"""`run --runner slurm`: its options, its checks and its runner, set up beside the other runners'
choice (reprokit/runners/select.py). The runner's device is the probe job's node's, never the
driver host's (a login node often has no GPU): a GPU run is planned on that node's fingerprint,
which run.json then keeps as its host_fingerprint."""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path

from reprokit import checks, results
from reprokit.errors import UserError


def slurm_arguments(p) -> None:
    from reprokit.runners.launchers import NAMES
    from reprokit.runners.slurm import gpu_feature_option, slurm_mem

    g = p.add_argument_group("--runner slurm (reprokit/runners/slurm.py)")
    g.add_argument("--slurm-launcher", choices=NAMES, default=None,
                   help="how a cell starts inside its job: local (the stack's interpreter, default), "
                        "docker, apptainer or pyxis (the last two never run here)")
    g.add_argument("--slurm-partition", metavar="P")
    g.add_argument("--slurm-account", metavar="A")
    g.add_argument("--slurm-qos", metavar="Q")
    g.add_argument("--slurm-constraint", metavar="C", help="node features (sbatch --constraint)")
    g.add_argument("--slurm-gpu-feature", metavar="MODEL=FEATURE", action="append",
                   type=gpu_feature_option, default=None,
                   help="a GPU cell whose numbers were published on MODEL (e.g. V100) asks for nodes "
                        "with FEATURE; repeat per model (never run: no Slurm cluster with GPUs has been "
                        "available)")
    g.add_argument("--slurm-mem", metavar="SIZE", type=slurm_mem,
                   help="memory per cell (sbatch --mem; default the Docker runner's 16G)")
    g.add_argument("--slurm-time", metavar="MIN",
                   type=checks.option("--slurm-time", integer=True, low=1, high=525_600,
                                      example="30"),
                   help="time limit of every cell in minutes (default: its timeout_s + 1 min)")
    how = g.add_mutually_exclusive_group()
    how.add_argument("--slurm-exclusive", action="store_true",
                     help="every cell's job holds whole nodes (default: CPU cells do, GPU cells hold "
                          "only their GPUs)")
    how.add_argument("--slurm-no-exclusive", action="store_true",
                     help="let every cell share nodes (the report says so: timings then include "
                          "the neighbours' load)")
    g.add_argument("--slurm-image-dir", metavar="DIR",
                   help="apptainer/pyxis launchers: the directory of <image>-<flavour>.sif/.sqsh")
    g.add_argument("--detach", action="store_true",
                   help="submit and return; `reproduce.py status RUN`, `report RUN` or `run "
                        "--resume RUN` re-attach")


@dataclass(frozen=True)
class SlurmRequest:
    """The --slurm-* options and --detach as given (None / False: not given), each field named as
    its option (`launcher` is --slurm-launcher, `detach` --detach)."""
    launcher: str | None = None
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    gpu_feature: tuple[tuple[str, str], ...] | None = None
    mem: str | None = None
    time: int | None = None
    exclusive: bool = False
    no_exclusive: bool = False
    image_dir: str | None = None
    detach: bool = False

    @classmethod
    def from_args(cls, args) -> SlurmRequest:
        """From `run`'s parsed options (slurm_arguments)."""
        values = {f.name: getattr(args, f.name if f.name == "detach" else "slurm_" + f.name)
                  for f in fields(cls)}
        if values["gpu_feature"] is not None:
            values["gpu_feature"] = tuple(tuple(pair) for pair in values["gpu_feature"])
        return cls(**values)

    def used(self) -> list[str]:
        """The options given, as flags."""
        return ["--detach" if f.name == "detach" else "--slurm-" + f.name.replace("_", "-")
                for f in fields(self) if getattr(self, f.name)]


def slurm_options(req: SlurmRequest, stored: dict | None = None):
    """The SlurmOptions of this command; a resumed run keeps its own (a different --slurm-* option
    is a user error)."""
    from reprokit.runners.slurm import SlurmOptions

    given = {"launcher": req.launcher, "partition": req.partition, "account": req.account,
             "qos": req.qos, "constraint": req.constraint, "mem": req.mem, "time_min": req.time,
             "image_dir": req.image_dir,
             "exclusive": True if req.exclusive else False if req.no_exclusive else None,
             "gpu_features": dict(req.gpu_feature) if req.gpu_feature else None}
    if stored is not None:
        for key, value in given.items():
            if value is not None and stored.get(key) != value:
                if key == "exclusive":
                    flag = "--slurm-exclusive" if value else "--slurm-no-exclusive"
                else:
                    flag = "--slurm-" + {"time_min": "time", "image_dir": "image-dir",
                                         "gpu_features": "gpu-feature"}.get(key, key)
                raise UserError(f"cannot resume: the run was submitted with {key} "
                                f"{stored.get(key)!r}, this command gives {flag} {value!r}; drop "
                                f"{flag} to keep the run's")
        return SlurmOptions.from_record({**stored, "detach": req.detach})
    opts = {k: v for k, v in given.items() if v is not None}
    return SlurmOptions(**{"launcher": "local", **opts}, detach=req.detach)


def check_inputs(req: SlurmRequest, runner: str) -> None:
    """The --slurm-* options apply to --runner slurm only; --slurm-image-dir must be a directory
    (nothing created: reprokit/checks.py)."""
    used = req.used()
    if used and runner != "slurm":
        raise UserError(f"{used[0]} applies to --runner slurm only; add --runner slurm or drop "
                        f"{used[0]}")
    if req.image_dir:
        checks.input_dir(req.image_dir, "--slurm-image-dir", "pass the directory holding "
                         "the <image>-<flavour>.sif or .sqsh files (README: Run on a Slurm cluster)")


def slurm_runner(req: SlurmRequest, asked_device: str, resumed: results.RunDir | None, root: Path):
    """The Slurm runner, after a probe job has seen the results directory from a node, and the
    device: the probe's node's (slurm_device), not this host's. A GPU run is planned (preflight)
    on that node's fingerprint, which run.json then keeps as its host_fingerprint."""
    from reprokit.runners.slurm import SlurmRunner

    stored, probed = None, None
    if resumed is not None:
        stored = (resumed.load_run().get("slurm") or {}).get("options")
        probed = (resumed.load_run().get("slurm") or {}).get("probe")
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    options = slurm_options(req, stored)
    if probed:  # the run's own probe saw its directory (a new probe would queue behind its jobs)
        device = (resumed.load_run().get("options") or {}).get("device") or slurm_device(
            asked_device, probed)[0]
        runner = SlurmRunner(options, device=device, say=say)
        runner.probe_result = probed
        return runner, device, (f"resumed; the run's probe job {probed['job_id']} saw it from node "
                                f"{probed['node']}; launcher {runner.launcher.name}")
    where = resumed.path if resumed is not None else root
    where.mkdir(parents=True, exist_ok=True)
    # the device is the node's, not this (login) host's: the probe job's node fingerprint says
    probe = SlurmRunner(options, device="cpu", say=say).probe(
        where, gpus=1 if asked_device == "gpu" else 0)
    device, on = slurm_device(asked_device, probe)
    runner = SlurmRunner(options, device=device, say=say)
    runner.probe_result = probe
    return runner, device, (f"asked for; probe job {probe['job_id']} saw {where} from node "
                            f"{probe['node']}; launcher {runner.launcher.name}; device: {on}")


def slurm_device(asked: str, probe: dict) -> tuple[str, str]:
    """(device, why) of a Slurm run from its probe job's node fingerprint (never the driver host's:
    a login node often has no GPU). `--device gpu` on a node without one is a UserError."""
    from reprokit.probes.cell_gpus import fingerprint_gpus

    fp = probe.get("node_fingerprint")
    node = probe.get("node") or "?"
    if asked == "cpu":
        return "cpu", "cpu as asked"
    if fp is None:
        why = probe.get("node_fingerprint_error") or "no node fingerprint recorded"
        if asked == "gpu":
            raise UserError(f"--runner slurm --device gpu: the probe job's node {node} could not "
                            f"be fingerprinted ({why}); check that the kit's interpreter runs on "
                            "the nodes, or pass --device cpu")
        return "cpu", f"cpu: the probe job's node {node} could not be fingerprinted ({why})"
    gpus = [g for g in fingerprint_gpus(fp) if g.get("uuid")]  # not those the job may not open
    if gpus:
        names = sorted({str(g.get("name")) for g in gpus})
        return "gpu", f"gpu: the probe job's node {node} has {len(gpus)} ({', '.join(names)})"
    reason = (fp.get("nvidia") or {}).get("reason") or "NVML sees 0 GPUs"
    if asked == "gpu":
        raise UserError(f"--runner slurm --device gpu: the probe job's node {node} has no GPU "
                        f"({reason}); pass --slurm-partition/--slurm-constraint naming GPU nodes, "
                        "or --device cpu")
    return "cpu", (f"cpu: the probe job's node {node} has no GPU ({reason}; it asked for none: "
                   "--device gpu asks the probe for one)")


def planning_host(runner, device: str) -> dict | None:
    """The host a new run is planned on when it is not this one: a Slurm GPU run's probe node."""
    if runner.name == "slurm" and device == "gpu":
        return (runner.probe_result or {}).get("node_fingerprint")
    return None


def launcher_images(runner, cells, device: str) -> dict:
    """What preflight needs to gate a Slurm GPU run's container cells by the GPU probe cache
    (reprokit/plan/probe_cache.py): {"launcher", "images"}, the images keyed by alias tag as the
    Docker runner's are, with the ID the probe cache keys them by (an image file's sha256,
    reprokit/containers/image_files.py; for the docker launcher the driver host's image ID, the
    image the nodes are expected to hold). {} for a CPU run, another runner, or the local launcher
    (whose environments are judged instead: judged_on_environments). Only the cells' stacks and
    their fallback links are looked at: hashing every image file of the registry would cost minutes."""
    from reprokit.plan.probe_cache import CONTAINER_LAUNCHERS

    name = getattr(getattr(runner, "launcher", None), "name", None)
    if runner.name != "slurm" or device != "gpu" or name not in CONTAINER_LAUNCHERS:
        return {}
    from reprokit.catalog.suites import load_stacks
    from reprokit.containers import images as image_store
    from reprokit.containers.image_files import file_id
    from reprokit.plan.compat import load_compat
    from reprokit.plan.fallback import chain_of

    stacks, compat = load_stacks(), load_compat()
    wanted = {c.stack for c in cells}
    wanted |= {link["stack"] for s in list(wanted) for link in chain_of(s, compat) if link.get("stack")}
    dirs = sorted({stacks[s]["image"] for s in wanted if s in stacks})
    if name == "docker":
        return {"launcher": name, "images": image_store.image_states(dirs, "gpu")}
    launcher = runner.launcher
    out: dict = {}
    for d in dirs:
        path = Path(launcher.image_dir or ".") / f"{d}-gpu{launcher.suffix}"
        try:
            out[image_store.alias_tag(d, "gpu")] = {"present": True, "image_id": file_id(path)}
        except OSError:
            out[image_store.alias_tag(d, "gpu")] = "missing"  # the launcher says why when it prepares
    return {"launcher": name, "images": out}


def judged_on_environments(plan, runner, device: str):
    """The Slurm local launcher's GPU run: every cell's verdict judged on the environments that run
    it (runners/select.py gpu_environments), not on images."""
    if runner.name == "slurm" and device == "gpu" and runner.launcher.name == "local":
        from reprokit.runners.select import gpu_environments

        return replace(plan, verdicts=gpu_environments(plan.runnable, plan.host, other_host=True,
                                                       runner="slurm")[0])
    return plan
