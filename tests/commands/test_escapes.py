"""Terminal escape sequences in strings the kit did not write (an argument, a cell's reason, a
run.json string) are shown, never sent: not on the error line, not in report.md or report.html
(rendered raw, `cat report.md` executed them)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from reprokit import cli
from reprokit.printable import visible

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
OSC = "\x1b]0;pwned\x07"  # retitles the terminal
CSI = "\x1b[2J\x9b31m"  # clears the screen (7-bit CSI), then an 8-bit CSI


def test_visible_shows_controls_and_keeps_text():
    assert visible(f"a{OSC}b") == "a\\x1b]0;pwned\\x07b"
    assert visible(CSI) == "\\x1b[2J\\x9b31m"
    assert visible("tab\tnew\nline é ü ∞") == "tab\tnew\nline é ü ∞"


def test_an_escape_in_an_argument_is_shown_on_the_error_line(capsys):
    assert cli.main(["run", "--suite", "smoke", "--cells", f"{OSC}no/such/*"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned\\x07" in err


def test_an_escape_in_a_reason_and_in_run_json_is_not_rendered_raw(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(RUNS / "cpu-a", d)
    run = json.loads((d / "run.json").read_text())
    run["cells"] = [e for e in run["cells"]
                    if (d / "cells" / (e["cell_id"].replace("/", "__") + ".json")).is_file()]
    entry = run["cells"][0]
    path = d / "cells" / (entry["cell_id"].replace("/", "__") + ".json")
    cell = json.loads(path.read_text())
    cell["status"] = entry["status"] = "failed"
    cell["reason"] = entry["reason"] = f"RuntimeError: {OSC}boom{CSI}"
    run["host_fingerprint"]["hostname"] = f"host{OSC}"
    path.write_text(json.dumps(cell))
    (d / "run.json").write_text(json.dumps(run))
    assert cli.main(["report", str(d)]) == 1
    for name in ("report.md", "report.html"):
        text = (d / name).read_text()
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, name
        assert "\\x1b]0;pwned\\x07boom" in text, name


def test_an_escape_in_a_results_path_is_shown_by_report(tmp_path):
    """Printed raw, `report $'d\\e]0;pw\\a/RUN'` retitled the terminal. Every line
    the kit prints now passes through printable.terminal_text (reprokit/cli.py), in a real process."""
    import subprocess
    import sys

    d = tmp_path / f"d{OSC}" / "run"
    shutil.copytree(RUNS / "cpu-a", d)
    p = subprocess.run([sys.executable, "-m", "reprokit.cli", "report", str(d)], capture_output=True,
                       cwd=Path(__file__).resolve().parents[2])
    out = p.stdout + p.stderr
    assert b"\x1b" not in out and b"\x07" not in out, out[-500:]
    assert b"\\x1b]0;pwned\\x07" in out


def test_the_kit_s_own_colours_pass_and_a_cell_id_prints_on_one_line():
    from reprokit.console import text_table
    from reprokit.printable import terminal_text

    assert terminal_text("\x1b[1mbold\x1b[0m") == "\x1b[1mbold\x1b[0m"  # SGR: the kit's own (rich)
    assert terminal_text(f"a{OSC}b\rc") == "a\\x1b]0;pwned\\x07b\\x0dc"
    table = text_table("t", ["cell"], [["x\ny"], ["ok"]])
    assert table.splitlines()[3] == "x\\ny"  # the id on its row, the newline shown
