"""Measure what a GPU flavour's build downloads: each image's wheelhouse step, run as its recipe says.

    python scripts/bench_gpu_wheelhouse.py [--image DIR ...] [--skip-over MB] [--json FILE]

For each GPU flavour (images/*/recipe.yaml, `flavours.gpu.wheelhouse.command`: `pip download` with the
target interpreter's --python-version/--abi/--platform and the hash-pinned requirements file) the
command runs in a scratch copy of the image's directory with pip's cache off, so the figure is a first
build's download: wall seconds, files and bytes. Images whose wheelhouse is larger than --skip-over MB
(by the index's file sizes; the modern stack's CUDA 12 wheels) are not downloaded: their time is
estimated from the rate measured on the others, and marked so. What the wheelhouse cannot show (the
base image, apt, CUDA/cuDNN layers, a source build, files from hosts CI cannot reach) is listed as
not measured. The output is a JSON document (the README's GPU checklist quotes it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent


def index_sizes(requirements: Path) -> tuple[int, int]:
    """(bytes, files) of the pinned files by PyPI's simple JSON API, for the skip decision."""
    total, n = 0, 0
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip().rstrip("\\").strip()
        if "==" not in line or line.startswith("-"):
            continue
        name = line.split("==", 1)[0].split("[", 1)[0].strip()
        req = urllib.request.Request(f"https://pypi.org/simple/{name}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            doc = json.load(r)
        version = line.split("==", 1)[1].split(";", 1)[0].split()[0]
        sizes = [f.get("size") or 0 for f in doc["files"] if f"-{version}-" in f["filename"]
                 or f["filename"].endswith(f"-{version}.tar.gz")]
        if sizes:
            total += max(sizes)  # an upper bound: the largest file of that release
            n += 1
    return total, n


def measure(image_dir: Path, skip_over_mb: float) -> dict:
    recipe = yaml.safe_load((image_dir / "recipe.yaml").read_text())
    gpu = (recipe.get("flavours") or {}).get("gpu")
    out: dict = {"image": image_dir.name}
    if not gpu or not gpu.get("wheelhouse"):
        out["skipped"] = "no GPU flavour with a wheelhouse"
        return out
    cmd = list(gpu["wheelhouse"]["command"])
    req = image_dir / gpu["requirements"]
    bound, pins = index_sizes(req)
    out.update({"command": cmd, "pins": pins, "index_bytes_upper_bound": bound,
                "not_measured": [b for b in (recipe.get("base_images") or {})]})
    if bound > skip_over_mb * 1e6:
        out["skipped"] = (f"wheelhouse up to {bound / 1e6:.0f} MB by the index, "
                          f"over --skip-over {skip_over_mb:g} MB")
        return out
    with tempfile.TemporaryDirectory(prefix="reprokit-wh-") as tmp:
        ctx = Path(tmp) / image_dir.name
        shutil.copytree(image_dir, ctx)
        pip = [sys.executable, "-m", "pip", "--no-cache-dir", "--disable-pip-version-check", *cmd[1:]]
        t0 = time.perf_counter()
        proc = subprocess.run(pip, cwd=ctx, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        files = sorted((ctx / "wheels").glob("*")) if (ctx / "wheels").is_dir() else []
        out.update({"returncode": proc.returncode, "wall_s": round(wall, 1), "files": len(files),
                    "bytes": sum(f.stat().st_size for f in files)})
        if proc.returncode:
            out["error"] = (proc.stderr.strip().splitlines() or ["?"])[-1]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", action="append", help="images/<dir> (default: every recipe)")
    ap.add_argument("--skip-over", type=float, default=2000.0, metavar="MB")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args(argv)
    dirs = ([Path(d) for d in args.image] if args.image
            else sorted(p.parent for p in (REPO / "images").glob("*/recipe.yaml")))
    rows = []
    for d in dirs:
        r = measure(d if d.is_absolute() else REPO / d, args.skip_over)
        rows.append(r)
        if "wall_s" in r:
            print(f"{r['image']}: {r['files']} files, {r['bytes'] / 1e6:.1f} MB in {r['wall_s']:.1f} s"
                  + (f" FAILED: {r['error']}" if r.get("error") else ""), flush=True)
        else:
            print(f"{r['image']}: not downloaded ({r['skipped']})", flush=True)
    done = [r for r in rows if r.get("wall_s") and not r.get("returncode")]
    rate = sum(r["bytes"] for r in done) / sum(r["wall_s"] for r in done) if done else None
    for r in rows:
        if "index_bytes_upper_bound" in r and "wall_s" not in r and rate:
            r["estimated_wall_s"] = round(r["index_bytes_upper_bound"] / rate, 1)
            r["estimate"] = "index size / the rate measured on the other wheelhouses in this run"
    doc = {"kind": "gpu_wheelhouse_bench", "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "python": sys.version.split()[0], "rate_bytes_per_s": rate, "images": rows}
    if rate:
        print(f"rate: {rate / 1e6:.1f} MB/s over {len(done)} wheelhouses")
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 1 if any(r.get("returncode") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
