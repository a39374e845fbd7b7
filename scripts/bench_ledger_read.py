#!/usr/bin/env python3
"""How fast the ledger reads one crate, this tree against another commit, as a ratio in one run.

    python scripts/bench_ledger_read.py --before COMMIT [--crates 42] [--rounds 3] [--work DIR]

Makes `--crates` crates as scripts/bench_ledger_scale.py does (kept in DIR/crates-read), checks out
COMMIT into a temporary git worktree, and then, `--rounds` times, alternating, reads every crate but
the first in one process of each kit (the first read warms the process's caches) and prints the CPU
seconds per crate. Each kit reads the crates with its own reprokit/ledger/read.py.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_READ = """
import sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from reprokit.ledger import read as R
assert R.__file__.startswith(sys.argv[1]), R.__file__
items = R.find([Path(sys.argv[2])])
cache = R.Cache(Path(tempfile.mkdtemp()))
R.read(items[0], cache)
t = time.process_time()
for it in items[1:]:
    R.read(it, cache)
print((time.process_time() - t) / (len(items) - 1))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--crates", type=int, default=42)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "ledger-read")
    a = ap.parse_args()
    sys.path.insert(0, str(REPO / "scripts"))
    import bench_ledger_scale as scale

    bases = scale.Bases(scale.base_crates(a.work), a.work)
    folder = a.work / "crates-read"
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(a.crates):
        if not (folder / f"c{k:05d}.crate.zip").is_file():
            scale.varied(bases, k, folder / f"c{k:05d}.crate.zip")
    with tempfile.TemporaryDirectory(prefix="ledger-read-before-") as tmp:
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", tmp, a.before],
                       check=True, capture_output=True)
        try:
            got: dict[str, list[float]] = {a.before: [], "this tree": []}
            for _ in range(a.rounds):
                for name, root in ((a.before, tmp), ("this tree", str(REPO))):
                    out = subprocess.run([sys.executable, "-c", _READ, root, str(folder)], check=True,
                                         capture_output=True, text=True, cwd=tempfile.gettempdir())
                    got[name].append(float(out.stdout.strip()))
                    print(f"{name}: {got[name][-1]:.3f} s CPU per crate", flush=True)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", tmp], check=False)
    b, t = statistics.median(got[a.before]), statistics.median(got["this tree"])
    print(f"medians of {a.rounds}: {a.before} {b:.3f} s, this tree {t:.3f} s per crate: {b / t:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
