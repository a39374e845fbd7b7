"""The data sets (reprokit/data/datasets.yaml): which cells use which, checking a data directory,
and the local lock of file digests recorded on first use.

A data directory DIR holds the real files of any of the data sets, either directly or in one
subdirectory per data set (the `layout` of each entry, e.g. DIR/ptb/ptb.train.txt or
DIR/simple-examples/data/ptb.train.txt). Files are parsed with the loaders of bench/corpora.py
(files.bench_module: bench/ is stdlib-only), so the host counts exactly what the workloads will read.

No digest of any file is known to the project (datasets.yaml has null), so the first check records
each file's sha256 in the lock (default ~/.cache/reprokit/data-lock.json, REPROKIT_DATA_LOCK
overrides) and every later check compares against it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from reprokit import checks, files, formats, kitdata, validate
from reprokit.errors import UserError

STRICT_STATUSES = ("verified", "recomputed", "third-party")
LOCK_ENV = "REPROKIT_DATA_LOCK"


@kitdata.memoized
def catalogue() -> dict[str, dict]:
    """datasets.yaml's `datasets`, validated."""
    return kitdata.load("datasets")["datasets"]


def stand_in_specs() -> dict[str, dict]:
    """Every reading of datasets.yaml as bench/corpora.py makes its stand-in: {corpus: {"level",
    "vocab_size", "vocab_status", "splits": {split: tokens}, "split_status": {split: source},
    "reading"}}. The job file carries it (facts.stand_ins), so bench/ keeps no copy of the sizes."""
    specs = {}
    for ds in catalogue().values():
        for r in ds["readings"]:
            specs[r["corpus"]] = {
                "level": ds["level"], "vocab_size": r["vocab"]["value"],
                "vocab_status": f"{r['vocab']['status']}: {r['vocab']['source']}",
                "splits": {split: t["value"] for split, t in r["tokens"].items()},
                "split_status": {split: f"{t['status']}: {t['source']}" for split, t in r["tokens"].items()},
                "reading": r["description"]}
    return specs


def dataset_for(workload: str, params: dict) -> tuple[str, dict] | None:
    """(data set name, used_by entry) of a cell, or None when it reads no data set files."""
    wanted = params.get("dataset")
    for name, ds in catalogue().items():
        for use in ds["used_by"]:
            if use["dataset"] == wanted and fnmatch.fnmatchcase(workload, use["workload"]):
                return name, use
    return None


def bench_corpora():
    """bench/corpora.py as a private module (the host never puts bench/ on sys.path), given the
    stand-in sizes of datasets.yaml as a job file gives them to it."""
    mod = files.bench_module("corpora")
    mod.configure(stand_in_specs())
    return mod


def read_corpus(corpus: str, data_dir: Path) -> dict[str, dict]:
    """{split: {"tokens": n, "vocab": v}} of a reading, parsed exactly as the workloads parse it."""
    c = bench_corpora()
    d = str(data_dir)
    if corpus == "ptb":
        splits = c.load_ptb(d)
    elif corpus in ("wikitext-2", "wikitext-2-kawakami"):
        splits = c.load_wikitext2(d, "standard" if corpus == "wikitext-2" else "kawakami")
    elif corpus == "nietzsche":
        splits = {"train": c.load_nietzsche(d)}
    elif corpus == "wikitext-2-char-keras-mxnet":
        ids, vocab, _ = c.load_wikitext2_char(d)
        return {"train": {"tokens": len(ids), "vocab": len(vocab)}}
    else:
        raise KeyError(f"no reader for corpus {corpus!r}")
    return {s: {"tokens": x.n_tokens, "vocab": x.vocab_size} for s, x in splits.items()}


# -- the lock ------------------------------------------------------------------------------------
def default_lock_path() -> Path:
    env = os.environ.get(LOCK_ENV)
    return Path(env) if env else Path.home() / ".cache" / "reprokit" / "data-lock.json"


def load_lock(path: Path) -> dict:
    if not path.exists():
        return {"schema_version": formats.version("data_lock"), "kind": "data_lock", "files": {}}
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"data lock {path} is not readable JSON ({e}); delete it (its digests are "
                        "recorded again on the next check) or pass another --data-lock") from None
    errs = validate.errors("data_lock", doc)
    if errs:
        raise UserError(f"data lock {path} does not match the data_lock schema: {errs[0]}; delete "
                        "it (its digests are recorded again on the next check) or pass another "
                        "--data-lock")
    return doc


def save_lock(path: Path, lock: dict) -> None:
    try:
        files.write_json_atomic(path, lock, "data_lock")
    except OSError as e:
        raise UserError(f"cannot write the data lock {path} ({e}); pass a writable "
                        "--data-lock path") from None


# -- checking a directory -----------------------------------------------------------------------
def file_digest(path: Path, algo: str = "sha256") -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def resolve_dir(root: Path, ds: dict) -> Path | None:
    """The first directory of the data set's layout under root holding any of its files."""
    for sub in ds["layout"]:
        d = root if sub == "." else root / sub
        if any((d / f["name"]).is_file() for f in ds["files"]):
            return d
    return None


def _count_line(path: Path) -> int:
    """Lines as `for line in file` counts them (a last line without its newline counted too), read in
    blocks: no line is ever held whole."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def _compare(kind: str, split: str | None, measured: int, doc: dict, reading: str | None) -> dict:
    return {"reading": reading, "split": split, "quantity": kind, "measured": measured,
            "documented": doc["value"], "status": doc["status"], "source": doc["source"],
            "strict": doc["status"] in STRICT_STATUSES,
            "verdict": "match" if measured == doc["value"] else "differs"}


def _archive(root: Path, ds: dict) -> dict | None:
    a = ds["archive"]
    if not a["name"] or not (root / a["name"]).is_file():
        return None
    out = {"name": a["name"], "path": str(root / a["name"]), "md5": None, "verdict": "present"}
    if a["md5"]:
        out["md5"] = file_digest(root / a["name"], "md5")
        out["verdict"] = "match" if out["md5"] == a["md5"] else "mismatch"
        out["expected_md5"] = a["md5"]
    return out


def _unreadable(path_hint: str, name: str, ds: dict, e: Exception) -> UserError:
    where = ds["archive"]["name"] or "the data set's release"
    return UserError(f"{path_hint}: cannot be read as {name} ({type(e).__name__}: {e}); replace "
                     f"it with the file from {where} (see `reproduce.py data`)")


def check_dataset(name: str, ds: dict, root: Path, lock: dict, now: str, update_lock: bool,
                  parse: bool) -> dict:
    """Presence, digests (recording unknown ones in `lock`), line and token counts of one data set."""
    d = resolve_dir(root, ds)
    out: dict[str, Any] = {"name": name, "dir": str(d) if d else None, "status": "absent",
                           "files": [], "counts": [], "archive": _archive(root, ds)}
    if d is None:
        return out
    pending: dict[str, dict] = {}
    for f in ds["files"]:
        p = d / f["name"]
        entry: dict[str, Any] = {"name": f["name"], "split": f["split"], "path": str(p),
                                 "present": p.is_file(), "size": None, "sha256": None,
                                 "expected": None, "expected_from": None, "verdict": "missing"}
        out["files"].append(entry)
        if not entry["present"]:
            continue
        entry["size"] = p.stat().st_size
        entry["sha256"] = digest = file_digest(p)
        key = f"{name}/{f['name']}"
        locked = lock["files"].get(key)
        if f["sha256"]:
            entry.update(expected=f["sha256"], expected_from="datasets.yaml")
        elif locked:
            entry.update(expected=locked["sha256"],
                         expected_from=f"lock (recorded {locked['recorded']} from {locked['path']})")
        if entry["expected"] is None or (update_lock and not f["sha256"]
                                         and entry["expected"] != digest):
            # staged: check_dir writes it to the lock only when the whole data set checks out
            pending[key] = {"sha256": digest, "size": entry["size"], "recorded": now,
                            "path": str(p.resolve()), "replaces": locked["sha256"] if locked else None}
            entry["verdict"] = "re-recorded" if locked else "recorded"
        else:
            entry["verdict"] = "match" if entry["expected"] == digest else "mismatch"
        if "lines" in f:
            out["counts"].append(_compare("lines", f["split"], _count_line(p), f["lines"], None))
    verdicts = {e["verdict"] for e in out["files"]}
    out["status"] = ("incomplete" if "missing" in verdicts else
                     "mismatch" if "mismatch" in verdicts else "ok")
    out["pending_lock"] = pending
    if parse and out["status"] == "ok":
        for r in ds["readings"]:
            try:
                got = read_corpus(r["corpus"], d)
            except (UnicodeDecodeError, ValueError) as e:
                raise _unreadable(str(d), name, ds, e) from None
            for split, doc in r["tokens"].items():  # train, valid, test as in the yaml
                if split in got:
                    out["counts"].append(_compare("tokens", split, got[split]["tokens"], doc,
                                                  r["corpus"]))
            out["counts"].append(_compare("vocab", "train", got["train"]["vocab"], r["vocab"],
                                          r["corpus"]))
    return out


def _data_root(root: Path) -> Path:
    """DIR, resolved; a one-line UserError when it is missing or not a directory."""
    root = Path(root).expanduser()
    if not root.exists():
        raise UserError(f"data directory {root} does not exist; pass the directory holding the "
                        "data files (see `reproduce.py data` for the layout)")
    if not root.is_dir():
        raise UserError(f"data directory {root} is not a directory; pass the directory holding "
                        "the data files, not a file (unpack archives first)")
    return root.resolve()


def _all_text(root: Path, cat: dict, chosen: list[str]) -> None:
    """Every file of the chosen data sets is text, before any digest is recorded: the lock holds
    only those."""
    for n in chosen:
        d = resolve_dir(root, cat[n])
        for f in cat[n]["files"] if d is not None else []:
            if (d / f["name"]).is_file():
                checks.text_file(d / f["name"], f"replace it with the file from "
                                 f"{cat[n]['archive']['name'] or 'the data set release'}, or remove "
                                 f"the {n} files to use the stand-in (see `reproduce.py data`)")


def implausible(s: dict) -> list[str]:
    """Each count of a checked data set too far from its documented value for the files to be the
    data set (datasets.yaml `plausibility`; documented counts of status verified, recomputed or
    third-party only), as "lines of train is 1, documented 42,068 (third-party)"."""
    out = []
    for c in s["counts"] if _plausibility() is not None else []:
        doc = c["documented"]
        if (c["strict"] and isinstance(doc, (int, float)) and doc > 0
                and abs(c["measured"] - doc) > _plausibility() * doc):
            out.append(f"{c['quantity']} of {c['split']} is {c['measured']:,}, documented {doc:,} "
                       f"({c['status']})")
    return out


def _plausibility() -> float | None:
    return (kitdata.load("datasets").get("plausibility") or {}).get("relative_tolerance")


def not_this_data_set(name: str, off: list[str]) -> str:
    """The one problem line of a data set whose counts are implausible: how many, and the first."""
    more = f" and {len(off) - 1} more" if len(off) > 1 else ""
    return (f"{name}: not this data set: {off[0]}{more}, more than {_plausibility():.0%} off the "
            "documented counts")


def _set_problems(s: dict, strict: bool, subset: bool = False) -> list[str]:
    """One line per problem of a checked data set."""
    found = []
    if s["status"] in ("incomplete", "mismatch"):
        found.append(f"{s['name']}: {s['status']}")
    off = implausible(s)
    if subset:
        s["subset"] = [f"{s['name']}: {o}" for o in off]  # said, not failed: the user says so
    elif off:
        found.append(not_this_data_set(s["name"], off) + " (if they are a deliberate subset: --subset)")
    if (s["archive"] or {}).get("verdict") == "mismatch":
        found.append(f"{s['name']}: archive md5 mismatch")
    if strict:
        found += [f"{s['name']}: {c['quantity']} {c['reading'] or ''} {c['split']} differs"
                  for c in s["counts"] if c["strict"] and c["verdict"] == "differs"]
    return found


def check_dir(root: Path, lock_path: Path, names: list[str] | None = None,
              update_lock: bool = False, parse: bool = True, strict: bool = False,
              subset: bool = False) -> dict:
    """Check DIR for every data set (or `names`); record unknown digests in the lock file. With
    `subset` the files are a deliberate subset: counts far from the documented ones are said, not
    failed, and their digests are recorded marked as a subset."""
    root = _data_root(root)
    lock = load_lock(lock_path)
    now = files.utcnow()
    cat = catalogue()
    chosen = names if names is not None else list(cat)
    _all_text(root, cat, chosen)
    sets = [check_dataset(n, cat[n], root, lock, now, update_lock, parse) for n in chosen]
    problems, lock_changed = [], False
    for s in sets:
        found = _set_problems(s, strict, subset)
        pending = s.pop("pending_lock", {})
        if pending and not found:  # a digest is recorded only for a data set that checked out
            if subset:
                pending = {k: dict(v, subset=True) for k, v in pending.items()}
            lock["files"].update(pending)
            lock_changed = True
        elif pending:  # never a "first use" digest of a file whose set failed: it would later
            for f in s["files"]:  # make the good file look like a mismatch
                if f["verdict"] in ("recorded", "re-recorded"):
                    f["verdict"] = "unrecorded"
                    f["why"] = f"not in the lock until {s['name']} checks out: see the result line"
        problems += found
    if lock_changed:
        save_lock(lock_path, lock)
    if not any(s["status"] != "absent" for s in sets):
        problems.append("no data set files found")
    return {"schema_version": formats.version("data_check"), "kind": "data_check", "dir": str(root),
            "lock": str(lock_path), "strict": strict, "subset": subset, "checked": now, "datasets": sets,
            "problems": problems, "ok": not problems}


# -- a run with real data -----------------------------------------------------------------------
def prepare_run(cells, root: str | Path, lock_path: Path | None = None, say=print,
                subset: bool = False) -> dict:
    """For `run --data DIR`: verify (or record) the digests of every data set the cells read and
    return the run's data record: {"root", "lock", "datasets": {name: {"data_dir", "sha256"}},
    "stand_ins": [names absent from DIR]}. Data sets absent from DIR keep their stand-ins."""
    lock_path = Path(lock_path) if lock_path else default_lock_path()
    needed = sorted({u[0] for c in cells if (u := dataset_for(c.workload, c.params))})
    report = check_dir(Path(root), lock_path, names=needed, parse=False, subset=subset)
    if not needed:
        say("data: no selected cell reads a data set; --data changes nothing in this run")
    data = {"root": report["dir"], "lock": str(lock_path), "datasets": {}, "stand_ins": []}
    for s in report["datasets"]:
        if s["status"] == "absent":
            data["stand_ins"].append(s["name"])
            say(f"data: no {s['name']} files in {report['dir']}; its cells use the stand-in")
            continue
        off = implausible(s) if not subset else []
        if off:
            raise UserError(f"--data: {not_this_data_set(s['name'], off)}; give the data set's files, "
                            "or pass --data-subset if they are a deliberate subset (the run then says so)")
        bad = [f for f in s["files"] if f["verdict"] in ("missing", "mismatch")]
        if bad:
            f = bad[0]
            if f["verdict"] == "missing":
                raise UserError(f"--data: {f['path']} is missing ({s['name']} is incomplete); "
                                f"add it or remove the other {s['name']} files to use the stand-in")
            raise UserError(f"--data: {f['path']} has sha256 {f['sha256']}, but {f['expected_from']}"
                            f" says {f['expected']}; put the original file back, or accept this one "
                            f"with `reproduce.py data --check {report['dir']} --update-lock`")
        for f in s["files"]:
            if f["verdict"] in ("recorded", "re-recorded"):
                say(f"data: recorded sha256 of {f['path']} in {lock_path} (first use)")
        data["datasets"][s["name"]] = {"data_dir": s["dir"],
                                       "sha256": {f["name"]: f["sha256"] for f in s["files"]}}
        if subset:
            data["datasets"][s["name"]]["subset"] = True
    return data


def cell_data_params(cell, data: dict | None) -> dict:
    """The params a cell gets from the run's data record (data_dir, sha256), or {}."""
    if not data:
        return {}
    use = dataset_for(cell.workload, cell.params)
    if use is None or use[0] not in data["datasets"]:
        return {}
    d = data["datasets"][use[0]]
    return {"data_dir": d["data_dir"], "sha256": dict(d["sha256"])}


# -- provenance of a cell result ----------------------------------------------------------------
def provenance(extra: dict) -> dict | None:
    """What data a cell ran on, from its result's `extra.dataset` labels: {"kind": "stand-in" | "real",
    "text": ...}, or None when it records none (or a synthetic workload's own generated data)."""
    ds = extra.get("dataset")
    if not isinstance(ds, dict):
        return None
    labels = [ds] if "stand_in" in ds else [v for v in ds.values()
                                             if isinstance(v, dict) and "stand_in" in v]
    if not labels:
        return None
    if any(lab.get("stand_in") for lab in labels):
        names = sorted({str(lab.get("name")) for lab in labels if lab.get("stand_in")})
        return {"kind": "stand-in", "text": f"stand-in data ({', '.join(names)})"}
    real = [lab for lab in labels if lab.get("sha256")]
    if not real:
        return None
    files = ", ".join(f"{lab.get('file')} sha256 {str(lab['sha256'])[:12]}" for lab in real)
    return {"kind": "real", "text": f"real files ({files})"}
