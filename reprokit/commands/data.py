"""`reproduce.py data [--check DIR]`: describe the data sets, or check a data directory.

Without --check: every data set of reprokit/data/datasets.yaml with its origin, files, documented
sizes, the suite cells that read it and the stand-in they use when no data directory is given.
With --check DIR: which files are present, their sha256 against the recorded digest (an unknown
digest is recorded in the lock on first use), and the line/token/vocabulary counts the bench
loaders give against the documented ones. Exit status 0 when the directory checks out, 1 when a
file is missing from a data set, a digest differs, or (with --strict) a documented count differs;
2 for a user error (no such directory, unreadable lock or data file).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from reprokit import checks, formats
from reprokit.catalog import datasets, suites
from reprokit.errors import UserError


class _LockOption(argparse.Action):
    """--data-lock PATH (the name `run` gives the same file), or its old spelling --lock, which still
    works, unlisted; messages name the spelling used."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.lock_option = option_string


def add_arguments(p) -> None:
    p.add_argument("--check", metavar="DIR", help="check the data files in DIR")
    p.add_argument("--data-lock", metavar="PATH", action=_LockOption,
                   help="lock file of recorded digests (default: $REPROKIT_DATA_LOCK or "
                        "~/.cache/reprokit/data-lock.json); the same option as run's --data-lock")
    p.add_argument("--lock", dest="data_lock", metavar="PATH", action=_LockOption, help=argparse.SUPPRESS)
    p.set_defaults(lock_option="--data-lock")
    p.add_argument("--update-lock", action="store_true",
                   help="accept the files in DIR: record their digests where they differ from "
                        "the lock (never overrides a digest in datasets.yaml)")
    p.add_argument("--strict", action="store_true",
                   help="fail when a verified, recomputed or third-party count differs")
    p.add_argument("--subset", action="store_true",
                   help="the files are a deliberate subset (a trimmed copy): counts far from the "
                        "documented ones are said, not failed, and the digests are recorded as a subset")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _n(v) -> str:
    return f"{v:,}" if isinstance(v, int) else str(v)


def usage() -> dict[str, dict[str, list[str]]]:
    """{data set: {suite: [cell ids]}} over every suite that loads now."""
    out: dict[str, dict[str, list[str]]] = {n: {} for n in datasets.catalogue()}
    for name in suites.suite_names():
        try:
            suite = suites.load_suite(name)
        except UserError:  # a suite being edited must not hide the others
            continue
        for c in suite.cells:
            use = datasets.dataset_for(c.workload, c.params)
            if use:
                out[use[0]].setdefault(name, []).append(c.id)
    return out


def describe(lock_path: Path) -> dict:
    corpora = datasets.bench_corpora()
    cells = usage()
    sets = {}
    for name, ds in datasets.catalogue().items():
        entry = dict(ds)
        entry["cells"] = cells[name]
        entry["stand_ins"] = {r["corpus"]: {
            "generator": corpora.GENERATOR, "vocab_size": corpora.STAND_INS[r["corpus"]]["vocab_size"],
            "splits": dict(corpora.STAND_INS[r["corpus"]]["splits"])} for r in ds["readings"]}
        sets[name] = entry
    try:
        recorded = len(datasets.load_lock(lock_path)["files"])
    except UserError as e:
        recorded = str(e)
    return {"schema_version": formats.version("data_sets"), "kind": "data_sets", "datasets": sets,
            "lock": {"path": str(lock_path), "recorded_files": recorded}}


def print_description(doc: dict) -> None:
    for name, ds in doc["datasets"].items():
        print(f"{name}: {ds['title']} ({ds['level']} level)")
        for o in ds["origin"]:
            print(f"  origin: {o['statement']} [{o['source']}]")
        a = ds["archive"]
        bits = [x for x in (a["name"], a["url"], a["md5"] and f"md5 {a['md5']}") if x]
        print(f"  archive: {' '.join(bits) if bits else 'not recorded'} [{a['source']}]")
        print(f"    {a['unpack_note']}")
        lic = ds["licence"]
        print(f"  licence: {lic['text'] or lic['note']}")
        where = ", ".join("DIR" if s == "." else f"DIR/{s}" for s in ds["layout"])
        print(f"  files (looked for in {where}):")
        for f in ds["files"]:
            digest = f["sha256"] or "sha256 unknown (recorded on first use)"
            print(f"    {f['name']} ({f['split']}): {digest}")
        for r in ds["readings"]:
            toks = ", ".join(f"{s} {_n(t['value'])} ({t['status']})" for s, t in r["tokens"].items())
            print(f"  reading {r['corpus']}: {r['description']}")
            print(f"    vocabulary {_n(r['vocab']['value'])} ({r['vocab']['status']}); tokens {toks}")
        for u in ds["used_by"]:
            print(f"  used by {u['workload']} (params.dataset {u['dataset']}, {u['corpus']}, "
                  f"{'/'.join(u['splits'])}): {u['purpose']}")
        for suite, ids in sorted(ds["cells"].items()):
            print(f"    suite {suite}: {len(ids)} cells, e.g. {ids[0]}")
        for corpus, st in ds["stand_ins"].items():
            sizes = ", ".join(f"{s} {_n(v)}" for s, v in st["splits"].items())
            print(f"  without --data: stand-in {corpus} (bench/corpora.py {st['generator']}: random "
                  f"token ids, vocabulary {_n(st['vocab_size'])}, {sizes}; speed only, labelled "
                  "stand-in in every result and report row)")
        print()
    lock = doc["lock"]
    print(f"lock: {lock['path']} ({lock['recorded_files']} digests recorded)"
          if isinstance(lock["recorded_files"], int) else f"lock: {lock['recorded_files']}")
    print("check a directory: reproduce.py data --check DIR; use it: reproduce.py run --suite S "
          "--data DIR")


def print_check(rep: dict) -> None:
    print(f"data directory: {rep['dir']} (lock: {rep['lock']})")
    for s in rep["datasets"]:
        if s["status"] == "absent":
            print(f"{s['name']}: absent (its cells keep the stand-in)")
        else:
            state = s["status"]
            wrong = f"{s['name']}: not this data set"
            if state == "ok" and any(q.startswith(wrong) for q in rep["problems"]):
                state = "files present, NOT this data set (its counts: below)"
            print(f"{s['name']}: {state} (in {s['dir']})")
        if s["archive"]:
            a = s["archive"]
            print(f"  archive {a['name']}: {a['verdict']}" + (f" (md5 {a['md5']})" if a["md5"] else "")
                  + "; unpack it so the files are found")
        for f in s["files"]:
            if not f["present"]:
                print(f"  {f['name']}: MISSING")
                continue
            line = f"  {f['name']}: {_n(f['size'])} bytes, sha256 {f['sha256']}: {f['verdict']}"
            if f["verdict"] == "mismatch":
                line += f" (expected {f['expected']} from {f['expected_from']})"
            elif f["verdict"] in ("recorded", "re-recorded"):
                line += " (first use)" if f["verdict"] == "recorded" else " (--update-lock)"
            elif f["verdict"] == "unrecorded":
                line += f" ({f['why']})"
            print(line)
        for c in s["counts"]:
            what = f"{c['quantity']} {c['reading'] + ' ' if c['reading'] else ''}{c['split']}"
            mark = "match" if c["verdict"] == "match" else "DIFFERS"
            print(f"  {what}: {_n(c['measured'])} vs documented {_n(c['documented'])} "
                  f"({c['status']}): {mark}")
        for line in s.get("subset") or []:  # --subset: said, not failed
            print(f"  subset (--subset): {line}")
    differ = sum(c["verdict"] == "differs" for s in rep["datasets"] for c in s["counts"])
    if rep["ok"]:
        print("result: ok" + (f" (digests; {differ} counts differ from the documented ones, "
                              "see their status; --strict fails on verified, recomputed or "
                              "third-party ones)" if differ else ""))
    else:
        print("result: FAILED: " + "; ".join(rep["problems"]))


def run(args) -> int:
    lock_path = Path(args.data_lock).expanduser() if args.data_lock else datasets.default_lock_path()
    opt = args.lock_option
    if not args.check:
        if args.update_lock or args.strict or args.subset:
            raise UserError("--update-lock, --strict and --subset apply to --check DIR only; add --check DIR "
                            "or drop them")
        doc = describe(lock_path)
        if args.json:
            print(json.dumps(doc, indent=1))
        else:
            print_description(doc)
        return 0
    if lock_path.is_dir():
        raise UserError(f"{opt} {lock_path} is a directory; pass {opt} PATH naming a file")
    if not lock_path.exists():  # the first check records digests there
        checks.output_file(lock_path, opt, f"pass {opt} PATH naming a file in a directory you "
                           "can write to (digests are recorded there on first use)")
    rep = datasets.check_dir(Path(args.check), lock_path, update_lock=args.update_lock,
                             strict=args.strict, subset=args.subset)
    if args.json:
        print(json.dumps(rep, indent=1))
    else:
        print_check(rep)
    return 0 if rep["ok"] else 1
