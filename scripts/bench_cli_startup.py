#!/usr/bin/env python3
"""How long the command line takes to answer: `reproduce.py --help` and `reproduce.py list`.

    python scripts/bench_cli_startup.py [--runs 7] [--repo DIR] [--json]

Each command runs `--runs` times in a fresh interpreter (the one running this script), output to
/dev/null, after one untimed run that fills the data cache; the figure is the median wall time.
`list` is also timed without the data cache (REPROKIT_DATA_CACHE empty: every data file parsed and
validated), which is what the first `list` after a change to reprokit/data costs. `--repo DIR`
measures another checkout of the kit (e.g. a `git worktree` of an older commit) with the same
interpreter, for a before/after figure. Prints the medians with the machine's load average and CPU
count; the load of other jobs moves these figures, so compare runs made back to back.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CASES = (
    ("--help", ["--help"], None),
    ("list", ["list"], None),
    ("list, no data cache", ["list"], ""),
)


def time_command(repo: Path, args: list[str], runs: int, cache: str | None) -> list[float]:
    """Wall seconds of `runs` fresh runs of reproduce.py ARGS in `repo` (after one untimed run)."""
    env = dict(os.environ, PYTHONPATH=str(repo))
    if cache is not None:
        env["REPROKIT_DATA_CACHE"] = cache
    cmd = [sys.executable, str(repo / "reproduce.py"), *args]
    out = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, timeout=120)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise SystemExit(f"bench_cli_startup.py: error: {' '.join(args)} exited {p.returncode}: "
                             f"{p.stderr.strip().splitlines()[-1:]}")
        if i:
            out.append(wall)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="timed runs per command (default 7)")
    ap.add_argument("--repo", type=Path, default=REPO, help="the checkout to measure (default: this one)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    repo = args.repo.resolve()
    if not (repo / "reproduce.py").is_file():
        print(f"bench_cli_startup.py: error: {repo} has no reproduce.py; give a checkout of the kit",
              file=sys.stderr)
        return 2
    figures = []
    with tempfile.TemporaryDirectory(prefix="reprokit-data-cache-") as cache_dir:
        for name, cmd, cache in CASES:
            # the warm cases use a cache of their own, so an earlier run of the kit does not count
            walls = time_command(repo, cmd, args.runs, cache_dir if cache is None else cache)
            figures.append({"command": f"reproduce.py {' '.join(cmd)}", "case": name,
                            "median_s": round(statistics.median(walls), 3),
                            "min_s": round(min(walls), 3), "max_s": round(max(walls), 3), "runs": len(walls)})
    doc = {"repo": str(repo), "python": sys.version.split()[0], "cpus": os.cpu_count(),
           "loadavg_1min": round(os.getloadavg()[0], 2), "figures": figures}
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    print(f"{repo} (Python {doc['python']}, {doc['cpus']} CPUs, load {doc['loadavg_1min']})")
    for f in figures:
        print(f"  {f['case']:<22} median {f['median_s']:.3f} s  (min {f['min_s']:.3f}, max {f['max_s']:.3f}, "
              f"{f['runs']} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
