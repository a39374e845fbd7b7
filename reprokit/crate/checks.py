"""`reproduce.py verify FILE`: is a crate complete and untampered, and does its report follow from its
files alone? Offline, and without the kit's checkout data (the data come from the crate's snapshot).

In order, each stopping at the first failure with one line (`CrateInvalid`, exit status 1):
1. the file: a zip whose every member reads back (CRC), holding ro-crate-metadata.json of a crate
   reprokit exported (anything else is not a crate: `UserError`, exit status 2);
2. the files: every file the metadata describes is there with its sha256 and size, and no file is
   there that it does not describe;
3. every file's schema: run.json, cells/*.json, jobs/*.json, report.json, and each data file of the
   snapshot against its own schema (reprokit/schemas);
4. the profile: the kit's own checks (reprokit/crate/profile.py) and roc-validator where installed;
5. the report: rendered again from run/ and kit-data/ alone (a KitData of kit-data/) and compared byte for
   byte with the crate's report.md, report.html, report.json and plots;
6. with a Docker engine reachable: each container image that ran, by its ID, against the engine's
   local store (a notice, not a failure: the crate is what is verified, not this machine).
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from reprokit import files, formats, kitdata, validate
from reprokit.crate import (
    DATA_DIR,
    IMAGE_ARCHIVE,
    KIT_MARK,
    METADATA,
    REPORT_FILES,
    RUN_DIR,
    CrateInvalid,
    export,
    profile,
)
from reprokit.errors import UserError
from reprokit.printable import bounded, visible

_RUN_SCHEMAS = {"run.json": "run", "report.json": "report"}
_FOLDER_SCHEMAS = {"cells": "cell_result", "jobs": "job"}


class Crate:
    """An extracted crate: its directory and its metadata's entities by @id."""

    def __init__(self, file: Path, root: Path, meta: dict):
        self.file, self.root, self.meta = file, root, meta
        self.infos: list[zipfile.ZipInfo] = []  # the zip's members (opened() sets them)
        self.by_id = {e["@id"]: e for e in meta["@graph"]}

    @property
    def run_id(self) -> str:
        return str(self.by_id["./"].get("identifier", "")).split(":", 1)[-1]

    def described_files(self) -> dict[str, dict]:
        """{path in the crate: entity} of every File entity: its @id with the percent-encoding the
        metadata uses undone (a name with a space, a non-ASCII letter or a newline is encoded in
        the @id, not in the zip)."""
        return {unquote(i): e for i, e in self.by_id.items() if "File" in profile._types(e)}


def _one_line(first: str, more: int) -> str:
    return first + (f" (and {more} more)" if more else "")


# What a crate member may be before anything is extracted (unbounded, a 5.4 MB zip made verify write
# 4.9 GB into $TMPDIR). A member above RATIO_FLOOR bytes may inflate at most MAX_RATIO times (JSON
# results deflate about 5-20x, an image archive 2-4x; a zip bomb about 1000x); the whole crate at
# most MAX_TOTAL bytes, and never more than the extraction's disk has free.
MAX_RATIO = 200
RATIO_FLOOR = 16 * 2**20
MAX_TOTAL = 256 * 2**30
_DIR, _FILE = stat.S_IFDIR, stat.S_IFREG


def check_members(file: Path, infos: list[zipfile.ZipInfo]) -> None:
    """Refuse, before extracting anything, a crate whose members could not have come from `export`:
    a name twice (which copy an unzip tool keeps is its choice), a path outside the crate, a
    symbolic link, device or other special member, or sizes that inflate past the bounds above."""
    seen: set[str] = set()
    total = 0
    for i in infos:
        n = i.filename
        if n in seen:
            raise CrateInvalid(f"{file}: member {visible(n)} is there twice (an unzip tool keeps one "
                               "copy or the other); the crate was altered")
        seen.add(n)
        p = PurePosixPath(n)
        if not n or not p.parts:  # found by tests/fuzz (crate_zip): an empty name was exit 3
            raise CrateInvalid(f"{file}: a member has no name; the crate was altered")
        if p.is_absolute() or ".." in p.parts or "\\" in n or "\0" in n:
            raise CrateInvalid(f"{file}: member {visible(n)} points outside the crate; the crate was "
                               "altered")
        kind = stat.S_IFMT(i.external_attr >> 16) if i.create_system == 3 else 0  # 3: Unix
        if kind not in (0, _DIR, _FILE):
            what = "a symbolic link" if kind == stat.S_IFLNK else "a special file (device, FIFO or socket)"
            raise CrateInvalid(f"{file}: member {visible(n)} is {what}, which export never writes; the "
                               "crate was altered")
        size, ratio = i.file_size, i.file_size / max(i.compress_size, 1)
        if size > RATIO_FLOOR and ratio > MAX_RATIO:
            raise CrateInvalid(f"{file}: member {visible(n)} would inflate {ratio:,.0f} times to {size:,} "
                               f"bytes (at most {MAX_RATIO}x above {RATIO_FLOOR // 2**20} MiB): not a "
                               "crate export wrote; nothing was extracted")
        total += size
    packed = sum(i.compress_size for i in infos)
    if total > RATIO_FLOOR and total > MAX_RATIO * max(packed, 1):  # many small bombs
        raise CrateInvalid(f"{file} would inflate {total / max(packed, 1):,.0f} times to {total:,} bytes "
                           f"(at most {MAX_RATIO}x): not a crate export wrote; nothing was extracted")
    if total > MAX_TOTAL:
        raise CrateInvalid(f"{file} would extract to {total:,} bytes, more than a crate may hold "
                           f"({MAX_TOTAL:,}); nothing was extracted")


def run_bytes(infos: list[zipfile.ZipInfo]) -> int:
    """What the crate's run directory takes once copied out of the extraction to be rendered again,
    with room for its report files written afresh beside the old ones (each is replaced through a
    temporary file)."""
    run = [i for i in infos if not i.is_dir() and i.filename.startswith(f"{RUN_DIR}/")]
    report = [i for i in run if i.filename[len(RUN_DIR) + 1:] in REPORT_FILES
              or i.filename.startswith(f"{RUN_DIR}/plots/")]
    return sum(i.file_size for i in run) + sum(i.file_size for i in report)


def extract(file: Path, zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo], root: Path,
            rerender: bool = True) -> None:
    """Every member under `root`, each written no further than its recorded size and checked against
    its CRC as it is read; a damaged member is CrateInvalid, a full disk a UserError naming it.
    The free space asked for counts every copy made on that disk: the extraction, and with
    `rerender` (verify) the copy of the run its report is rendered again in."""
    files_need = sum(i.file_size for i in infos)
    need = files_need + (run_bytes(infos) if rerender else 0)
    free = shutil.disk_usage(root).free
    if need > free:
        what = (f"{files_need:,} for its files, the rest for a copy of its run to render the report "
                "again in") if rerender else "for its files"
        raise UserError(f"the crate needs {need:,} bytes to be checked ({what}) and {root.parent} has "
                        f"{free:,} free; free space there or set TMPDIR to a larger disk")
    for i in infos:
        dest = root.joinpath(*PurePosixPath(i.filename).parts)
        try:
            if i.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with zf.open(i) as src, os.fdopen(fd, "wb") as out:
                left = i.file_size
                while chunk := src.read(min(1 << 20, left + 1)):
                    left -= len(chunk)
                    if left < 0:
                        raise CrateInvalid(f"{file}: member {visible(i.filename)} holds more than its "
                                           "recorded size; the crate was altered")
                    out.write(chunk)
        except CrateInvalid:
            raise
        except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError,
                ValueError) as e:  # zlib.error: found by tests/fuzz (crate_zip); it was exit 3
            raise CrateInvalid(f"{i.filename} in {file} is truncated or damaged ({type(e).__name__}: "
                               f"{' '.join(str(e).split())}); copy or export it again") from e
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise UserError(f"no space left in {root.parent} to check the crate ({need:,} bytes "
                                "needed); free space there or set TMPDIR to a larger disk") from e
            # members that clash (a file and a directory of one name) cannot both be extracted:
            # found by tests/fuzz (crate_zip), was an internal error
            raise CrateInvalid(f"{file}: its member {visible(i.filename)} cannot be written back as a "
                               f"file ({e.strerror}); the crate was altered") from e


@contextmanager
def opened(file: Path, rerender: bool = True) -> Iterator[Crate]:
    """The crate in `file`, extracted into a temporary directory (removed afterwards); `rerender`:
    its report is to be rendered again in a second temporary directory (verify), whose space is
    asked for too."""
    file = Path(file)
    if not file.is_file():
        raise UserError(f"{file} does not exist or is not a file; give a crate `reproduce.py export` wrote")
    with open(file, "rb") as f:
        magic = f.read(4)
    if magic != b"PK\x03\x04":
        raise UserError(f"{file} is not an RO-Crate: not a zip file; give a crate `reproduce.py export` "
                        "wrote")
    try:
        zf = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as e:
        # NotImplementedError (a zip "version" zipfile does not know): tests/fuzz (crate_zip), was exit 3
        raise CrateInvalid(f"{file} is truncated or damaged: its zip directory cannot be read ({e}); "
                           "copy or export it again") from e
    with zf, files.temporary_directory("reprokit-crate-") as tmp:
        infos = zf.infolist()
        if METADATA not in {i.filename for i in infos}:
            raise UserError(f"{file} is not an RO-Crate: it holds no {METADATA}; give a crate "
                            "`reproduce.py export` wrote")
        check_members(file, infos)
        root = Path(tmp)
        extract(file, zf, infos, root, rerender)
        try:
            text = files.read_text_bounded(root / METADATA, "crate")
        except OSError as e:
            raise CrateInvalid(f"{file}: its member {METADATA} cannot be read back as a file "
                               f"({e.strerror}); the crate was altered") from e
        except UnicodeDecodeError as e:
            raise CrateInvalid(f"{METADATA} in {file} is not valid JSON ({e}); the crate was altered") from e
        try:
            meta = files.loads_strict(text)
        except ValueError as e:
            raise CrateInvalid(f"{METADATA} in {file} is not valid JSON ({e}); the crate was altered") from e
        graph = meta.get("@graph") if isinstance(meta, dict) else None
        # an @id that is not a string (a list, say) was exit 3 (tests/fuzz crate_metadata)
        if not isinstance(graph, list) or not all(isinstance(e, dict) and isinstance(e.get("@id"), str)
                                                  for e in graph):
            raise CrateInvalid(f"{METADATA} in {file} has no @graph of entities (objects with a string "
                               "@id); the crate was altered")
        crate = Crate(file, root, meta)
        crate.infos = infos
        ident = str((crate.by_id.get("./") or {}).get("identifier", ""))
        if not ident.startswith(f"{KIT_MARK}:"):
            raise UserError(f"{file} is an RO-Crate but not a run reprokit exported (its root dataset's "
                            f"identifier is not {KIT_MARK}:<run id>)")
        formats.check_version("crate", crate_version(crate.by_id.get("./") or {}), str(file))
        yield crate


def crate_version(root: dict) -> int:
    """The crate format version its root dataset states (`version`); a crate that states none is of
    version 1, and so is one whose `version` is not a number (the checks that follow name what is
    wrong with it)."""
    v = str(root.get("version", "1"))
    return int(v) if v.isdigit() else 1


def check_files(crate: Crate) -> int:
    """Every described file present with its sha256 and size; nothing undescribed. The count."""
    described = crate.described_files()
    present = {p.relative_to(crate.root).as_posix() for p in crate.root.rglob("*") if p.is_file()}
    present.discard(METADATA)
    missing = sorted(set(described) - present)
    if missing:
        raise CrateInvalid(_one_line(f"{missing[0]} is missing from the crate (its metadata describes it)",
                                     len(missing) - 1))
    extra = sorted(present - set(described))
    if extra:
        raise CrateInvalid(_one_line(f"{extra[0]} is in the crate but its metadata does not describe it "
                                     "(added after the export)", len(extra) - 1))
    wrong = []
    for rel, e in sorted(described.items()):
        path = crate.root / rel
        size = str(path.stat().st_size)
        if e.get("contentSize") is not None and str(e["contentSize"]) != size:
            wrong.append(f"{rel} has {size} bytes, the crate records {e['contentSize']} (truncated or "
                         "altered)")
        elif e.get("sha256") != export.sha256_file(path):
            wrong.append(f"{rel}: its sha256 differs from the one the crate records (altered after the "
                         "export)")
        elif not e.get("sha256"):
            wrong.append(f"{rel} has no sha256 in the crate's metadata")
    if wrong:
        raise CrateInvalid(_one_line(wrong[0], len(wrong) - 1))
    return len(described)


def _schema_of(rel: str) -> tuple[str, str | None]:
    """('run' | 'data', schema name or None) of a crate file by its path."""
    parts = rel.split("/")
    if parts[0] == RUN_DIR:
        if len(parts) == 2:
            return "run", _RUN_SCHEMAS.get(parts[1])
        if len(parts) == 3 and parts[2].endswith(".json"):
            return "run", _FOLDER_SCHEMAS.get(parts[1])
        return "run", None
    if parts[0] == DATA_DIR:
        name = kitdata.schema_of("/".join(parts[1:]))
        return "data", name if (files.SCHEMAS / f"{name}.schema.json").is_file() else None
    return "other", None


def check_schemas(crate: Crate, valid: set[tuple[str, str]] | None = None) -> int:
    """Every JSON result and data file against its schema; the count checked. `valid`: the (sha256,
    schema) pairs this process found valid already (the ledger reads many crates of one kit, whose
    data snapshots are the same files): a file whose checked sha256 is there is not parsed again, and
    every file found valid is added. Only after `check_files`, which checked each file's sha256."""
    bad, n = [], 0
    for rel, entity in sorted(crate.described_files().items()):
        where, schema = _schema_of(rel)
        if schema is None:
            continue
        n += 1
        seen = (str(entity.get("sha256")), schema)
        if valid is not None and seen in valid:
            continue
        try:
            doc = formats.upgrade(schema, _parse(crate.root / rel), rel)  # an older kit's: upgraded
        except ValueError as e:
            bad.append(f"{rel} cannot be parsed ({' '.join(str(e).split())})")
            continue
        errs = validate.errors(schema, doc)
        if errs:
            bad.append(f"{rel} does not follow the {schema} schema: {errs[0]}")
        elif valid is not None:
            valid.add(seen)
    if bad:
        raise CrateInvalid(_one_line(bad[0], len(bad) - 1) + other_kit(crate))
    return n


def _parse(path: Path):
    """A JSON (strict) or YAML file's document; ValueError when it is neither."""
    text = path.read_bytes().decode("utf-8", errors="strict")
    if path.suffix == ".json":
        return files.loads_strict(text)
    import yaml
    try:
        return files.load_yaml(text)  # a key given twice or a non-finite float: ValueError too
    except yaml.YAMLError as e:
        raise ValueError(str(e)) from e


def other_kit(crate: Crate) -> str:
    """When the crate was exported by another commit of the kit than this one: a note saying so (its
    schemas or rendering may differ from this kit's without anything being wrong with the crate)."""
    made_by = str((crate.by_id.get("#kit-export") or {}).get("identifier", "")).removeprefix("git:")
    here = files.kit_info().get("git_commit")
    if not made_by or made_by == here:
        return ""
    return (f" (the crate was exported by reprokit at commit {made_by[:12]}, this is "
            f"{here[:12] if here else 'not a git checkout'}: verify with that version)")


def check_profile(crate: Crate, roc: bool = True) -> list[str]:
    """The kit's profile checks, then (`roc`) roc-validator where installed; notes on what was
    checked."""
    own = profile.own_checks(crate.meta)
    if own:
        raise CrateInvalid(_one_line(f"{METADATA}: {own[0]} (Process Run Crate 0.5 / RO-Crate 1.1)",
                                     len(own) - 1))
    notes = ["profile: the kit's Process Run Crate 0.5 checks passed"]
    if not roc:
        return notes
    roc = profile.roc_validator(crate.file)
    if roc is None:
        notes.append("profile: roc-validator is not installed (pip install roc-validator); the kit's "
                     "checks stood in for it")
        return notes
    if roc["failures"]:
        raise CrateInvalid(_one_line(f"roc-validator {profile.PROFILE_ID}: {roc['failures'][0]}",
                                     len(roc["failures"]) - 1))
    notes.append(f"profile: roc-validator {profile.PROFILE_ID} passed at its REQUIRED level, offline")
    notes += [f"profile: not checked by roc-validator: {n}" for n in roc["not_checked"]]
    return notes


def copy_run(crate: Crate, out: Path, fix: str) -> None:
    """The crate's run directory copied to `out`; a copy that fails is one short line ending in
    `fix`."""
    try:
        shutil.copytree(crate.root / RUN_DIR, out)
    except shutil.Error as e:  # a list of (source, destination, why) of every file that failed
        raise _copy_error(e.args[0] if e.args and isinstance(e.args[0], list) else [], out, fix) from e


def _copy_error(failed: list, out: Path, fix: str) -> Exception:
    """One short line for a copy of the crate's run that failed file by file: a full disk names the
    disk, anything else the first file (the whole list was printed: 40 kB on one line)."""
    why = [str(f[2]) if isinstance(f, tuple | list) and len(f) == 3 else str(f) for f in failed]
    if any(f"[Errno {errno.ENOSPC}]" in w or f"[Errno {errno.EDQUOT}]" in w for w in why):
        return UserError(f"no space left under {out.parent} to copy the crate's run and render its "
                         f"report again; free space there or {fix}")
    first = bounded(why[0] if why else "no reason given", 200)
    more = f" (and {len(why) - 1} more)" if len(why) > 1 else ""
    return UserError(f"cannot copy the crate's run to {out}: {first}{more}; {fix}")


def check_report(crate: Crate) -> int:
    """The report rendered again from the crate equals the crate's byte for byte; the files compared."""
    stored = export.report_outputs(crate.root / RUN_DIR)
    with files.temporary_directory("reprokit-render-") as tmp:
        out = Path(tmp) / "run"
        copy_run(crate, out, "set TMPDIR to a larger disk")  # the disk's fault (exit 2), not the crate's
        try:
            export.render_recording(out, crate.root / DATA_DIR)
            fresh = export.report_outputs(out)
        except UserError as e:
            raise CrateInvalid(f"the report cannot be rendered from the crate's files alone: "
                               f"{bounded(str(e))}") from e
    diff = export.first_difference(fresh, stored)
    if diff:
        why = other_kit(crate) or (" (the crate's files were altered consistently with their checksums, "
                                    "or this kit renders differently)")
        raise CrateInvalid(f"the report re-rendered from the crate differs from the crate's: {diff}{why}")
    return len(stored)


def snapshot_digest(crate: Crate) -> str:
    """One digest of the crate's data snapshot: sha256 over each kit-data/ file's path and recorded
    sha256, in path order (after `check_files`, the recorded sha256 is the file's). Two crates of one
    digest hold the same data files."""
    h = hashlib.sha256()
    for rel, e in sorted(crate.described_files().items()):
        if rel.startswith(f"{DATA_DIR}/"):
            h.update(f"{rel}\0{e.get('sha256')}\0".encode())
    return h.hexdigest()


def report_json_difference(crate: Crate, run, data: kitdata.KitData) -> tuple[dict, str | None]:
    """(report.json as this kit computes it from the crate's run (`run`, the crate's run loaded into
    the model) and its data snapshot (`data`, a KitData of its kit-data/ files); None when the crate's
    own report.json is the same document, else where it first differs (a top-level key, or a note
    that it is of another format version)). The rendering (report.md, report.html, plots) is
    `check_report`'s."""
    from reprokit.report.context import as_stored

    stored = _parse(crate.root / RUN_DIR / "report.json")  # `check_schemas` validated it
    try:
        fresh = as_stored(run, data)
    except UserError as e:
        raise CrateInvalid(f"the report cannot be computed from the crate's files alone: "
                           f"{bounded(str(e))}") from e
    if fresh == stored:
        return fresh, None
    if isinstance(stored, dict) and stored.get("schema_version") != fresh.get("schema_version"):
        return fresh, f"its report.json is of format version {stored.get('schema_version')}"
    keys = sorted(set(fresh) | set(stored if isinstance(stored, dict) else {}))
    return fresh, f"first in `{next((k for k in keys if fresh.get(k) != stored.get(k)), '?')}`"


def check_image_archive(crate: Crate) -> list[str]:
    """`export --with-images`: the archive's structure and manifest (reprokit/containers/archive.py,
    without loading anything), and that it holds every image the actions name by ID."""
    if IMAGE_ARCHIVE not in crate.described_files():
        return []
    from reprokit.containers import archive

    try:
        manifest = archive.check_archive(crate.root / IMAGE_ARCHIVE)
    except UserError as e:
        raise CrateInvalid(f"{IMAGE_ARCHIVE}: {' '.join(str(e).split())}") from e
    held = {im["image_id"] for im in manifest["images"]}
    named = [e for e in crate.by_id.values() if "ContainerImage" in profile._types(e)]
    lacking = [e for e in named if f"sha256:{e.get('sha256')}" not in held]
    if lacking:
        raise CrateInvalid(_one_line(f"{IMAGE_ARCHIVE} does not hold image sha256:{lacking[0].get('sha256')} "
                                     f"({lacking[0].get('name')}) that the actions name", len(lacking) - 1))
    return [f"images: {IMAGE_ARCHIVE} holds {len(held)} image(s), every one the actions name (load them "
            f"elsewhere: unzip -j {crate.file.name} {IMAGE_ARCHIVE}, then `reproduce.py restore images.tar`)"]


def check_images(crate: Crate) -> list[str]:
    """With a Docker engine: each ContainerImage's ID against the local store (notices only)."""
    imgs = [e for e in crate.by_id.values() if "ContainerImage" in profile._types(e)]
    if not imgs:
        return []
    from reprokit.containers import engine
    from reprokit.errors import UserError

    try:  # the kit's one way to the engine (reprokit/containers/engine.py); verify reaps nothing
        client = engine.client(reap=False)
    except UserError as e:  # no SDK, no engine, no permission: the check is not made, and said so
        return [f"images: not checked against a local store ({e})"]
    out = []
    for e in imgs:
        ident = f"sha256:{e['sha256']}"
        try:
            client.images.get(ident)
            out.append(f"images: {e.get('name')} {ident[:19]}: in the local store")
        except Exception:
            out.append(f"images: {e.get('name')} {ident[:19]}: not in the local store (load it with "
                       "`reproduce.py restore ARCHIVE`)")
    return out


def verify(file: Path) -> list[str]:
    """Every check in order; the lines that say what was checked. Raises CrateInvalid (exit 1) at the
    first failure, UserError (exit 2) when the file is not a crate."""
    with opened(file) as crate:
        return verify_opened(crate)


def verify_opened(crate: Crate, images: bool = True) -> list[str]:
    """`verify` of a crate `opened` already (the ledger reads the run it verified from the same
    extraction); `images=False` leaves out the last step, the notices about this machine's Docker
    store (the crate itself is verified without it)."""
    n_files = check_files(crate)
    archived = check_image_archive(crate)
    n_schemas = check_schemas(crate)
    notes = check_profile(crate)
    n_report = check_report(crate)
    seen = check_images(crate) if images else []
    return [f"{crate.file}: run {crate.run_id}",
            f"files: {n_files} files, each with its sha256 and size as recorded; no file undescribed",
            f"schemas: {n_schemas} files valid against their schemas",
            *notes,
            f"report: re-rendered from the crate's files alone, byte-identical ({n_report} files)",
            *archived, *seen]


def render_report(file: Path, out: Path) -> list[Path]:
    """`reproduce.py report FILE`: the crate's run directory with its report rendered from the crate
    alone, written to `out` (which must not exist); its files are checked against their checksums
    first. It is rendered beside `out` (.NAME.part) and renamed last: `out` appears complete or not
    at all. The report files written."""
    from reprokit import checks as kitchecks

    out = Path(out)
    if out.exists() or out.is_symlink():  # a dangling link too: copytree would follow it (exit 3)
        raise UserError(f"{out} exists; give another directory with --out (the run is written there)")
    kitchecks.writable_dir(out.parent, f"--out {out}: its parent directory", "give --out a directory on a "
                       "writable disk")  # /proc/nope/out was exit 3
    with opened(file, rerender=False) as crate:
        check_files(crate)
        need, disk = run_bytes(crate.infos), kitchecks.nearest_existing(out.parent)
        free = shutil.disk_usage(disk).free
        if need > free:
            raise UserError(f"--out {out}: the crate's run and its report need {need:,} bytes and {disk} "
                            f"has {free:,} free; free space there or give --out a directory on another "
                            "disk")
        part = out.with_name(f".{out.name}.part")
        with files.stop_signals_held():
            shutil.rmtree(part, ignore_errors=True)  # left by a render that was killed
        try:
            copy_run(crate, part, "give --out a directory on a disk with room")  # the disk's: exit 2
            try:
                export.render_recording(part, crate.root / DATA_DIR)
            except UserError as e:
                raise CrateInvalid(f"the report cannot be rendered from the crate's files alone: "
                                   f"{bounded(str(e))}") from e
            with files.stop_signals_held():
                part.rename(out)
        finally:
            with files.stop_signals_held():
                shutil.rmtree(part, ignore_errors=True)
    return [out / n for n in export.report_outputs(out)]
