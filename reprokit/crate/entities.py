"""The crate's contextual entities and actions, built from a run's files (pure: dicts in, dicts out).

Each function returns JSON-LD entities (dicts with `@id` and `@type`) that reprokit/crate/export.py
adds to the crate; the vocabulary is schema.org's as RO-Crate 1.1 and the Process Run Crate profile
0.5 use it (CreateAction, SoftwareApplication, ContainerImage).
"""

from __future__ import annotations

import re
from typing import Any

from reprokit.reader.frozen import mapping
from reprokit.reader.model import Run
from reprokit.reader.result import CellResult

COMPLETED = "http://schema.org/CompletedActionStatus"
FAILED = "http://schema.org/FailedActionStatus"
DOCKER_IMAGE = "https://w3id.org/ro/terms/workflow-run#DockerImage"


def refs(ids: list[str]) -> dict | list[dict]:
    """References to entities: one reference alone, several as a list (RO-Crate 1.1 asks for single
    values rather than one-element arrays)."""
    out = [{"@id": i} for i in ids]
    return out[0] if len(out) == 1 else out


def local_id(kind: str, name: str) -> str:
    """'#<kind>-<name>' with every character outside [A-Za-z0-9._-] replaced by '_'."""
    return f"#{kind}-{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}"


def kit(ident: str, info: dict, role: str) -> dict:
    """The kit as a SoftwareApplication: version and git commit (`info`: files.kit_info's dict)."""
    commit = info.get("git_commit")
    dirty = info.get("git_dirty")
    desc = (f"{role}: reprokit {info.get('version')}, git commit {commit or 'not recorded'}"
            + (" (with uncommitted changes)" if dirty else ""))
    out = {"@id": ident, "@type": "SoftwareApplication", "name": "reprokit",
           "softwareVersion": str(info.get("version")), "description": desc}
    if commit:
        out["identifier"] = f"git:{commit}"
    return out


def machine(ident: str, fp: dict, role: str) -> dict:
    """A host or node fingerprint (reprokit/probes/fingerprint.py) as a contextual entity: what it was, in
    words; the whole fingerprint stays in run/run.json (the host) or the cell results (Slurm nodes)."""
    cpu, osi, mem = mapping(fp.get("cpu")), mapping(fp.get("os")), mapping(fp.get("memory"))
    gpus = [str(g.get("name")) for g in fp.get("gpus") or [] if isinstance(g, dict)]
    total = mem.get("total_bytes")
    parts = [f"CPU {cpu.get('model_name') or 'unknown'}"
             + (f", {cpu.get('logical_cores')} logical cores" if cpu.get("logical_cores") else ""),
             f"GPUs: {', '.join(gpus)}" if gpus else "no GPU listed",
             f"memory {round(total / 2 ** 30, 1)} GiB" if isinstance(total, int | float) else None,
             f"OS {mapping(osi.get('distro')).get('PRETTY_NAME') or osi.get('name') or 'unknown'} "
             f"{osi.get('release') or ''}".rstrip()]
    out = {"@id": ident, "@type": "Thing", "name": role,
           "description": "; ".join(p for p in parts if p)}
    if fp.get("host_id"):
        out["identifier"] = str(fp["host_id"])
    return out


def stack_software(run: Run, stack: str, cell: CellResult) -> list[dict]:
    """The stack a cell ran in as a SoftwareApplication (the framework and version it measured, the
    environment or interpreter and its requirements for the local runner), then for a container run
    its ContainerImage (name, tag and the image ID as sha256, Process Run Crate 0.5), then the Python
    and the packages it requires (`softwareRequirements`), each a SoftwareApplication."""
    impl = cell.implementation.doc
    spec = mapping(run.stacks.get(stack))
    fp = cell.stack_fingerprint
    py = mapping(fp.get("python")).get("version")
    env = mapping(cell.environment.get("chosen") if cell.environment is not None else None)
    desc = [f"stack {stack}"]
    if impl.get("framework"):
        desc.append(f"framework {impl.get('framework')} {impl.get('framework_version') or ''}".rstrip())
    if py:
        desc.append(f"Python {py}")
    if env:
        desc.append(f"environment {env.get('candidate')}"
                    + (f" ({', '.join(env['requirements'])})" if env.get("requirements") else "")
                    + (f": stand-in, {env.get('why')}" if env.get("fallback") else ""))
    orig = mapping(spec.get("original"))
    if orig:
        desc.append(f"published stack: {spec.get('framework') or ''} {orig.get('framework_version') or ''}"
                    .replace("  ", " ").strip())
    app = {"@id": local_id("stack", stack), "@type": "SoftwareApplication",
           "name": f"{impl.get('framework') or spec.get('framework') or stack} "
                   f"{impl.get('framework_version') or ''}".strip(),
           "description": "; ".join(desc)}
    if impl.get("framework_version"):
        app["softwareVersion"] = str(impl["framework_version"])
    # the interpreter and the packages the environment was made from, as entities of their own
    reqs = []
    if py:
        reqs.append({"@id": local_id("python", py), "@type": "SoftwareApplication", "name": "Python",
                     "softwareVersion": str(py)})
    for r in env.get("requirements") or []:
        name, sep, version = str(r).partition("==")
        reqs.append({"@id": local_id("package", str(r)), "@type": "SoftwareApplication", "name": name,
                     **({"softwareVersion": version} if sep else {"description": str(r)})})
    if reqs:
        app["softwareRequirements"] = refs([q["@id"] for q in reqs])
    out = [app]
    # the container image: what the runner recorded (Docker runner, Slurm launchers: image_id, its
    # tag, digest and lock status), else what the stack saw (REPROKIT_IMAGE_ID / _DIGEST)
    runner = cell.runner
    image = mapping(fp.get("image"))
    image_id = runner.get("image_id") or image.get("id")
    digest = runner.get("image_digest") or image.get("digest")
    if image_id or digest:
        name = str(runner.get("image_tag") or spec.get("image") or stack)
        repo, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "")
        img = {"@id": local_id("image", stack), "@type": "ContainerImage",
               "additionalType": {"@id": DOCKER_IMAGE}, "name": repo,
               "sha256": str(image_id or digest).split(":", 1)[-1]}
        if tag:
            img["tag"] = tag
        if digest:
            img["identifier"] = str(digest)
        if runner.get("image_lock"):
            img["description"] = f"image lock (images/lock.json) when the cell ran: {runner['image_lock']}"
        out.append(img)
    return out + reqs


def cell_action(cell: CellResult, rel: str, job: str | None, log: str | None, objects: list[str],
                instrument: str, image: str | None, kinds: list[str]) -> dict:
    """One cell process as a CreateAction: `rel` the cell result's path in the crate (its result),
    `job` the job file (object), `log` the log file (result), `objects` further inputs (the process
    files a merged result was made from), `kinds` the reproduction kinds of its numbers."""
    status = cell.status
    name = (f"cell {cell.cell_id}" + (f", process {cell.process}" if cell.process else "")
            + (", merged from its processes' results by the kit" if objects and not job else ""))
    desc = [f"status {status}"]
    if kinds:
        desc.append("reproduction kind of its numbers: " + "; ".join(kinds))
    act: dict[str, Any] = {
        "@id": local_id("cell", rel.rsplit("/", 1)[-1][:-5]), "@type": "CreateAction", "name": name,
        "description": "; ".join(desc), "instrument": {"@id": instrument},
        "actionStatus": {"@id": COMPLETED if status == "ok" else FAILED},
        "result": refs([r for r in (rel, log) if r]),
    }
    obj = [o for o in ([job] if job else []) + objects]
    if obj:
        act["object"] = refs(obj)
    for key, when in (("startTime", cell.started), ("endTime", cell.finished)):
        if when:
            act[key] = when
    if status != "ok":
        act["error"] = str(cell.reason or f"status {status}, no reason recorded")
    if image:
        act["containerImage"] = {"@id": image}
    return act
