"""Record how long each test module took, from a pytest log, in tests/data/module_seconds.json.

    python tools/record_test_seconds.py LOG --command TEXT --machine TEXT --load TEXT [--write]

LOG is the output of `scripts/test.sh --durations=0 ...` (pytest's table of every setup, call and
teardown time). tests/conftest.py sends the test groups to the two pytest-xdist workers heaviest
first (longest-processing-time first), so the longest groups do not end up alone at the tail of the
run; a group's cost is the sum of its modules' seconds here. The figures only order the work: a module
missing here counts as 0 s and runs after the measured ones; nothing is decided by them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "data" / "module_seconds.json"
ROW = re.compile(r"^([\d.]+)s (?:setup|call|teardown)\s+(tests/\S+?\.py)::")


def module_seconds(log: str) -> dict[str, float]:
    seconds: Counter[str] = Counter()
    for line in log.splitlines():
        m = ROW.match(line)
        if m:
            seconds[m.group(2)] += float(m.group(1))
    return {k: round(v, 1) for k, v in sorted(seconds.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--command", required=True, help="the command that wrote the log")
    ap.add_argument("--machine", required=True, help="the machine the log was measured on")
    ap.add_argument("--load", required=True, help="what else ran beside the tests")
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(REPO)}")
    a = ap.parse_args(argv)
    seconds = module_seconds(a.log.read_text())
    if not seconds:
        print(f"{a.log}: no pytest durations table; run the tests with --durations=0", file=sys.stderr)
        return 2
    doc = {"what": "seconds of setup, call and teardown per test module, summed: the order in which "
                   "tests/conftest.py hands the test groups to the pytest-xdist workers",
           "measured": {"command": a.command, "date": date.today().isoformat(),
                        "machine": a.machine, "load": a.load},
           "seconds": seconds}
    text = json.dumps(doc, indent=1) + "\n"
    if a.write:
        OUT.write_text(text)
        print(f"wrote {OUT.relative_to(REPO)}: {len(seconds)} modules, {sum(seconds.values()):.0f} s")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
