"""`reproduce.py audit-binaries [--binary ID ...] [--arch sm_90,sm_100]`: read the GPU code of the
stacks' CUDA binaries that a registry serves, and whether their PTX compiles for today's GPUs
(reprokit/containers/binary_audit.py). Writes reprokit/data/binary_audit.json (or --write FILE);
compat.yaml's `binaries:` cite it."""

from __future__ import annotations

import json
from pathlib import Path

from reprokit import files, validate
from reprokit.errors import UserError

DEFAULT_ARCHS = "sm_90,sm_100"


def add_arguments(p) -> None:
    p.add_argument("--binary", nargs="+", metavar="ID", default=[],
                   help="audit only these binaries of compat.yaml (default: every one with a `fetch`)")
    p.add_argument("--arch", default=DEFAULT_ARCHS,
                   help=f"compile each module's highest PTX for these (default {DEFAULT_ARCHS})")
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="where the wheels and tools are kept between runs (default results/binary-audit)")
    p.add_argument("--limit-s", type=float, default=600.0, metavar="S",
                   help="compile seconds per file and architecture before the rest is left (default 600)")
    p.add_argument("--image", default=None, metavar="DIR",
                   help="audit every shared library with device code in this image's GPU wheelhouse "
                        "(images/DIR), instead of compat.yaml's binaries; needs --wheelhouse")
    p.add_argument("--wheelhouse", default=None, metavar="DIR",
                   help="with --image: the directory holding its GPU flavour's wheels (pip download -r "
                        "images/DIR/requirements-gpu.txt -d DIR)")
    p.add_argument("--write", default=None, metavar="FILE",
                   help="the audit file to update (default reprokit/data/binary_audit.json)")


def run(args) -> int:
    from reprokit.containers import binary_audit
    from reprokit.plan.compat import load_compat

    if args.image is not None and args.binary:
        raise UserError("--image audits an image's wheelhouse, --binary compat.yaml's binaries; give one")
    if args.image is not None and args.wheelhouse is None:
        raise UserError(f"--image {args.image} needs --wheelhouse DIR, the directory holding its GPU "
                        f"wheels (pip download -r images/{args.image}/requirements-gpu.txt -d DIR)")
    if args.wheelhouse is not None and args.image is None:
        raise UserError("--wheelhouse goes with --image DIR; drop it to audit compat.yaml's binaries")
    binaries = load_compat()["binaries"]
    fetchable = {k: v for k, v in binaries.items() if v.get("fetch")}
    unknown = [b for b in args.binary if b not in binaries]
    if unknown:
        raise UserError(f"unknown binary {unknown[0]!r}; compat.yaml's binaries with a fetch: "
                        f"{', '.join(sorted(fetchable))}")
    without = [b for b in args.binary if b not in fetchable]
    if without:
        raise UserError(f"compat.yaml binary {without[0]!r} has no `fetch` (no registry here serves it); "
                        "choose among: " + ", ".join(sorted(fetchable)))
    archs = [a.strip() for a in args.arch.split(",") if a.strip()]
    if not archs or any(not a.startswith("sm_") or not a[3:].isdigit() for a in archs):
        raise UserError(f"--arch {args.arch!r}: give architectures as sm_NN, comma-separated "
                        "(e.g. sm_90,sm_100)")
    cache = Path(args.cache) if args.cache else files.REPO / "results" / "binary-audit"
    tools = binary_audit.find_tools(cache)
    out = Path(args.write) if args.write else files.REPO / "reprokit" / "data" / "binary_audit.json"
    read(out)  # a malformed file is refused before any work
    command = "reproduce.py audit-binaries" + (f" --binary {' '.join(args.binary)}" if args.binary else "") \
        + (f" --image {args.image} --wheelhouse WHEELHOUSE" if args.image else "") \
        + (f" --arch {args.arch}" if args.arch != DEFAULT_ARCHS else "") \
        + (f" --limit-s {args.limit_s:g}" if args.limit_s != 600.0 else "")
    versions = tools.versions()
    if args.image is not None:
        from reprokit import checks

        checks.input_dir(Path(args.wheelhouse), "--wheelhouse", "pass the directory holding the image's "
                         "GPU wheels")
        rec = binary_audit.audit_wheelhouse(args.image, "gpu", Path(args.wheelhouse), tools, archs,
                                            args.limit_s)
        keep(out, "images", f"{args.image}:gpu", {**rec, "command": command, "tools": versions})
        said = ", ".join(f"{a} {'passes' if ok else 'does not pass'}"
                         + ("" if rec["ptx_compile"][a]["complete"] else
                            f" (PTX compiled: {rec['ptx_compile'][a]['compiled']} of "
                            f"{rec['ptx_compile'][a]['modules']} modules, the rest left by --limit-s)")
                         for a, ok in rec["passes"].items())
        print(f"images/{args.image} gpu: {len(rec['wheels'])} wheels with device code; {said}; wrote {out}")
        return 0
    for binary_id in args.binary or sorted(fetchable):
        rec = binary_audit.audit_binary(binary_id, fetchable[binary_id], tools, cache, archs, args.limit_s)
        keep(out, "audits", binary_id, {**rec, "command": command, "tools": versions})  # kept when done
    print(f"wrote {out}")
    return 0


def read(out: Path) -> dict:
    if not out.exists():
        return {"schema_version": 1, "kind": "binary_audit", "audits": {}}
    doc = json.loads(out.read_text())
    validate.check("binary_audit", doc, str(out))
    return doc


def keep(out: Path, section: str, key: str, record: dict) -> None:
    """One record put into the audit file: read again under an exclusive lock and rewritten
    atomically, so audits run side by side (an image's and some binaries') each keep theirs."""
    import fcntl

    with open(out.with_name(out.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        doc = read(out)
        doc.setdefault(section, {})[key] = record
        files.write_json_atomic(out, doc, "binary_audit")
