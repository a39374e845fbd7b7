#!/usr/bin/env python3
"""Which verdicts change when runs are judged with today's data: each RUN is rejudged into a temporary
directory (`reproduce.py report RUN --rejudge OUT`, the kit's own command) and the two report.json
files are compared number by number (verdict and tolerance) and claim by claim (status); a run kept
without its report is rendered in a copy first.

    python scripts/rejudge_changes.py docs/sample-run/*/ docs/gpu-run/*/ docs/readme-run/*/

Prints one line per change and a count per run; nothing under RUN is written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _report(path: Path) -> dict:
    return json.loads((path / "report.json").read_text())


def changes(run: Path) -> tuple[list[str], int, int, int]:
    """(the changed verdicts and claims as lines, numbers compared, claims compared, numbers whose
    tolerance changed)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rejudged"
        p = subprocess.run([sys.executable, str(REPO / "reproduce.py"), "report", str(run), "--rejudge",
                            str(out)], capture_output=True, text=True)
        if p.returncode:
            return [f"rejudge failed (exit {p.returncode}): {p.stderr.strip()[-300:]}"], 0, 0, 0
        if not (run / "report.json").is_file():  # a run kept without its report: rendered in a copy
            copy = Path(tmp) / "as-judged"
            shutil.copytree(run, copy, symlinks=True)
            subprocess.run([sys.executable, str(REPO / "reproduce.py"), "report", str(copy)],
                           capture_output=True, text=True, check=True)
            run = copy
        before, after = _report(run), _report(out)
    lines, tol = [], 0
    old = {n["id"]: n for n in before["numbers"]}
    for n in after["numbers"]:
        o = old.get(n["id"])
        if o is None:
            lines.append(f"{n['id']}: new in today's data ({n['verdict']})")
            continue
        tol += o["analysis"].get("tolerance") != n["analysis"].get("tolerance")
        if o["verdict"] != n["verdict"]:
            lines.append(f"{n['id']}: {o['verdict']} -> {n['verdict']} (tolerance "
                         f"{o['analysis'].get('tolerance')} -> {n['analysis'].get('tolerance')})")
    oldc = {c["id"]: c for c in before.get("claims") or []}
    for c in after.get("claims") or []:
        o = oldc.get(c["id"])
        if o is not None and o["status"] != c["status"]:
            lines.append(f"claim {c['id']}: {o['status']} -> {c['status']}")
    return lines, len(after["numbers"]), len(after.get("claims") or []), tol


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for arg in argv:
        run = Path(arg)
        lines, n, c, tol = changes(run)
        print(f"{run}: {len(lines)} changed of {n} numbers and {c} claims ({tol} numbers' tolerance "
              "changed)")
        for line in lines:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
