"""Command line: `reproduce.py [COMMAND] ...` (also installed as `reprokit`).

Without a command, `--suite S` means `run --suite S`. Each command is one module in
reprokit/commands/ with `add_arguments(parser)` and `run(args) -> int`; only the module of the command
given is imported (`--help` imports none), so the command line answers at once.
Exit status: 0 every cell measured; 1 some cells failed, or none measured anything (results still
written, each reason in them); 2 a user error: one line naming the problem and the fix, checked
before any work starts (bad numbers, paths, archives, data files, a GPU request without a GPU:
reprokit/checks.py, docs/BAD_INPUTS.md); 3 an internal error, which is a bug in the kit (one line;
`--debug` shows the traceback to report); 128 + the signal when interrupted (130 on Ctrl-C).
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
from collections.abc import Iterable

from reprokit import __version__
from reprokit.commands import COMMANDS
from reprokit.errors import UserError
from reprokit.printable import terminal_text, visible

EXIT_STATUS = """exit status:
  0      every cell measured; for the other commands, done
  1      some cell failed or is missing, or no cell measured anything (each reason is in the
         results and the report); for `data --check`, the directory did not check out
  2      a user error: one line naming the problem and the fix (docs/BAD_INPUTS.md)
  3      an internal error, a bug in the kit: one line; re-run with --debug for the traceback
  128+N  interrupted by signal N (130 on Ctrl-C); finished cells are kept (--resume RUN)"""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: a bad option is a UserError like every other bad input
    (no usage block), naming the problem and where the options are described."""

    def error(self, message: str):
        raise UserError(f"{message}; see `{self.prog} --help`")


# OS errors that mean the disk or the permissions, not the kit: one line, exit 2
_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def _module(name: str):
    from reprokit import commands

    return commands.module(name)


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with `commands` the full parser of those only (the others are
    listed by name and help text, their modules not imported)."""
    wanted = set(COMMANDS if commands is None else commands)
    p = _Parser(prog="reproduce.py", description=__doc__.splitlines()[0], epilog=EXIT_STATUS,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"reprokit {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.add_argument("--debug", action="store_true", help="show tracebacks")
        if name in wanted:
            mod = _module(name)
            mod.add_arguments(sp)
            sp.set_defaults(func=mod.run)
    return p


def _command_of(argv: list[str]) -> str | None:
    """The command an argument list names: its first argument that is not an option."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


class _ReaderGone:
    """A standard stream that outlives its reader: once a write or flush meets a closed pipe
    (`run ... 2>&1 | head -1`), the stream's descriptor is pointed at /dev/null and the work goes
    on; only the printing ends (a closed pipe must not abort the run mid-way). It also
    passes every write through printable.terminal_text: no control sequence from a path, an id or a
    results file reaches the terminal."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def _gone(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            self._stream.write(terminal_text(text))  # nothing written raw reaches the terminal
            return len(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()
            self._stream.flush()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _survive_closed_pipes() -> None:
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _ReaderGone):
            try:
                stream.fileno()
            except (AttributeError, OSError, ValueError):  # not a real file (tests capture it)
                continue
            setattr(sys, name, _ReaderGone(stream))


def _leading_options(argv: list[str]) -> int:
    """How many of argv's first arguments are the top level's own flags (--debug)."""
    n = 0
    while n < len(argv) and argv[n] == "--debug":
        n += 1
    return n


class _Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP outside a run (whose driver has its own handlers: reprokit/run/lifecycle.py),
    raised where the command is so its `with` blocks remove their temporary files as on Ctrl-C
    (otherwise SIGTERM during verify left 3.9 GB in $TMPDIR, during export a copy of the run)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop(signum, _frame):
    raise _Stopped(signum)


def _catch_termination() -> dict:
    """Our handler for SIGTERM and SIGHUP where they are at their default; the handlers replaced."""
    replaced = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                replaced[sig] = signal.signal(sig, _stop)
        except (ValueError, OSError):  # not the main thread (tests call main() from threads)
            pass
    return replaced


def _restore(replaced: dict) -> None:
    for sig, old in replaced.items():
        try:
            signal.signal(sig, old)
        except (ValueError, OSError, TypeError):
            pass


def _interrupted(command: str | None, e: KeyboardInterrupt) -> int:
    signum = getattr(e, "signum", signal.SIGINT)
    what = {"run": "finished cells are kept (resume with --resume RUN)",
            "export": "no crate was written; its temporary copy of the run was removed",
            "verify": "nothing was verified; the extracted crate was removed",
            "report": "the report was not written"}.get(command or "", "nothing was left half-written")
    print(f"reproduce.py: interrupted by {signal.Signals(signum).name}; {what}", file=sys.stderr)
    return 128 + signum


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _survive_closed_pipes()
    lead = _leading_options(argv)
    if lead and lead < len(argv) and argv[lead] in COMMANDS:  # `--debug list`: the command's flag
        argv = [argv[lead], *argv[:lead], *argv[lead + 1:]]
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv = ["run", *argv]
    if not argv:
        argv = ["--help"]
    command = _command_of(argv)
    replaced = _catch_termination()
    try:
        return _main(argv, command)
    finally:  # main() called in a process that goes on (the tests) leaves its handlers as they were
        _restore(replaced)


def _main(argv: list[str], command: str | None) -> int:
    parser = build_parser([command] if command else [])
    args = None
    try:
        args = parser.parse_args(argv)  # numbers are checked here (reprokit/checks.py `option`)
        return int(args.func(args) or 0)
    except UserError as e:
        print(f"reproduce.py: error: {visible(' '.join(str(e).split()))}", file=sys.stderr)  # one line
        return e.exit_code
    except KeyboardInterrupt as e:
        return _interrupted(command, e)
    except OSError as e:
        if getattr(args, "debug", False):
            raise
        if e.errno not in _ENVIRONMENT_ERRNOS:
            return _internal(e)
        where = f"{e.filename}: " if e.filename else ""
        print(f"reproduce.py: error: {visible(where)}{e.strerror}; {_disk_fix(command, e.errno)}",
              file=sys.stderr)
        return 2
    except Exception as e:
        if getattr(args, "debug", False):
            raise
        return _internal(e)


def _disk_fix(command: str | None, err: int | None) -> str:
    """The fix of a full or read-only disk, or of permissions, for the command that met it: only a
    run has finished cells to keep (`export` and `report CRATE` said so too)."""
    how = {errno.ENOSPC: "free space on its disk", errno.EDQUOT: "free space on its disk",
           errno.EROFS: "give a place on a writable disk"}.get(err or 0, "fix its permissions")
    if command == "run":
        return f"{how}, then resume (a run keeps its finished cells: --resume RUN)"
    what = {"export": "export again (no crate was written)",
            "verify": "verify again (TMPDIR may name another disk)",
            "report": "render again"}.get(command or "", "try again")
    return f"{how}, then {what}"


def _internal(e: BaseException) -> int:
    """Exit status 3: a bug in the kit, on one line."""
    print(f"reproduce.py: internal error: {type(e).__name__}: {visible(' '.join(str(e).split()))} (a bug in "
          "reprokit: re-run with --debug for the traceback and report it)", file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main())
