"""Fuzz targets: the kit's readers of files it did not just write itself, and the reconciler.

Each target takes one input (bytes), puts it where the reader looks (a scratch copy of a committed run,
of reprokit/data, an archive or a crate built around it) and calls the kit's own reader. The kit may
refuse the input only in its own ways: a `UserError` (one line, exit 1 or 2; `CrateInvalid` is one)
or, where a reader is documented to answer so, its (None, reason) result. Any other exception escapes
and is a finding (`tests/fuzz/run_fuzz.py` runs them under atheris; `tests/core/test_fuzz.py` in CI).

The seed corpus is the committed runs (docs/sample-run, tests/data/runs), the kit's data files, an
archive as `reproduce.py archive` writes it and a crate `reproduce.py export` wrote of a committed run.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import shutil
import tarfile
import warnings
import zipfile
from pathlib import Path

from reprokit import files, kitdata, results
from reprokit.containers import archive
from reprokit.crate import checks as crate_checks
from reprokit.crate import export as crate_export
from reprokit.crate import profile as crate_profile
from reprokit.errors import UserError
from reprokit.reader.cells import check_result
from reprokit.reader.reconcile import cell_id_of
from reprokit.run import reconcile

# What does not depend on the input is asked once: the kit's own git commit (crate checks ask it)
files.kit_info = functools.cache(files.kit_info)

REPO = Path(__file__).resolve().parents[2]
RUN_SOURCES = [REPO / "tests" / "data" / "runs" / n for n in
               ("cpu-a", "cpu-b", "haswell-same", "m40-same", "v100-other", "smoke-current")]
RUN_SOURCES += sorted((REPO / "docs" / "sample-run").iterdir())
SCRATCH_RUN = REPO / "tests" / "data" / "runs" / "cpu-a"  # the run the run/cell targets work in
SEP = b"\n\0\0LOCK\0\0\n"  # archive target: the manifest's bytes, SEP, the lock's bytes


def _committed_json(pattern: str) -> list[bytes]:
    out = []
    for run in RUN_SOURCES:
        out += [p.read_bytes() for p in sorted(run.glob(pattern)) if p.is_file()]
    return out


class Target:
    name = ""

    def __init__(self, work: Path, shared: Path):
        self.work, self.shared = work, shared
        work.mkdir(parents=True, exist_ok=True)

    def seeds(self) -> list[bytes]:
        raise NotImplementedError

    def one_input(self, data: bytes) -> None:
        raise NotImplementedError


class SelfTest(Target):
    """Not the kit: an input starting with b"boom" raises KeyError. tests/core/test_fuzz.py checks with it
    that a finding fails the run (a fuzz test that cannot fail would prove nothing)."""

    name = "selftest"

    def seeds(self) -> list[bytes]:
        return [b"boom"]

    def one_input(self, data: bytes) -> None:
        if data.startswith(b"boom"):
            raise KeyError("planted finding")


class _RunScratch(Target):
    """A copy of a committed run whose files are put back before every input."""

    def __init__(self, work: Path, shared: Path):
        super().__init__(work, shared)
        self.run = work / "run"
        shutil.rmtree(self.run, ignore_errors=True)
        shutil.copytree(SCRATCH_RUN, self.run)
        (self.run / "jobs").mkdir(exist_ok=True)
        # two cells of the run keep each input's reconcile fast (each file is validated)
        run = json.loads((self.run / "run.json").read_text())
        keep = sorted(run["cells"], key=lambda e: e["cell_id"])[:2]
        run["cells"] = keep
        (self.run / "run.json").write_text(json.dumps(run, indent=1))
        names = {results.cell_filename(e["cell_id"]) for e in keep}
        for p in (self.run / "cells").iterdir():
            if p.name not in names:
                p.unlink()
        self.pristine = {p.relative_to(self.run): p.read_bytes() for p in self.run.rglob("*")
                         if p.is_file()}
        self.run_id = json.loads(self.pristine[Path("run.json")])["run_id"]

    def restore(self) -> None:
        for sub in ("cells", "jobs"):
            shutil.rmtree(self.run / sub, ignore_errors=True)
            (self.run / sub).mkdir()
        for rel, data in self.pristine.items():
            (self.run / rel).write_bytes(data)

    def reconcile_and_load(self) -> None:
        rundir = results.resolve_run(str(self.run))
        try:
            rec = reconcile.reconcile(rundir, modify=True)
        except UserError:
            return
        assert isinstance(rec.run, dict)
        try:
            rundir.load_cells()
        except UserError:
            pass


class RunJson(_RunScratch):
    """run.json: RunDir.load_run (files.read_json), then reconcile against the run's cells."""

    name = "run_json"

    def seeds(self) -> list[bytes]:
        return _committed_json("run.json")

    def one_input(self, data: bytes) -> None:
        self.restore()
        (self.run / "run.json").write_bytes(data)
        try:
            results.RunDir(self.run).load_run()
        except UserError:
            return
        self.reconcile_and_load()


class CellJson(_RunScratch):
    """A cell result: reader.cells.check_result must answer (doc, None) or (None, reason); then
    reconcile (which adopts or moves it aside) and RunDir.load_cell/load_cells."""

    name = "cell_json"

    def seeds(self) -> list[bytes]:
        return _committed_json("cells/*.json")

    def one_input(self, data: bytes) -> None:
        self.restore()
        victim = sorted((self.run / "cells").glob("*.json"))[0]
        victim.write_bytes(data)
        cell_id = cell_id_of(victim.name)
        doc, why = check_result(victim, self.run_id, cell_id)
        assert (doc is None) != (why is None), (doc, why)
        assert why is None or (isinstance(why, str) and "\n" not in why), why
        try:
            results.RunDir(self.run).load_cell(cell_id)
        except UserError:
            pass
        self.reconcile_and_load()


class JobJson(_RunScratch):
    """A job file: files.read_json(..., 'job') (jit_warmup's reader) and the crate export's index of
    job files by cell (crate/export.py _jobs_by_cell)."""

    name = "job_json"

    def seeds(self) -> list[bytes]:
        return _committed_json("jobs/*.json")

    def one_input(self, data: bytes) -> None:
        self.restore()
        job = self.run / "jobs" / "torch-1.3.json"
        job.write_bytes(data)
        try:
            files.read_json(job, "job")
        except UserError:
            pass
        index = crate_export._jobs_by_cell(self.run / "jobs")
        assert isinstance(index, dict)


class DataYaml(Target):
    """A data file of the kit (reprokit/data, scratch copy): KitData.load_file with its schema.
    The input's first byte picks the file, the rest is its content."""

    name = "data_yaml"

    def __init__(self, work: Path, shared: Path):
        super().__init__(work, shared)
        self.root = work / "data"
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.copytree(kitdata.PACKAGED, self.root, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
        self.names = sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*")
                            if p.suffix in (".yaml", ".json"))
        os.environ[kitdata.CACHE_ENV] = str(work / "data-cache")
        self.data = kitdata.KitData(self.root)

    def seeds(self) -> list[bytes]:
        # the files up to 12 KB (most kinds: suites, published numbers, policies, stand-ins, ...): a
        # mutated copy of a 200 KB file takes a second to parse and validate
        return [bytes([i]) + (self.root / n).read_bytes() for i, n in enumerate(self.names)
                if (self.root / n).stat().st_size <= 12_000]

    def one_input(self, data: bytes) -> None:
        if not data:
            return
        rel = self.names[data[0] % len(self.names)]
        (self.root / rel).write_bytes(data[1:])
        self.data.forget()
        try:
            self.data.load_file(rel, kitdata.schema_of(rel))
        except UserError:
            pass


def archive_seed() -> tuple[bytes, bytes, bytes]:
    """(image tarball, lock, manifest) of an archive as `reproduce.py archive` writes it."""
    image = bytes(range(256)) * 8
    image_id = "sha256:" + "1" * 64
    lock = json.dumps({"schema_version": 1, "kind": "image_lock", "images": {
        "smoke-python:cpu": {"image_id": image_id, "image_dir": "smoke-python", "flavour": "cpu"}}},
        indent=1).encode()
    manifest = {"schema_version": 1, "kind": "image_archive", "created": "2026-11-25T00:00:00Z",
                "suite": "smoke", "flavour": "cpu", "lock_sha256": hashlib.sha256(lock).hexdigest(),
                "images": [{"key": "smoke-python:cpu", "tag": "reprokit/smoke-python:cpu-x",
                            "alias": "reprokit/smoke-python:cpu", "image_id": image_id,
                            "file": "images/smoke-python-cpu.tar",
                            "sha256": hashlib.sha256(image).hexdigest(), "size": len(image),
                            "layers": {}, "layer_order": [], "config": "c.json"}]}
    return image, lock, json.dumps(manifest, indent=1).encode()


def write_tar(path: Path, members: list[tuple[str, bytes]]) -> None:
    with tarfile.open(path, "w") as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_700_000_000
            t.addfile(info, io.BytesIO(data))


class ArchiveManifest(Target):
    """An image archive's manifest and lock (archive.check_archive, which reads both as
    verify_and_load does before it asks the engine anything). Input: manifest, SEP, lock."""

    name = "archive_manifest"

    def seeds(self) -> list[bytes]:
        _, lock, manifest = archive_seed()
        return [manifest + SEP + lock]

    @staticmethod
    def signed(manifest: bytes, lock: bytes) -> bytes:
        """The manifest with the lock's real sha256, as `archive` writes it, so that mutated locks
        get past that check to the lock's reader (the mutated manifest is kept otherwise)."""
        try:
            doc = json.loads(manifest)
        except ValueError:
            return manifest
        if isinstance(doc, dict) and "lock_sha256" in doc:
            doc["lock_sha256"] = hashlib.sha256(lock).hexdigest()
            return json.dumps(doc).encode()
        return manifest

    def one_input(self, data: bytes) -> None:
        manifest, _, lock = data.partition(SEP)
        manifest = self.signed(manifest, lock)
        image, _, _ = archive_seed()
        path = self.work / "a.tar"
        write_tar(path, [("images/smoke-python-cpu.tar", image), (archive.LOCK, lock),
                         (archive.MANIFEST, manifest)])
        try:
            archive.check_archive(path)
        except UserError:
            pass


class ArchiveTar(Target):
    """The archive file itself, any bytes: archive.check_archive."""

    name = "archive_tar"

    def seeds(self) -> list[bytes]:
        image, lock, manifest = archive_seed()
        path = self.work / "seed.tar"
        write_tar(path, [("images/smoke-python-cpu.tar", image), (archive.LOCK, lock),
                         (archive.MANIFEST, manifest)])
        return [path.read_bytes()]

    def one_input(self, data: bytes) -> None:
        path = self.work / "a.tar"
        path.write_bytes(data)
        try:
            archive.check_archive(path)
        except UserError:
            pass


def seed_crate(shared: Path) -> Path:
    """A crate `reproduce.py export` wrote of a copy of tests/data/runs/cpu-a (its report rendered
    first), made once per corpus directory."""
    crate = shared / "cpu-a.crate.zip"
    if crate.is_file():
        return crate
    from reprokit.report.report import render

    run = shared / "crate-run" / "cpu-a"
    shutil.rmtree(run.parent, ignore_errors=True)
    shutil.copytree(SCRATCH_RUN, run)
    reconcile.reconcile(results.RunDir(run), modify=True)
    render(results.RunDir(run))
    part = shared / "cpu-a.crate.zip.part"
    crate_export.export(results.RunDir(run), part)
    part.replace(crate)
    return crate


# The files of the seed crate the crate targets keep (with the metadata): one of each kind, so that
# each input is checked in milliseconds (verify validates every file it describes).
_CRATE_KEEP = ("run/run.json", "run/cells/003__pytorch__eager_static__train.json",
               "kit-data/suites/smoke.yaml", "kit-data/rerun_coverage.json")


def small_crate(shared: Path) -> dict[str, bytes]:
    """The members of the seed crate reduced to _CRATE_KEEP, its metadata describing just those."""
    with zipfile.ZipFile(seed_crate(shared)) as z:
        members = {n: z.read(n) for n in _CRATE_KEEP}
        meta = json.loads(z.read(crate_checks.METADATA))
    dropped = {e["@id"] for e in meta["@graph"]
               if "File" in crate_profile._types(e) and e["@id"] not in _CRATE_KEEP}
    meta["@graph"] = [e for e in meta["@graph"] if e["@id"] not in dropped]
    for e in meta["@graph"]:
        for k, v in list(e.items()):
            if isinstance(v, list):
                e[k] = [x for x in v if not (isinstance(x, dict) and x.get("@id") in dropped)]
            elif isinstance(v, dict) and v.get("@id") in dropped:
                del e[k]
    members[crate_checks.METADATA] = json.dumps(meta, indent=1).encode()
    return members


def _verify_offline(path: Path) -> None:
    """`reproduce.py verify` up to the report: the zip, its files, their schemas, the profile
    (the kit's own checks; roc-validator and the re-rendered report are left out: too slow here)."""
    try:
        with crate_checks.opened(path) as crate:
            assert isinstance(crate.run_id, str)
            crate_checks.check_files(crate)
            crate_checks.check_schemas(crate)
            out = crate_profile.own_checks(crate.meta)
            assert all(isinstance(line, str) for line in out)
            crate_checks.other_kit(crate)
    except UserError:
        pass


def _zip(path: Path, members: dict[str, bytes], how: int = zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", how) as z:
        for n, b in members.items():
            z.writestr(n, b)


def _zip_bytes(members: dict[str, bytes], special: dict[str, int] | None = None,
               twice: str | None = None) -> bytes:
    """A deflated zip of `members`, some with a Unix file mode (`special`), one written twice."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name"
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for n, b in members.items():
                info = zipfile.ZipInfo(n, (2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                if n in (special or {}):
                    info.external_attr = special[n] << 16
                    b = b"/etc/passwd" if special[n] >> 12 == 0o12 else b""
                if n == twice:
                    z.writestr(info, b"{}")  # an evil first copy
                z.writestr(info, b)
    return buf.getvalue()


class CrateMetadata(Target):
    """A crate's ro-crate-metadata.json, in a zip with the files of a real export (small_crate)."""

    name = "crate_metadata"

    def __init__(self, work: Path, shared: Path):
        super().__init__(work, shared)
        self.members = small_crate(shared)

    def seeds(self) -> list[bytes]:
        return [self.members[crate_checks.METADATA]]

    def one_input(self, data: bytes) -> None:
        path = self.work / "c.zip"
        _zip(path, {**self.members, crate_checks.METADATA: data})
        _verify_offline(path)


class CrateZip(Target):
    """The crate file itself, any bytes (seeds: small_crate, stored and deflated)."""

    name = "crate_zip"

    def seeds(self) -> list[bytes]:
        """The small crate stored and deflated, and hostile shapes to mutate from: a
        symbolic-link member, a FIFO member, a member there twice, a member of zeros (ratio ~1000x)."""
        members = small_crate(self.shared)
        log = _CRATE_KEEP[1]  # a cell result
        out = []
        for how in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            _zip(self.work / "seed.zip", members, how)
            out.append((self.work / "seed.zip").read_bytes())
        for mode in (0o120777, 0o010644):  # a symbolic link, a FIFO (Unix mode in external_attr)
            out.append(_zip_bytes(members, special={log: mode}))
        out.append(_zip_bytes(members, twice=log))
        out.append(_zip_bytes({**members, log: bytes(1 << 20)}))
        return out

    def one_input(self, data: bytes) -> None:
        path = self.work / "c.zip"
        path.write_bytes(data)
        _verify_offline(path)


TARGETS = {t.name: t for t in (SelfTest, RunJson, CellJson, JobJson, DataYaml, ArchiveManifest, ArchiveTar,
                               CrateMetadata, CrateZip)}
