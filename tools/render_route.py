"""The report's render route: which reprokit modules `render(rundir)` enters, and how often control comes
back into a module it had already left (does the data pass through the stages once?).

    python tools/render_route.py RUN_DIR [--json OUT]

RUN_DIR (results/<run>/: run.json, cells/, kit-data/) is copied to a temporary directory, which
`reprokit.report.report.render` then writes into (the run itself is not touched). The call runs under
`sys.setprofile`; every Python call event whose code lies in a module under reprokit/ is recorded with
the reprokit module that called it: the nearest reprokit frame below it, so a filter that jinja2 calls,
or a function pandas calls back, counts for its own module, called from the module that called jinja2
or pandas. Code outside reprokit/ (the libraries, the compiled report templates, code made by `exec`
such as dataclasses' __init__) is not recorded. A module body that an import runs during the render,
and what it calls, is left out too: that is importing, not rendering. Only the calling thread is traced
(the render starts no thread).

The stages, earliest first, are read from STAGES in tests/core/test_import_cycles.py: reprokit.X and
reprokit.X.* are stage X's; reprokit.files (a flat module) is the flat stage's, the one naming
"reprokit". The figures printed (and, with --json, written with their lists):

  1. modules entered: distinct reprokit modules at least one of whose functions ran, by stage;
  2. module edges: distinct (caller module, callee module) pairs, caller != callee;
  3. backward edges: distinct edges whose callee's stage is earlier than the caller's, all of them and
     those whose caller is not in the report stage (a module the report passed the data down to,
     reaching back up to an earlier stage);
  4. returns to a module already left: calls into module M from another module while M is on no frame
     of the current call chain but had been entered before; counted as events (they grow with the
     run's cells), distinct M and distinct (caller module, M);
  5. the 15 (caller module, M) pairs with the most return events.

Run it from the checkout it measures (the reprokit it imports must be this tool's checkout's: set
PYTHONPATH to the checkout's root in a git worktree).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
import textwrap
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STAGES_FILE = REPO / "tests" / "core" / "test_import_cycles.py"
REPORT_STAGE = "report"
TOP = 15

DEFINITIONS = {
    "modules_entered": "distinct reprokit modules at least one of whose functions ran during the render",
    "module_edges": "distinct (caller module -> callee module) pairs with caller != callee",
    "backward_edges": "distinct edges whose callee's stage is earlier than the caller's stage",
    "backward_edges_below_report": "backward edges whose caller is not in the report stage (a module the "
                                   "data was passed down to, reaching back up to an earlier stage)",
    "returns": "calls into module M from another module while M is on no frame of the current call chain "
               "but had been entered before (events depend on the run's number of cells)",
    "top_return_pairs": f"the {TOP} (caller module -> M) pairs with the most return events",
}

Edge = tuple[str, str]


# -- stages ------------------------------------------------------------------------------------------
def load_stages(path: Path = STAGES_FILE) -> list[set[str]]:
    """STAGES of tests/core/test_import_cycles.py, earliest first."""
    spec = importlib.util.spec_from_file_location("test_import_cycles", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load the stages from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [set(names) for names in module.STAGES]


def stage_names(stages: list[set[str]]) -> list[str]:
    """A short name per stage: "flat" for the one holding the flat modules, else its package(s)."""
    return ["flat" if "reprokit" in names else "/".join(sorted(names)) for names in stages]


def stage_of(module: str, stages: list[set[str]]) -> int:
    """The rank of a module's stage: reprokit.X and reprokit.X.* are stage X's."""
    top = module.split(".")[1] if "." in module else module
    for rank, names in enumerate(stages):
        if top in names:
            return rank
    raise SystemExit(f"{module} is in no stage: add it to STAGES in {STAGES_FILE}")


# -- recording ---------------------------------------------------------------------------------------
class ModuleOf:
    """Maps a code object's file name to its dotted reprokit module, or None outside reprokit/; with
    `by_package`, to its package instead (reprokit.X for reprokit/X/*, `reprokit` for a flat module): the
    route between stages, which splitting a stage into more modules does not change."""

    def __init__(self, package: Path, by_package: bool = False):
        self.package = package.resolve()
        self.by_package = by_package
        self._cache: dict[str, str | None] = {}

    def __call__(self, filename: str) -> str | None:
        try:
            return self._cache[filename]
        except KeyError:
            self._cache[filename] = name = self._name(filename)
            return name

    def _name(self, filename: str) -> str | None:
        path = Path(filename)
        if path.suffix != ".py" or not path.is_absolute():
            return None
        try:
            parts = path.resolve().relative_to(self.package).with_suffix("").parts
        except ValueError:
            return None
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if self.by_package:
            parts = parts[:1] if len(parts) > 1 else ()
        return ".".join((self.package.name, *parts))


@dataclass
class Event:
    """A call from one module into another: the caller (None for the render call itself), the callee,
    and whether the callee had a frame on the call chain at that moment."""

    caller: str | None
    callee: str
    on_stack: bool


@dataclass
class Recorder:
    """The profile hook: keeps the chain of reprokit frames and records the cross-module calls."""

    module_of: ModuleOf
    stack: list[tuple[FrameType, str]] = field(default_factory=list)
    on_stack: Counter[str] = field(default_factory=Counter)
    events: list[Event] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)
    importing: int = 0  # module bodies (imports during the render) on the chain
    imported: list[str] = field(default_factory=list)  # the modules whose bodies were left out

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            self._call(frame)
        elif event == "return" and self.stack and self.stack[-1][0] is frame:
            _, module = self.stack.pop()
            self.on_stack[module] -= 1
            if frame.f_code.co_name == "<module>":
                self.importing -= 1

    def _call(self, frame: FrameType) -> None:
        module = self.module_of(frame.f_code.co_filename)
        if module is None:
            return
        if frame.f_code.co_name == "<module>":
            self.importing += 1
            self.imported.append(module)
        elif not self.importing:
            self._record(module)
        self.stack.append((frame, module))
        self.on_stack[module] += 1

    def _record(self, module: str) -> None:
        self.calls[module] += 1
        caller = self.stack[-1][1] if self.stack else None
        if caller != module:
            self.events.append(Event(caller, module, self.on_stack[module] > 0))


def trace_render(run: Path, by_package: bool = False) -> Recorder:
    """Render a copy of the run under the profile hook (modules, or packages with `by_package`)."""
    import reprokit
    from reprokit import results
    from reprokit.report import report

    recorder = Recorder(ModuleOf(Path(reprokit.__file__).parent, by_package))
    with tempfile.TemporaryDirectory(prefix="render-route-") as tmp:
        copy = Path(tmp) / run.name
        shutil.copytree(run, copy, symlinks=True)
        rundir = results.RunDir(copy)
        sys.setprofile(recorder.hook)
        try:
            report.render(rundir)
        finally:
            sys.setprofile(None)
    if recorder.stack:
        raise SystemExit(f"the recorded call chain did not close: {len(recorder.stack)} frames left open")
    return recorder


# -- figures -----------------------------------------------------------------------------------------
def modules_entered(events: Iterable[Event]) -> list[str]:
    return sorted({e.callee for e in events})


def module_edges(events: Iterable[Event]) -> Counter[Edge]:
    """Call events per (caller, callee) edge; the render call itself has no caller and no edge."""
    return Counter((e.caller, e.callee) for e in events if e.caller is not None)


def backward_edges(edges: Iterable[Edge], stages: list[set[str]]) -> list[Edge]:
    return sorted((a, b) for a, b in edges if stage_of(b, stages) < stage_of(a, stages))


def below_report(edges: Iterable[Edge], stages: list[set[str]]) -> list[Edge]:
    report = stage_names(stages).index(REPORT_STAGE)
    return [(a, b) for a, b in edges if stage_of(a, stages) != report]


def returns(events: Iterable[Event]) -> Counter[Edge]:
    """Return events per (caller, M): M entered before, on no frame of the chain, called from another
    module."""
    seen: set[str] = set()
    out: Counter[Edge] = Counter()
    for e in events:
        if e.caller is not None and e.callee in seen and not e.on_stack:
            out[(e.caller, e.callee)] += 1
        seen.add(e.callee)
    return out


def by_stage(modules: Iterable[str], stages: list[set[str]]) -> dict[str, list[str]]:
    names = stage_names(stages)
    out: dict[str, list[str]] = {}
    for module in sorted(modules, key=lambda m: (stage_of(m, stages), m)):
        out.setdefault(names[stage_of(module, stages)], []).append(module)
    return out


def _edge_rows(edges: Iterable[Edge], counts: Counter[Edge], key: str = "calls") -> list[dict[str, Any]]:
    return [{"caller": a, "callee": b, key: counts[(a, b)]} for a, b in edges]


def figures(recorder: Recorder, stages: list[set[str]]) -> dict[str, Any]:
    """All figures and their lists, as written by --json."""
    entered = modules_entered(recorder.events)
    edges = module_edges(recorder.events)
    back = backward_edges(edges, stages)
    low = below_report(back, stages)
    ret = returns(recorder.events)
    per_module: Counter[str] = Counter()
    for (_, module), n in ret.items():
        per_module[module] += n
    ranked = sorted(ret.items(), key=lambda item: (-item[1], item[0]))
    return {
        "definitions": DEFINITIONS,
        "stages": stage_names(stages),
        "modules_entered": {"count": len(entered), "by_stage": by_stage(entered, stages)},
        "module_edges": {"count": len(edges), "edges": _edge_rows(sorted(edges), edges)},
        "backward_edges": {"count": len(back), "edges": _edge_rows(back, edges)},
        "backward_edges_below_report": {"count": len(low), "edges": _edge_rows(low, edges)},
        "returns": {"events": sum(ret.values()), "modules": len(per_module), "pairs": len(ret),
                    "by_module": dict(sorted(per_module.items(), key=lambda kv: (-kv[1], kv[0]))),
                    "by_pair": _edge_rows([e for e, _ in ranked], ret, "events")},
        "top_return_pairs": _edge_rows([e for e, _ in ranked[:TOP]], ret, "events"),
        "recorded": {"reprokit_call_events": sum(recorder.calls.values()),
                     "cross_module_call_events": len(recorder.events),
                     "module_bodies_left_out": recorder.imported,
                     "calls_per_module": dict(sorted(recorder.calls.items()))},
    }


# -- output ------------------------------------------------------------------------------------------
def _wrapped(items: list[str], indent: str = "      ") -> str:
    return textwrap.fill(", ".join(items), width=108, initial_indent=indent, subsequent_indent=indent)


def _print_edges(rows: list[dict[str, Any]], key: str = "calls") -> None:
    for row in rows:
        print(f"      {row['caller']} -> {row['callee']}  ({row[key]} {key})")


def print_figures(fig: dict[str, Any]) -> None:
    d = fig["definitions"]
    entered = fig["modules_entered"]
    print(f"1. modules entered: {entered['count']}  -- {d['modules_entered']}")
    for stage, modules in entered["by_stage"].items():
        print(f"    {stage} ({len(modules)}):")
        print(_wrapped(modules))
    print(f"2. module edges: {fig['module_edges']['count']}  -- {d['module_edges']}")
    print(f"3. backward edges: {fig['backward_edges']['count']}  -- {d['backward_edges']}")
    _print_edges(fig["backward_edges"]["edges"])
    low = fig["backward_edges_below_report"]
    print(f"   backward edges below the report: {low['count']}  -- {d['backward_edges_below_report']}")
    _print_edges(low["edges"])
    ret = fig["returns"]
    print(f"4. returns to a module already left: {ret['events']} events, {ret['modules']} distinct M, "
          f"{ret['pairs']} distinct (caller, M)  -- {d['returns']}")
    print(f"5. top {TOP} (caller -> M) by return events  -- {d['top_return_pairs']}")
    _print_edges(fig["top_return_pairs"], "events")
    rec = fig["recorded"]
    left_out = ", ".join(rec["module_bodies_left_out"]) or "none"
    print(f"   ({rec['reprokit_call_events']} reprokit call events, {rec['cross_module_call_events']} "
          f"across modules; module bodies run by imports during the render, left out: {left_out})")


def _check_checkout() -> str:
    """reprokit must be imported from this tool's checkout: the stages and the code must agree."""
    import reprokit

    where = Path(reprokit.__file__).resolve().parent
    if where != (REPO / "reprokit").resolve():
        raise SystemExit(f"reprokit is imported from {where}, not from {REPO / 'reprokit'}: "
                         f"run with PYTHONPATH={REPO}")
    return str(where)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the run directory (results/<run>/); it is copied first")
    parser.add_argument("--json", type=Path, help="write the figures and lists as JSON to this file")
    parser.add_argument("--packages", action="store_true",
                        help="count packages (stages) instead of modules: reprokit/X/* is one, the flat "
                             "modules are one")
    args = parser.parse_args(argv)
    if not (args.run / "run.json").is_file():
        raise SystemExit(f"{args.run} is no run directory: it has no run.json")
    package = _check_checkout()
    stages = load_stages()
    fig = {"run": str(args.run), "reprokit": package, "level": "package" if args.packages else "module",
           **figures(trace_render(args.run.resolve(), args.packages), stages)}
    print(f"render route of {args.run} (reprokit from {package}; "
          f"stages from {STAGES_FILE.relative_to(REPO)})")
    print_figures(fig)
    if args.json:
        args.json.write_text(json.dumps(fig, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
