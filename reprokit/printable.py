"""Text the kit did not write, made safe to print and to render: control characters shown, not sent.

A reason from a framework's exception, a string in a results file or an argument on the command line
may hold ESC/CSI/OSC sequences; printed raw they would move the cursor, retitle or clear the terminal
(`cat report.md` runs them). `visible` shows each C0/C1 control character (tab and newline excepted)
and DEL as a Python-style escape (`\\x1b`), so nothing typed is lost and nothing is executed."""

from __future__ import annotations

import re

# C0 controls but tab (\t) and newline (\n), DEL, and the C1 controls (U+0080-U+009F, CSI is U+009B)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(m: re.Match) -> str:
    return f"\\x{ord(m.group()):02x}"


def visible(text: str) -> str:
    """`text` with every control character but tab and newline written as \\xNN."""
    return _CONTROL.sub(_escape, text)


# a colour or weight change (SGR: ESC [ digits and semicolons m), the only sequence the kit itself
# writes (rich, for `compare` on a terminal); it cannot move the cursor, retitle or clear anything
_SGR = re.compile("\x1b\\[[0-9;]*m")


def terminal_text(text: str) -> str:
    """What the kit's standard streams pass on (reprokit/cli.py): `text` with every control character
    but tab and newline written as \\xNN, SGR colour sequences kept. A path or id holding an OSC or
    CSI sequence (`report $'d\\e]0;pw\\a/RUN'` would retitle the terminal) prints visibly."""
    if not _CONTROL.search(text):
        return text
    out, at = [], 0
    for m in _SGR.finditer(text):
        out.append(visible(text[at:m.start()]))
        out.append(m.group())
        at = m.end()
    out.append(visible(text[at:]))
    return "".join(out)


def bounded(text: str, limit: int = 300) -> str:
    """`text` on one line (whitespace runs as one space, control characters shown) and at most about
    `limit` characters: a longer one keeps its start and its end around ' ... ' (a library's error
    can list every file it failed on: shutil.Error of a copy onto a full disk was 40 kB)."""
    text = visible(" ".join(str(text).split()))
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]} ... {text[-(limit - head):]}"
