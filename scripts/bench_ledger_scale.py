#!/usr/bin/env python3
"""How `reproduce.py ledger` grows with the number of crates: builds of N crates and one more added.

    python scripts/bench_ledger_scale.py [--sizes 100,300,1000] [--jobs J] [--work DIR] [--write FILE]

The crates are made from the committed runs (docs/sample-run, docs/gpu-run, docs/calibration,
docs/readme-run): each run is exported once by the kit's own `export` (its report rendered first where
the committed run holds none), then made into crate k of N: its own machine (host id and GPU UUIDs in
run.json and every cell result, made from k), every sample of every cell result times 1 + 0.03 sin(k),
and its report.json computed again from them by the kit, so that no two crates share a run, a cell file
or a number. Each crate's metadata carries the changed files' sha256 and size: every check the ledger
makes passes (it computes each report.json again and compares it whole). Its report.md, report.html and
plots are the base run's: the ledger reads none of them; `verify`, which renders them again, would
refuse these crates.

For each size N: `reproduce.py ledger` over the N crates into a fresh store (the time and the peak RSS of
the largest process, from getrusage of the finished command's process tree), then the same with one
crate more in the folder (the N known by their file's sha256 and not opened; the one read, the views
written again). Prints one line per build; --write FILE keeps the figures with the command, the machine
and the date as JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SOURCES = ("docs/sample-run", "docs/gpu-run", "docs/calibration", "docs/readme-run")


def committed_runs() -> list[Path]:
    return sorted(p.parent for src in SOURCES for p in (REPO / src).glob("*/run.json"))


def base_crates(work: Path) -> list[Path]:
    """One crate per committed run, by the kit's `export` (a copy of the run, its report rendered)."""
    from reprokit import results
    from reprokit.crate import export
    from reprokit.report import report

    out = []
    for run in committed_runs():
        crate = work / "base" / f"{run.name}.crate.zip"
        if not crate.is_file():
            copy = work / "copies" / run.name
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(run, copy)
            report.render(results.RunDir(copy))
            export.export(results.RunDir(copy), crate)
        out.append(crate)
    return out


def _gpu_uuid(k: int, old: str) -> str:
    h = hashlib.sha256(f"{k}:{old}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _vary_run(doc: dict, k: int, swap: dict[str, str]) -> dict:
    """Machine k: its host id and its GPUs' UUIDs (`swap`: old to new)."""
    fp = doc.get("host_fingerprint") or {}
    if fp.get("host_id"):
        swap[fp["host_id"]] = fp["host_id"] = hashlib.sha256(f"bench-machine-{k}".encode()).hexdigest()[:16]
    for g in fp.get("gpus") or []:
        if isinstance(g, dict) and g.get("uuid"):
            swap[g["uuid"]] = g["uuid"] = _gpu_uuid(k, g["uuid"])
    return doc


def _vary_cell(doc: dict, k: int, swap: dict[str, str], factor: float) -> dict:
    for g in doc.get("gpus") or []:
        if isinstance(g, dict) and g.get("uuid"):
            swap[g["uuid"]] = g["uuid"] = _gpu_uuid(k, g["uuid"])
    for m in (doc.get("metrics") or {}).values():
        for key in ("samples", "raw_seconds"):
            if isinstance(m, dict) and isinstance(m.get(key), list):
                m[key] = [x * factor if isinstance(x, int | float) and not isinstance(x, bool) else x
                          for x in m[key]]
    return doc


class Bases:
    """The base crates, each extracted once (its run and its data snapshot as a KitData)."""

    def __init__(self, crates: list[Path], work: Path):
        self.crates, self.work, self.data = crates, work, {}

    def extracted(self, i: int) -> tuple[Path, object]:
        from reprokit import kitdata

        root = self.work / "extracted" / self.crates[i].name
        if i not in self.data:
            shutil.rmtree(root, ignore_errors=True)
            with zipfile.ZipFile(self.crates[i]) as z:
                z.extractall(root)
            self.data[i] = kitdata.KitData(root / "kit-data")
        return root / "run", self.data[i]


def varied(bases: Bases, k: int, out: Path) -> Path:
    """Crate k made from base k mod len(bases): machine k (host id, GPU UUIDs) and every sample times
    1 + 0.03 sin(k) in run.json and the cell results; report.json computed again from them by the kit
    (its report.md, .html and plots are the base's: the ledger reads none of them, `verify` would
    refuse the crate for them); the metadata's sha256 and size of each changed file with them."""
    from reprokit import kitdata, results
    from reprokit.reader.load import load
    from reprokit.report.context import build_context

    i = k % len(bases.crates)
    run_src, data = bases.extracted(i)
    factor = 1 + 0.03 * math.sin(k)
    swap: dict[str, str] = {}
    changed: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="ledger-scale-run-") as tmp:
        run = Path(tmp) / "run"
        shutil.copytree(run_src, run)
        doc = _vary_run(json.loads((run / "run.json").read_bytes()), k, swap)
        changed["run/run.json"] = json.dumps(doc, indent=1).encode()
        (run / "run.json").write_bytes(changed["run/run.json"])
        for p in sorted((run / "cells").glob("*.json")):
            data_k = json.dumps(_vary_cell(json.loads(p.read_bytes()), k, swap, factor), indent=1).encode()
            changed[f"run/cells/{p.name}"] = data_k
            p.write_bytes(data_k)
        with kitdata.using(data):
            context = build_context(load(results.RunDir(run)))
        changed["run/report.json"] = json.dumps(context, indent=1, ensure_ascii=False).encode()
    with zipfile.ZipFile(bases.crates[i]) as src:
        members = [(info, src.read(info.filename)) for info in src.infolist()]
    meta_name = "ro-crate-metadata.json"
    meta = json.loads(next(d for info, d in members if info.filename == meta_name))
    for e in meta["@graph"]:
        new = changed.get(e.get("@id"))
        if new is not None:
            e["sha256"] = hashlib.sha256(new).hexdigest()
            e["contentSize"] = str(len(new)) if isinstance(e.get("contentSize"), str) else len(new)
    changed[meta_name] = json.dumps(meta, indent=1).encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info, data_b in members:
            dst.writestr(info, changed.get(info.filename, data_b))
    return out


_MEASURED = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]).returncode; "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(r)")


def ledger(folder: Path, out: Path, jobs: int) -> dict:
    """`reproduce.py ledger` once, under a small wrapper process whose children are only that command's
    processes: its wall time, the peak RSS of its largest process (getrusage RUSAGE_CHILDREN), its
    summary line."""
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", _MEASURED, sys.executable, str(REPO / "reproduce.py"), "ledger",
                        str(folder), "--out", str(out), "--jobs", str(jobs)], capture_output=True, text=True)
    wall = time.perf_counter() - t
    *errs, peak = p.stderr.strip().splitlines() or ["0"]
    if p.returncode != 0 or errs:
        sys.exit(f"ledger failed (exit {p.returncode}): {' '.join(errs)[-2000:]}")
    return {"wall_s": round(wall, 2), "peak_rss_mib": round(int(peak) / 1024, 1),
            "summary": p.stdout.splitlines()[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,300,1000")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--work", type=Path, default=None,
                    help="kept between calls: the base crates and the crates of each size (default: a "
                         "temporary folder); remove its crates-N after a change to the kit's analysis, "
                         "which would refuse them")
    ap.add_argument("--write", type=Path, default=None)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    load_before = os.getloadavg()
    work = a.work or Path(tempfile.mkdtemp(prefix="ledger-scale-"))
    t = time.perf_counter()
    bases = Bases(base_crates(work), work)
    print(f"{len(bases.crates)} base crates from the committed runs in {time.perf_counter() - t:.0f} s",
          flush=True)
    rows = []
    for n in sizes:
        folder = work / f"crates-{n}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"c{n:05d}.crate.zip").unlink(missing_ok=True)
        t = time.perf_counter()
        for k in range(n):  # a crate made by an earlier call with --work is kept (made again if damaged)
            crate = folder / f"c{k:05d}.crate.zip"
            if not crate.is_file() or not zipfile.is_zipfile(crate):
                varied(bases, k, crate)
        made = time.perf_counter() - t
        out = work / f"ledger-{n}"
        shutil.rmtree(out, ignore_errors=True)
        first = ledger(folder, out, a.jobs)
        varied(bases, n, folder / f"c{n:05d}.crate.zip")
        more = ledger(folder, out, a.jobs)
        size = sum(p.stat().st_size for p in folder.iterdir())
        row = {"crates": n, "crate_bytes": size, "made_s": round(made, 1), "build": first, "one_more": more,
               "store_bytes": (out / "ledger.sqlite").stat().st_size,
               "ledger_json_bytes": (out / "ledger.json").stat().st_size,
               "index_html_bytes": (out / "index.html").stat().st_size}
        rows.append(row)
        print(f"{n} crates ({size / 2**20:.0f} MiB): built in {first['wall_s']} s (peak RSS "
              f"{first['peak_rss_mib']} MiB), one more added in {more['wall_s']} s; store "
              f"{row['store_bytes'] / 2**20:.1f} MiB, ledger.json "
              f"{row['ledger_json_bytes'] / 2**20:.1f} MiB, "
              f"index.html {row['index_html_bytes'] / 2**20:.1f} MiB", flush=True)
        if not a.work:
            shutil.rmtree(folder)
    if a.write:
        command = " ".join(["python", "scripts/bench_ledger_scale.py", *sys.argv[1:]])
        doc = {"kind": "ledger_scale", "command": command,
               "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "machine": {"cpus": len(os.sched_getaffinity(0)), "python": platform.python_version(),
                           "load_avg_before": load_before},
               "jobs": a.jobs, "base_runs": len(bases.crates), "sizes": rows}
        a.write.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
