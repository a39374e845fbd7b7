"""Is a source wired in completely? `reproduce.py check-benchmark ID`.

A source is its entry in sources.yaml, its published table (published/<ID>.yaml), the suite cells its
numbers name, the bench workloads those cells run, the FLOP models that bound them and its claims
(docs/adding-a-benchmark.md). Each piece is checked against the others, and every missing or
inconsistent one is one `Finding`: what is wrong and the fix. A `problem` makes the source unusable
or its verdicts wrong (exit 2); a `note` is allowed but said (a number without a FLOP model gets no
plausibility check; a cell no number names measures context only).

Which metrics a workload reports is read from its source text (and the `_*.py` helpers beside it that
it imports): a metric named by a cell must appear in it as a string. Reading, not running, is
deliberate: the check runs in a second, on a machine without the stack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from reprokit import files, kitdata
from reprokit.analysis import claims, devices, flops, roofline, standins, table_checks
from reprokit.catalog import suites
from reprokit.errors import UserError

PROBLEM, NOTE = "problem", "note"


@dataclass(frozen=True)
class Finding:
    kind: str   # PROBLEM | NOTE
    what: str   # what is wrong, naming the file and the item
    fix: str    # what to do about it

    def line(self) -> str:
        return f"{self.kind}: {self.what} (fix: {self.fix})"


def workload_text(name: str, folder: Path | None = None) -> str | None:
    """bench/workloads/<name>.py and the `_*.py` helper modules it imports, as one text; None when
    the module does not exist. `folder` is bench/workloads unless given."""
    folder = folder or files.BENCH / "workloads"
    path = folder / f"{name}.py"
    if not path.is_file():
        return None
    text = path.read_text()
    for helper in sorted(set(re.findall(r"\b(_[a-z0-9_]+)\b", text))):
        hp = folder / f"{helper}.py"
        if hp.is_file():
            text += "\n" + hp.read_text()
    return text


def _source_cells(source: str) -> tuple[dict[str, suites.Cell], dict[str, str], list[Finding]]:
    """The cells of `source` in every suite (cell id -> Cell), the suite of each, and the suites that
    do not load."""
    cells: dict[str, suites.Cell] = {}
    where: dict[str, str] = {}
    found: list[Finding] = []
    for name in suites.suite_names():
        try:
            suite = suites.load_suite(name)
        except UserError as e:
            found.append(Finding(PROBLEM, f"suite {name} does not load: {e}",
                                 f"correct reprokit/data/suites/{name}.yaml"))
            continue
        for c in suite.cells:
            if c.source == source:
                cells.setdefault(c.id, c)
                where.setdefault(c.id, name)
    return cells, where, found


def _check_number(n: dict, cells: dict[str, suites.Cell], where: dict[str, str], path: str) -> list[Finding]:
    """One published number against its cell, its device's peak and its FLOP model."""
    nid, cell = n["id"], n.get("cell")
    if cell is None:
        return [Finding(NOTE, f"{path}: number {nid} names no cell, so nothing measures it",
                        "name the cell that re-measures it, if one can")]
    c = cells.get(cell)
    if c is None:
        return [Finding(PROBLEM, f"{path}: number {nid} names cell {cell}, which no suite has",
                        "correct the number's cell, or add the cell to a suite "
                        "(`reproduce.py list` shows them)")]
    out = []
    if n["metric"] not in c.metrics:
        out.append(Finding(PROBLEM, f"{path}: number {nid} is a {n['metric']!r} of cell {cell}, "
                                    f"whose metrics are {', '.join(c.metrics)}",
                           f"add {n['metric']!r} to the cell's `metrics` in suites/{where[cell]}.yaml (and "
                           "report it from the workload), or correct the number's metric"))
    dev = devices.publication_device(n)
    if dev.get("peak_tflops") is None:
        return out + [Finding(PROBLEM, f"{path}: number {nid} was published on {dev.get('label')!r}, "
                                       f"which has no peak: {dev.get('reason')}",
                              "add the device to reprokit/data/peaks.yaml (a GPU) or cpus.yaml (a CPU) with "
                              "its source, or correct the number's environment")]
    found = flops.model_for(cell)
    if found is None:
        return out + [Finding(NOTE, f"{path}: number {nid} (cell {cell}) has no FLOP model, so no "
                                    "plausibility check", "add a model covering the cell to flops.yaml")]
    out += _check_quantity(n, found[1])
    try:
        roofline.work_per_item(cell, n["metric"], flops.number_params(n))
    except flops.NotCovered as e:
        out.append(Finding(PROBLEM, f"flops.yaml: the FLOP model of cell {cell} does not cover number {nid} "
                                    f"({n['metric']}): {e}",
                           "give the model every parameter its formulas use (defaults, derived, by_dataset), "
                           "or the cell the parameters in its suite"))
    except flops.NotApplicable as e:  # a metric the models leave out by design (compile time...)
        out.append(Finding(NOTE, f"number {nid} ({n['metric']} of {cell}) gets no plausibility check: {e}",
                           "none needed if the metric is not a time per item"))
    except (KeyError, ValueError, NameError, SyntaxError, ZeroDivisionError) as e:
        out.append(Finding(PROBLEM, f"flops.yaml: the FLOP model of cell {cell} fails on number {nid} "
                                    f"({n['metric']}): {type(e).__name__}: {e}",
                           "correct the model's formulas"))
    return out


# environment fields that describe a GPU's software: on a number published on a CPU they can only have
# come from the table's defaults by mistake
_GPU_ONLY_ENV = ("cuda", "cudnn")


def _check_defaults(source: str, path: str) -> list[Finding]:
    """A table's `defaults` merged into a number it does not fit: a number published on a CPU
    (environment gpu "none (...)") that inherits CUDA or cuDNN versions from the defaults (its rows
    would carry a GPU stack they never ran)."""
    try:
        raw = kitdata.load_file(kitdata.relpath(f"published/{source}"))
    except UserError:
        return []  # the schema check names it
    base = ((raw.get("defaults") or {}).get("environment") or {}) if isinstance(raw, dict) else {}
    leaked = [k for k in _GPU_ONLY_ENV if base.get(k)]
    if not leaked:
        return []
    out = []
    for n in raw.get("numbers") or []:
        own = (n.get("environment") or {}) if isinstance(n, dict) else {}
        merged = {**base, **own}
        if not isinstance(n, dict) or suites.publication_hardware({"environment": merged})[0] != "cpu":
            continue
        inherited = [f"{k} {base[k]!r}" for k in leaked if k not in own]
        if inherited:
            out.append(Finding(PROBLEM, f"{path}: number {n.get('id')} was published on a CPU "
                                        f"({merged.get('gpu')!r}) but inherits {', '.join(inherited)} from "
                                        "the table's defaults",
                               "move the GPU stack's fields out of `defaults` into the GPU numbers, or "
                               "give the CPU number its own value (e.g. cuda: \"none\")"))
    return out


def _check_quantity(n: dict, model: dict) -> list[Finding]:
    """A number whose FLOP model gives its metric a phase needs the metric's quantity (per item, batch
    or epoch) in flops.yaml `metric_quantities`: without it every bound and efficiency of the number
    is dropped, silently until the report."""
    try:
        flops.phase_of(model, n["cell"], n["metric"])
    except flops.NotApplicable:
        return []  # no phase: a metric the model leaves out, noted where the bound is computed
    if n["metric"] in flops.load_models()["metric_quantities"]:
        return []
    return [Finding(PROBLEM, f"flops.yaml: metric {n['metric']!r} of number {n['id']} has no entry in "
                             "metric_quantities, so its roofline bound and efficiency are dropped",
                    f"add `{n['metric']}: item` (a time or rate per item), `batch` or `epoch` to "
                    "metric_quantities in reprokit/data/flops.yaml")]


def _check_cells(cells: dict[str, suites.Cell], where: dict[str, str]) -> list[Finding]:
    """Each cell's workload exists, has run(ctx) and reports the cell's metrics; its stack exists."""
    out: list[Finding] = []
    texts: dict[str, str | None] = {}
    for cid, c in sorted(cells.items()):
        if c.workload not in texts:
            texts[c.workload] = workload_text(c.workload)
        text = texts[c.workload]
        if c.stack not in suites.load_stacks():
            out.append(Finding(PROBLEM, f"cell {cid} runs on stack {c.stack!r}, which stacks.yaml lacks",
                               "use a stack of reprokit/data/stacks.yaml"))
        if text is None:
            out.append(Finding(PROBLEM, f"suites/{where[cid]}.yaml: cell {cid} runs workload {c.workload}, "
                                        f"but bench/workloads/{c.workload}.py does not exist",
                               "write it from bench/workloads/_template.py, or correct the cell's workload"))
            continue
        if not re.search(r"^def run\(ctx\)", text, re.M):
            out.append(Finding(PROBLEM, f"bench/workloads/{c.workload}.py has no `def run(ctx)`",
                               "the harness calls run(ctx): see bench/workloads/_template.py"))
        literals = " ".join(a or b for a, b in re.findall(r"\"([^\"\n]*)\"|'([^'\n]*)'", text))
        for m in c.metrics:
            # the name as a string, or every part of it in the workload's strings (names it builds:
            # kind + "_wps", name + "_synced")
            if m not in literals.split() and not all(part in literals for part in m.split("_")):
                out.append(Finding(PROBLEM, f"cell {cid} declares metric {m!r}, which bench/workloads/"
                                            f"{c.workload}.py never reports",
                                   "record it in the workload (ctx.measure / ctx.record_timed), or drop it "
                                   f"from the cell's metrics in suites/{where[cid]}.yaml"))
    for workload, text in sorted(texts.items()):
        out += _check_substitutes(workload, text or "")
    return out


def _substitutes(text: str) -> list[tuple[str, str]]:
    """(original, used) of every `ctx.substitute(original, used, why)` whose first two arguments are
    string literals; one built at run time is not seen (the run's report classifies it)."""
    import ast

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "substitute" and len(node.args) >= 2
                and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[:2])):
            out.append((node.args[0].value, node.args[1].value))
    return out


def _check_substitutes(workload: str, text: str) -> list[Finding]:
    """A substitution the workload records that standins.yaml does not classify counts as a mechanism
    stand-in: every number it measures would get no verdict."""
    return [Finding(PROBLEM, f"bench/workloads/{workload}.py substitutes {used!r} for {original!r}, which "
                             "reprokit/data/standins.yaml does not classify, so its numbers would get no "
                             "verdict (an unclassified stand-in counts as another mechanism)",
                    "add an entry to reprokit/data/standins.yaml whose `original` matches it, with its kind "
                    "(`framework` for another framework running the published algorithm)")
            for original, used in sorted(set(_substitutes(text)))
            if not standins.classify({"original": original, "used": used})["classified"]]


def _check_claims(source: str, cells: dict[str, suites.Cell]) -> list[Finding]:
    out = []
    for claim in claims.load_claims()["claims"]:
        if claim.get("source") != source:
            continue
        for side in claims.sides(claim):
            c = cells.get(side["cell"])
            if c is None:
                out.append(Finding(PROBLEM, f"claims.yaml: claim {claim['id']} names cell {side['cell']}, "
                                            "which no suite has", "correct the claim's cells"))
            elif side.get("metric") and side["metric"] not in c.metrics:
                out.append(Finding(PROBLEM, f"claims.yaml: claim {claim['id']} compares {side['metric']!r}, "
                                            f"which cell {side['cell']} does not measure",
                                   "correct the claim's metric or the cell's metrics"))
    return out


def _todos(value, path: str = "") -> list[tuple[str, str]]:
    """(field path, text) of every string under `value` that is still a scaffold's `TODO: ...`."""
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _todos(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, list):
        return [t for i, v in enumerate(value) for t in _todos(v, f"{path}[{i}]")]
    return [(path, value)] if isinstance(value, str) and value.lstrip().startswith("TODO") else []


def _file_todos(relpath: str) -> list[tuple[str, str]]:
    """(line N, text) of every line of reprokit/data/<relpath> that is not a comment and says TODO."""
    path = kitdata.current().root / relpath
    if not path.is_file():
        return []
    return [(f"line {i}", line.strip()) for i, line in enumerate(path.read_text().splitlines(), 1)
            if "TODO" in line and not line.lstrip().startswith("#")]


def _check_todos(source: str, entry: dict, suite_names: set[str]) -> list[Finding]:
    """The scaffold's `TODO:` facts still unwritten, each one line; and a source without a claim."""
    fix = "write the fact, or 'unstated' where the source does not say it"
    places = [(f"sources.yaml: source {source}", _todos(entry)),
              (f"reprokit/data/published/{source}.yaml", _file_todos(f"published/{source}.yaml"))]
    places += [(f"reprokit/data/suites/{name}.yaml", _file_todos(f"suites/{name}.yaml"))
               for name in sorted(suite_names)]
    places += [(f"flops.yaml: model {mid}", _todos(m)) for mid, m in flops.load_models()["models"].items()
               if isinstance(m, dict) and m.get("source") == source]
    out = [Finding(PROBLEM, f"{where}, {field}: still {text[:80]!r}", fix)
           for where, todos in places for field, text in todos]
    if not any(c.get("source") == source for c in claims.load_claims()["claims"]):
        out.append(Finding(NOTE, f"claims.yaml has no claim of source {source}: the report checks none of "
                                 "its conclusions", "write one entry per ordering or speed-up it states "
                                 "(docs/adding-a-benchmark.md step 5), or none if it states none"))
    return out


def lint(source: str) -> list[Finding]:
    """Every finding about source `source`, problems first, in the order a newcomer meets them."""
    try:
        entry = suites.load_sources().get(source)
    except UserError as e:
        return [Finding(PROBLEM, f"sources.yaml does not load: {e}", "correct reprokit/data/sources.yaml")]
    if entry is None:
        return [Finding(PROBLEM, f"source {source!r} is not in reprokit/data/sources.yaml",
                        "add its entry (title, repository, commit, reference, environment, "
                        "defects); `reproduce.py new-benchmark` writes one to fill in")]
    path = f"reprokit/data/published/{source}.yaml"
    try:
        numbers = list(suites.load_published(source))
    except UserError as e:
        return [Finding(PROBLEM, str(e), f"correct {path} (schema: reprokit/schemas/published.schema.json)")]
    found: list[Finding] = []
    if not numbers:
        found.append(Finding(PROBLEM, f"{path} is missing or has no numbers",
                             "write the source's published table there (docs/adding-a-benchmark.md)"))
    cells, where, suite_problems = _source_cells(source)
    found += suite_problems
    if suite_problems and not cells:  # its cells are in a suite that does not load: what names
        # them is checked once that suite loads (else every number would "name a cell no suite has")
        return sorted(found + _check_defaults(source, path), key=lambda f: f.kind != PROBLEM)
    if not cells:
        found.append(Finding(PROBLEM, f"no suite has a cell of source {source}",
                             f"add a group with `source: \"{source}\"` to a suite in reprokit/data/suites/ "
                             "and the source to the suite's `sources`"))
    ids = [n["id"] for n in numbers]
    for nid in sorted({i for i in ids if ids.count(i) > 1}):
        found.append(Finding(PROBLEM, f"{path}: number id {nid} is used twice",
                             "give every number its own id"))
    for n in numbers:
        found += _check_number(n, cells, where, path)
    found += _check_defaults(source, path)
    found += _check_cells(cells, where)
    unnamed = sorted(set(cells) - {n.get("cell") for n in numbers})
    if unnamed and numbers:
        found.append(Finding(NOTE, f"{len(unnamed)} cell(s) of source {source} have no published number "
                                   f"({unnamed[0]}{', ...' if len(unnamed) > 1 else ''}): they measure "
                                   "context or corrections", "none needed if that is meant"))
    found += [Finding(NOTE, f"{path}: {f['text']}", "none if it is as published: the report shows it on its "
                            "first screen; record in sources.yaml `defects` what explains it, if known")
              for f in table_checks.check(numbers)]
    found += _check_claims(source, cells)
    found += _check_todos(source, entry, set(where.values()))
    for d in entry.get("defects") or []:
        sel = d.get("applies_to") or {}
        if sel and numbers and not any(d["id"] in n["defects"] for n in numbers):
            found.append(Finding(PROBLEM, f"sources.yaml: defect {d['id']} applies to no published number of "
                                          f"{source} ({sel})",
                                 "correct its applies_to (each field must contain one of its strings; "
                                 "`metric` is the metric as published), or give `applies_to: {}` for a "
                                 "defect of the whole source"))
    return sorted(found, key=lambda f: f.kind != PROBLEM)
