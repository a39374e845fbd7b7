"""`reproduce.py export RUN`: a run as a zipped RO-Crate (Process Run Crate 0.5), written with the
`rocrate` library (layout: reprokit/crate/__init__.py, docs/CRATE.md).

The run directory is copied as it is; its report is rendered again from that copy while the data
files it reads are recorded (reprokit/kitdata.py `KitData(..., reads)`), and those files are the crate's data
snapshot. The fresh rendering must equal the run's stored report byte for byte: a run whose report
is older than today's data or templates is refused (re-render it with `reproduce.py report RUN`
first), so the crate always holds a report its own files re-render.
"""

from __future__ import annotations

import errno
import hashlib
import mimetypes
import os
import shutil
import stat
from pathlib import Path

from reprokit import files, formats, kitdata, results
from reprokit.crate import (
    DATA_DIR,
    IMAGE_ARCHIVE,
    KIT_MARK,
    PROCESS_RUN_CRATE,
    REPORT_FILES,
    RUN_DIR,
    WFRUN_TERMS,
    entities,
)
from reprokit.errors import UserError
from reprokit.reader import lock
from reprokit.reader.cells import check_result
from reprokit.reader.load import load
from reprokit.reader.model import Run
from reprokit.reader.reconcile import PROCESS_FILE
from reprokit.reader.result import CellResult

WFRUN_CONTEXT = f"{WFRUN_TERMS}/context"

_FORMATS = {".json": "application/json", ".md": "text/markdown", ".html": "text/html",
            ".svg": "image/svg+xml", ".log": "text/plain", ".yaml": "application/yaml"}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _copy_file(src: Path, dst: Path, shown: str) -> None:
    """One regular file, read through a descriptor opened without following a link and without
    blocking (a FIFO swapped in after the walk cannot hang it), bounded like every crate member."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(src, flags)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UserError(f"{shown} became a symbolic link while the run was exported; export never "
                            "follows links out of a run: replace it with the file, then export") from e
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{shown} is not a regular file; remove it from the run, then export")
        limit = files.READ_LIMITS["crate"]
        if st.st_size > limit:
            raise UserError(f"{shown} has {st.st_size:,} bytes, more than a crate member may hold "
                            f"({limit:,}); remove it from the run, then export")
        with open(dst, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)


def _copy_run(src: Path, dst: Path, shown: str | None = None) -> None:
    """Every file of the run directory except hidden ones (the run's .lock, cells/.invalid/ results
    set aside, .tmp-* of a write cut short). A symbolic link or a special file (FIFO, socket, device)
    in the run is refused with one line naming it: its target would be exported as the run's content
    (a link to /etc/passwd in logs/ would be packed, and verified)."""
    shown = shown or str(src)
    dst.mkdir()
    with os.scandir(src) as entries:
        for e in sorted(entries, key=lambda e: e.name):
            if e.name.startswith("."):
                continue
            where = f"{shown}/{e.name}"
            if e.is_symlink():
                raise UserError(f"{where} is a symbolic link (to {os.readlink(e.path)}); export never "
                                "follows links out of a run: replace it with the file it stands for, "
                                "or remove it, then export")
            if e.is_dir(follow_symlinks=False):
                _copy_run(Path(e.path), dst / e.name, where)
            elif e.is_file(follow_symlinks=False):
                _copy_file(Path(e.path), dst / e.name, where)
            else:
                raise UserError(f"{where} is not a regular file or directory (a FIFO, socket or "
                                "device); remove it from the run, then export")


def report_outputs(run_path: Path) -> dict[str, bytes]:
    """The report files of a run directory (report.*, plots/*.svg) by relative path."""
    out = {n: (run_path / n).read_bytes() for n in REPORT_FILES if (run_path / n).is_file()}
    for p in sorted((run_path / "plots").glob("*.svg")) if (run_path / "plots").is_dir() else []:
        out[f"plots/{p.name}"] = p.read_bytes()
    return out


def render_recording(run_path: Path, data: Path) -> list[str]:
    """Render the report of the run at `run_path` with the data files under `data`; the relative
    paths of the data files it read, sorted."""
    from reprokit.report import report

    reads: list[str] = []
    report.render(results.RunDir(run_path), kitdata.KitData(data, reads))
    return sorted(set(reads))


def first_difference(a: dict[str, bytes], b: dict[str, bytes]) -> str | None:
    """The first report file that differs between two renderings (or is in one only), or None."""
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            if name not in a or name not in b:
                return f"{name} is {'missing' if name not in b else 'extra'}"
            la, lb = a[name].splitlines(), b[name].splitlines()
            line = next((i + 1 for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)) + 1)
            return f"{name} differs from line {line}"
    return None


def ran_images(run_dir: Path) -> dict[str, dict]:
    """{image ID: {"dir", "flavour", "tag"}} of every container image the run's cells ran in, from
    what the runner recorded (tag reprokit/<dir>:<flavour>-<inputs hash>)."""
    out: dict[str, dict] = {}
    for path in sorted((run_dir / "cells").glob("*.json")) if (run_dir / "cells").is_dir() else []:
        r = files.loads_strict(path.read_text()).get("runner") or {}
        tag = r.get("image_tag") or ""
        repo, _, version = tag.rpartition(":")
        if not (r.get("image_id") and repo.startswith("reprokit/") and version):
            continue
        out.setdefault(r["image_id"], {"dir": repo.split("/", 1)[1], "flavour": version.split("-", 1)[0],
                                       "tag": tag})
    return out


def _archive_images(run_dir: Path, dest: Path) -> list[str]:
    """The image archive (reprokit/containers/archive.py) of the images the run ran in, written to
    `dest`; refused when an image is no longer the one the cells ran in. The image IDs archived."""
    import sys

    from reprokit.containers import archive, engine

    ran = ran_images(run_dir)
    if not ran:
        raise UserError(f"--with-images: no cell of {run_dir.name} ran in a container image (local "
                        "runner); export without --with-images")
    flavours = {v["flavour"] for v in ran.values()}
    if len(flavours) != 1:
        raise UserError(f"--with-images: the run used images of several flavours "
                        f"({', '.join(sorted(flavours))}); archive them with `reproduce.py archive` instead")
    dirs = sorted({v["dir"] for v in ran.values()})
    dest.parent.mkdir(parents=True, exist_ok=True)
    manifest = archive.write_archive(engine.client(), dirs, flavours.pop(), dest, None,
                                     lambda msg: print(msg, file=sys.stderr, flush=True))
    have = {im["image_id"] for im in manifest["images"]}
    gone = sorted(set(ran) - have)
    if gone:
        dest.unlink()
        raise UserError(f"--with-images: image {ran[gone[0]]['tag']} ({gone[0][:19]}) that the cells ran "
                        "in is no longer the locked build of its recipe; export without --with-images "
                        "and keep the image another way (docker save)")
    return sorted(have)


def export(rundir: results.RunDir, out: Path, with_images: bool = False) -> Path:
    from rocrate.model import ContextEntity
    from rocrate.rocrate import ROCrate

    busy = lock.held_by_other(rundir.path)
    if busy is not None:  # its report is not the run's last word yet (it was called stale)
        raise UserError(f"{rundir.path} is still being written by a run driver (pid {busy.get('pid')} on "
                        f"{busy.get('host')} holds its lock {rundir.path / lock.LOCK_NAME}); wait for the "
                        "run to end, then export it")
    run = load(rundir)
    out = Path(out)
    if out.exists() and out.is_dir():
        raise UserError(f"{out} is a directory; give the crate's file name with -o (e.g. "
                        f"{run.run_id}.crate.zip)")
    with files.temporary_directory("reprokit-export-") as tmp:
        stage = Path(tmp)
        run_dir = stage / RUN_DIR
        _copy_run(rundir.path, run_dir)
        stored = report_outputs(run_dir)
        data = results.snapshot_root(rundir, run.doc) or kitdata.PACKAGED  # the run's own data, if any
        reads = render_recording(run_dir, data)
        fresh = report_outputs(run_dir)
        diff = first_difference(fresh, stored)
        if diff:
            raise UserError(f"the report in {rundir.path} is not what its results render to with today's "
                            f"data and templates ({diff}); re-render it with `reproduce.py report "
                            f"{rundir.path}`, then export")
        for rel in reads:
            dst = stage / DATA_DIR / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(data / rel, dst)
        if with_images:
            _archive_images(run_dir, stage / IMAGE_ARCHIVE)
        crate = ROCrate(version="1.1")
        _describe(crate, ContextEntity, stage, run, reads)
        part = out.with_name(f".{out.name}.part")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            crate.write_zip(str(part))
            part.replace(out)
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM):
                raise  # the disk or the permissions: one line, exit 2 (reprokit/cli.py)
            raise UserError(f"cannot write the crate to {out} ({e.strerror}); give -o a file in a "
                            "directory you can write") from e
        finally:
            part.unlink(missing_ok=True)
    return out


def _cell(path: Path, run_id: str) -> CellResult:
    """A result file of the run (a main result or a process's), as the model reads it."""
    m = PROCESS_FILE.fullmatch(path.name)
    doc, why = check_result(path, run_id, None, int(m["n"]) if m else None)
    if doc is None:
        raise UserError(f"{path.name} is not a valid result of the run ({why}); re-render and check the "
                        "run with `reproduce.py report RUN` before exporting it")
    return CellResult.from_doc(doc)


def _jobs_by_cell(jobs_dir: Path) -> dict[str, str]:
    """{cell id: the crate path of the first job file (by name) that asked for it}."""
    out: dict[str, str] = {}
    for path in sorted(jobs_dir.glob("*.json")) if jobs_dir.is_dir() else []:
        try:
            job = files.loads_strict(files.read_text_bounded(path, "job"))
        except (OSError, ValueError):
            continue
        cells = job.get("cells") if isinstance(job, dict) else None  # tests/fuzz (job_json): was exit 3
        for c in cells if isinstance(cells, list) else []:
            if isinstance(c, dict) and isinstance(c.get("id"), str) and c["id"]:
                out.setdefault(c["id"], f"{RUN_DIR}/jobs/{path.name}")
    return out


def _describe(crate, ContextEntity, stage: Path, run: Run, reads: list[str]) -> None:
    """Fill the crate: its files with their checksums, then the entities and actions."""
    import json

    def add(entity: dict):
        return crate.add(ContextEntity(crate, entity["@id"], properties={
            k: v for k, v in entity.items() if k != "@id"}))

    for path in sorted(p for p in stage.rglob("*") if p.is_file()):
        rel = path.relative_to(stage).as_posix()
        fmt = _FORMATS.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        crate.add_file(str(path), dest_path=rel, properties={
            "name": rel.split("/", 1)[1], "sha256": sha256_file(path),
            "contentSize": str(path.stat().st_size), "encodingFormat": fmt})
    report = json.loads((stage / RUN_DIR / "report.json").read_text())
    run_kit = entities.kit("#kit-run", run.kit.to_doc(), "the kit that made the run")
    export_kit = entities.kit("#kit-export", files.kit_info(),
                              "the kit that exported the run and rendered its report from the crate's files")
    add(run_kit)
    add(export_kit)
    mentions = []
    add(entities.machine("#host", run.host, "the host that ran the suite (run/run.json host_fingerprint)"))
    about = [{"@id": "#host"}]
    kinds: dict[str, list[str]] = {}
    for n in report.get("numbers") or []:
        k = n.get("reproduction")
        if k and n.get("cell") and k["label"] not in kinds.setdefault(n["cell"], []):
            kinds[n["cell"]].append(k["label"])
    added: set[str] = set()
    nodes: set[str] = set()
    cells_dir = stage / RUN_DIR / "cells"
    jobs = _jobs_by_cell(stage / RUN_DIR / "jobs")
    for path in sorted(cells_dir.glob("*.json")) if cells_dir.is_dir() else []:
        cell = _cell(path, run.run_id)
        rel = path.relative_to(stage).as_posix()
        stem = path.name[:-5]
        procs = [] if cell.process else sorted(
            p.relative_to(stage).as_posix() for p in cells_dir.glob(f"{stem}.p*.json"))
        image = None
        if procs:  # a result merged from its processes' files by the kit
            instrument = "#kit-run"
        else:
            soft = entities.stack_software(run, cell.stack, cell)
            for e in soft:
                if e["@id"] not in added:
                    add(e)
                    added.add(e["@id"])
            instrument = soft[0]["@id"]
            image = next((e["@id"] for e in soft if e["@type"] == "ContainerImage"), None)
        log = f"{RUN_DIR}/{cell.log_file}" if cell.log_file else None
        act = entities.cell_action(
            cell, rel, None if procs else jobs.get(cell.cell_id),
            log if log and (stage / log).is_file() else None, procs, instrument, image,
            kinds.get(cell.cell_id, []))
        node = cell.runner.get("node")
        fp = cell.runner.get("node_fingerprint")
        if node and isinstance(fp, dict) and node not in nodes:
            nodes.add(node)
            add(entities.machine(entities.local_id("node", node), fp, f"Slurm node {node}"))
            about.append({"@id": entities.local_id("node", node)})
        if node:
            act["description"] += f"; ran on node {node}"
        mentions.append(add(act))
    report_files = [f"{RUN_DIR}/{n}" for n in report_outputs(stage / RUN_DIR)]
    inputs = [f"{RUN_DIR}/run.json"] + [f"{RUN_DIR}/cells/{p.name}" for p in sorted(cells_dir.glob("*.json"))
                                        if cells_dir.is_dir()] + [f"{DATA_DIR}/{r}" for r in reads]
    mentions.append(add({
        "@id": "#report", "@type": "CreateAction", "name": "render the report",
        "description": "the report rendered from the run's results and the data snapshot (kit-data/) "
                       "alone; `reproduce.py verify` renders it again and compares byte for byte",
        "instrument": {"@id": "#kit-export"}, "actionStatus": {"@id": entities.COMPLETED},
        "object": entities.refs(inputs), "result": entities.refs(report_files)}))
    imgs = [e for e in crate.get_entities() if e.type == "ContainerImage"]
    if imgs:  # ContainerImage, containerImage, tag, registry: the Process Run Crate's own terms
        crate.metadata.extra_contexts.append(WFRUN_CONTEXT)
    if (stage / IMAGE_ARCHIVE).is_file():  # --with-images: the archive tied to the images by ID
        arch = crate.get(IMAGE_ARCHIVE)
        arch["description"] = ("the images the cells ran in (`reproduce.py archive` format: "
                               "`reproduce.py restore` loads and checks it)")
        arch["about"] = imgs[0] if len(imgs) == 1 else imgs
        for e in imgs:
            e["subjectOf"] = arch
    root = crate.root_dataset
    root["name"] = f"reprokit run {run.run_id} (suite {run.suite})"
    lines = [f"Source {s.get('source')} ({s.get('title')}): {s.get('answer')}"
             for s in report.get("first_screen") or []]
    root["description"] = " ".join(
        [f"The re-measurement of suite {run.suite} by reprokit, run {run.run_id} ({run.runner} "
         f"runner, {run.started} to {run.finished})."] + lines
        + ["The full report: run/report.md and run/report.html; every number's verdict, with what kind "
           "of reproduction it is (ACM terms), in run/report.json."])
    root["datePublished"] = run.finished or run.started or files.utcnow()
    root["identifier"] = f"{KIT_MARK}:{run.run_id}"
    root["version"] = str(formats.version("crate"))  # the kit's crate format (reprokit/formats/others.py)
    root["conformsTo"] = {"@id": PROCESS_RUN_CRATE}
    root["mentions"] = mentions[0] if len(mentions) == 1 else mentions
    root["about"] = about[0] if len(about) == 1 else about
