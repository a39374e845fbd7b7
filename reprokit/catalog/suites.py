"""Suites, published numbers, sources and stacks: the project's data, loaded and validated.

All of it lives in reprokit/data/ as YAML with a JSON Schema each; this module only reads it,
expands each suite's cell groups (a group with a `matrix` becomes one cell per combination) and
links every published number to its cell and to the source defects that affect it.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace

from reprokit import kitdata, validate
from reprokit.catalog import units
from reprokit.errors import UserError

FP32 = "fp32"
FRAMEWORK_DEFAULT = "framework_default"
TWIN_SUFFIX = "/framework-defaults"  # a framework_default twin's id: its fp32 cell's id + this


@dataclass(frozen=True)
class Cell:
    """One measurement: a workload at fixed parameters on one stack."""

    id: str
    source: str
    stack: str
    framework: str
    workload: str
    variant: str | None
    params: dict
    metrics: tuple[str, ...]
    implemented: bool = True
    reason: str | None = None
    note: str | None = None
    needs_gpus: int = 0
    budget: dict | None = None
    timeout_s: float | None = None
    # "cpu": the cell's published numbers were all measured on a CPU, so it runs on the CPU whatever
    # the run's device; None: it runs on the run's device (see _hardware_from_numbers)
    device: str | None = None
    # None: as published; else {"kind": "corrected" | "alternative", "defects": [ids],
    # "as_published_cell": id of the as-published cell it stands beside} (the group's `label`)
    label: dict | None = None
    # "fp32": the sources' precision, TF32 off (bench/float_mode.py); "framework_default": the
    # framework's own defaults (TF32 where it has it), the twin of the fp32 cell `precision_of`
    precision: str = FP32
    precision_of: str | None = None

    def gpus_on(self, device: str) -> int:
        """GPUs the cell uses on a run whose device is `device`: none on a CPU run or for a cell
        published on a CPU; else what it needs, at least one."""
        if device != "gpu" or self.device == "cpu":
            return 0
        return max(1, self.needs_gpus)


@dataclass
class Suite:
    name: str
    description: str
    sources: list[str]
    defaults: dict
    cells: list[Cell] = field(default_factory=list)

    def cell(self, cell_id: str) -> Cell:
        for c in self.cells:
            if c.id == cell_id:
                return c
        raise UserError(f"unknown cell '{cell_id}' in suite {self.name}; "
                        f"see `reproduce.py list --suite {self.name}`")


def suite_names() -> list[str]:
    folder = kitdata.current().root / "suites"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _expand(group: dict) -> list[Cell]:
    matrix = group.get("matrix", {})
    keys = list(matrix)
    excludes = group.get("exclude", [])
    cells = []
    for combo in itertools.product(*(matrix[k] for k in keys)):
        values = dict(zip(keys, combo))
        if any(all(values.get(k) == v for k, v in ex.items()) for ex in excludes):
            continue
        params = {**group.get("params", {}), **{k: v for k, v in values.items() if k != "variant"}}
        variant = values.get("variant", group.get("variant"))
        fmt = {**params, "framework": group["framework"], "variant": variant}
        try:
            cell_id = group["id"].format(**fmt)
        except KeyError as e:
            raise UserError(f"cell id template {group['id']!r} names {e}, which the group does "
                            "not define; fix the suite file") from e
        label = _label(group, variant, fmt, cell_id)
        cells.append(Cell(
            id=cell_id, source=group["source"], stack=group["stack"], framework=group["framework"],
            workload=group["workload"], variant=variant, params=params,
            metrics=tuple(group["metrics"]),
            implemented=group.get("status", "implemented") == "implemented",
            reason=group.get("reason"), note=group.get("note"),
            needs_gpus=int(group.get("needs_gpus", 0)), budget=group.get("budget"),
            timeout_s=group.get("timeout_s"), label=label, device=group.get("device")))
    return cells


def _label(group: dict, variant: str | None, fmt: dict, cell_id: str) -> dict | None:
    """The cell's label from its group's `label`: kind, defects and the as-published cell's id (the
    group's id template with the as-published variant)."""
    spec = group.get("label")
    if not spec:
        return None
    base = spec["as_published"].get(variant or "")
    if base is None:
        raise UserError(f"cell {cell_id}: its group's label names no as-published variant for "
                        f"variant '{variant}'; fix the suite file")
    return {"kind": spec["kind"], "defects": list(spec["defects"]),
            "as_published_cell": group["id"].format(**{**fmt, "variant": base})}


@kitdata.memoized
def load_suite(name: str) -> Suite:
    names = suite_names()
    if name not in names:
        raise UserError(f"unknown suite '{name}'; known suites: {', '.join(names)}")
    doc = kitdata.load(f"suites/{name}")
    cells: list[Cell] = []
    no_twin: set[str] = set()
    for g in doc["groups"]:
        group_cells = _expand(g)
        cells += group_cells
        if g.get("framework_default_twin") is False:
            no_twin.update(c.id for c in group_cells)
    seen: set[str] = set()
    for c in cells:
        if c.id in seen:
            raise UserError(f"suite {name} defines cell {c.id} twice; fix the suite file")
        seen.add(c.id)
    stacks = load_stacks()
    for c in cells:
        if c.stack not in stacks:
            raise UserError(f"suite {name} cell {c.id} names unknown stack '{c.stack}'")
    cells = _with_twins(name, _hardware_from_numbers(name, doc["sources"], cells), no_twin, stacks)
    return Suite(doc["name"], doc["description"], doc["sources"], doc["defaults"], cells)


GPU_COUNT = re.compile(r"^\s*(\d+)\s*x\s+", re.I)  # "4x Tesla V100-16GB": 4 GPUs


def publication_hardware(number: dict) -> tuple[str, int]:
    """("cpu", 1) or ("gpu", N): the class of device a published number was measured on, from its data
    alone (environment.gpu: "none (...)" is a CPU; "Nx <model>" N GPUs; a GPU model alone one GPU).
    The device a cell needs comes from this, as does analysis.devices.publication_device's kind."""
    label = number["environment"].get("gpu") or "unstated"
    if label.lower().startswith("none"):
        return "cpu", 1
    m = GPU_COUNT.match(label)
    return "gpu", int(m.group(1)) if m else 1


def _hardware_from_numbers(suite: str, sources: list[str], cells: list[Cell]) -> list[Cell]:
    """The device each cell needs, from the hardware of the published numbers mapped to it, the same rule
    for every source and framework: numbers published on N >= 2 GPUs need N GPUs (a multi-GPU figure
    cannot be measured on fewer devices); numbers published on one GPU run on the run's device (a GPU
    run measures them, a CPU run gives its CPU measurement as context); numbers all published on a CPU
    run on the CPU, whatever the run's device. A group's `needs_gpus` (a workload that runs only on a
    GPU, e.g. a cuDNN kernel) is kept whatever its numbers' hardware: such a cell is never planned on a
    CPU (its numbers on a CPU are a data error). Numbers of one cell on different classes of hardware
    that disagree (a CPU and several GPUs, or 2 and 4 GPUs) are a data error."""
    found: dict[str, set[tuple[str, int]]] = {}
    for src in sources:
        for n in load_published(src):
            if n["cell"]:
                found.setdefault(n["cell"], set()).add(publication_hardware(n))
    out = []
    for c in cells:
        hw = found.get(c.id)
        if not hw:
            out.append(c)
            continue
        multi = {count for kind, count in hw if kind == "gpu" and count >= 2}
        if multi and (len(multi) > 1 or len(hw) > 1):
            raise UserError(f"suite {suite} cell {c.id}: its published numbers were measured on "
                            f"{', '.join(f'{k} x{n}' for k, n in sorted(hw))}; one cell cannot "
                            "measure them all; map them to separate cells")
        on_cpu = hw == {("cpu", 1)}
        if on_cpu and c.needs_gpus:
            raise UserError(f"suite {suite} cell {c.id}: its group says needs_gpus: {c.needs_gpus}, but its "
                            "published numbers were measured on a CPU; drop needs_gpus or map the "
                            "numbers to a cell that runs on the CPU")
        needs = max(multi) if multi else c.needs_gpus
        device = "cpu" if on_cpu else c.device
        out.append(replace(c, needs_gpus=needs, device=device))
    return out


@kitdata.memoized
def float_precision() -> dict:
    """reprokit/data/float_precision.yaml: the frameworks whose GPU float32 default is TF32."""
    return kitdata.load("float_precision")


def _major_minor(text: object) -> tuple[int, int] | None:
    m = re.search(r"(\d+)\.(\d+)", str(text or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def has_tf32_default(stack: dict) -> bool:
    """Whether the stack's framework, at its pinned version, runs float32 GPU work as TF32 by
    default (float_precision.yaml), so its defaults can differ from fp32 on an Ampere+ GPU."""
    spec = float_precision()["frameworks"].get(stack.get("framework", ""))
    if spec is None:
        return False
    if spec["since"] is None:
        return True
    have = _major_minor((stack.get("original") or {}).get("framework_version"))
    since = _major_minor(spec["since"])
    return have is not None and since is not None and have >= since


def _with_twins(suite: str, cells: list[Cell], no_twin: set[str], stacks: dict) -> list[Cell]:
    """Each cell followed by its framework_default twin where the twin can differ: a GPU cell
    (not one published on a CPU) of an implemented workload on a stack whose framework has a TF32
    default, unless its group says `framework_default_twin: false`. The fp32 cell keeps its id."""
    ids = {c.id for c in cells}
    out = []
    for c in cells:
        out.append(c)
        if (not c.implemented or c.device == "cpu" or c.id in no_twin
                or not has_tf32_default(stacks[c.stack])):
            continue
        twin = replace(c, id=c.id + TWIN_SUFFIX, precision=FRAMEWORK_DEFAULT, precision_of=c.id,
                       label=None)
        if twin.id in ids:
            raise UserError(f"suite {suite} defines cell {twin.id}, the id of {c.id}'s "
                            "framework-defaults twin; rename it in the suite file")
        out.append(twin)
    return out


@kitdata.memoized
def _all_cells() -> dict[str, Cell]:
    return {c.id: c for name in suite_names() for c in load_suite(name).cells}


def cell_params(cell_id: str | None) -> dict | None:
    """The params of the cell with this id in any suite (a copy), or None."""
    cell = _all_cells().get(cell_id) if cell_id else None
    return dict(cell.params) if cell is not None else None


@kitdata.memoized
def load_stacks() -> dict[str, dict]:
    return kitdata.load("stacks")["stacks"]


@kitdata.memoized
def load_sources() -> dict[str, dict]:
    return kitdata.load("sources")["sources"]


def _matches(selector: dict[str, list[str]], number: dict) -> bool:
    """Whether a defect's `applies_to` selects `number`: every field it names contains one of its
    strings. A field the number does not give (a `defaults`-style table need not name a variant; its
    framework may be the environment's) is empty and matches nothing. `metric` is the metric as
    published; the schema names the fields (sources.schema.json: applies_to's propertyNames)."""
    workload, env = number.get("workload") or {}, number.get("environment") or {}
    fields = {
        "framework": workload.get("framework") or env.get("framework"), "variant": workload.get("variant"),
        "dataset": workload.get("dataset"), "metric": number.get("metric_as_published"),
        "unit": number.get("unit"), "gpu": env.get("gpu"),
        "table": (number.get("provenance") or {}).get("table"), "cell": number.get("cell"),
    }
    return all(any(s in str(fields[k] or "") for s in wanted) for k, wanted in selector.items())


PUBLISHED_PARTS = ("provenance", "workload", "environment")


def expand_published(doc: dict) -> dict:
    """A published/<source>.yaml as its numbers are used: a `defaults` block (what every number of the
    table shares: its provenance, workload and environment, written once; docs/adding-a-benchmark.md)
    is merged under each number's own fields, and `provenance.source` defaults to the file's source.
    A file without `defaults` (the five imported from the reference CSV) is returned as it is."""
    if "defaults" not in doc:
        return doc
    base = doc.get("defaults") or {}
    unknown = sorted(set(base) - set(PUBLISHED_PARTS)) if isinstance(base, dict) else ["(not a mapping)"]
    if unknown:
        raise UserError(f"published/{doc.get('source')}.yaml: defaults may hold only "
                        f"{', '.join(PUBLISHED_PARTS)}, not {', '.join(unknown)}")
    numbers = []
    for n in doc.get("numbers") or []:
        if not isinstance(n, dict):
            numbers.append(n)
            continue
        n = dict(n)
        for part in PUBLISHED_PARTS:
            merged = {**(base.get(part) or {}), **(n.get(part) or {})}
            if part == "provenance":
                merged.setdefault("source", doc.get("source"))
            n[part] = merged
        numbers.append(n)
    return {k: v for k, v in doc.items() if k != "defaults"} | {"numbers": numbers}


def _published_doc(source: str) -> dict:
    """published/<source>.yaml expanded (`expand_published`) and checked against published.schema.json
    in its expanded form: a number the defaults leave incomplete is named like any schema error."""
    name = f"published/{source}"
    path = kitdata.current().root / kitdata.relpath(name)
    if not re.search(rb"^defaults:", path.read_bytes(), re.M):  # as the CSV import writes them
        return kitdata.load(name)  # validated once, then from the data cache (no YAML parse)
    doc = expand_published(kitdata.load_file(kitdata.relpath(name)))
    validate.check("published", doc, f"reprokit/data/{kitdata.relpath(name)} (its defaults merged)")
    return doc


@kitdata.memoized
def load_published(source: str) -> tuple[dict, ...]:
    """Published numbers of one source, each with `defects`: the ids of the defects affecting it."""
    if not kitdata.exists(f"published/{source}"):
        return ()
    doc = _published_doc(source)
    defects = load_sources().get(source, {}).get("defects", [])
    out = []
    for n in doc["numbers"]:
        problem = units.unit_problem(n["metric"], n["unit"])
        if problem:  # the value's range is the schema's (published.schema.json value_in_range)
            raise UserError(f"{kitdata.current().where(kitdata.relpath(f'published/{source}'))}: number "
                            f"{n['id']}: {problem}; give the figure in a unit of its metric's kind (a time "
                            "in s/ms/us, a rate in items/s such as words/s, a memory in MB/MiB) or correct "
                            "its metric")
        n = dict(n)
        n.setdefault("metric_as_published", n["metric"])  # optional: the name as printed, where it differs
        n["defects"] = [d["id"] for d in defects if _matches(d["applies_to"], n)]
        out.append(n)
    return tuple(out)


def published_for_suite(suite: Suite) -> list[dict]:
    return [n for s in suite.sources for n in load_published(s)]


def all_sources_published() -> list[dict]:
    return [n for s in sorted(load_sources()) for n in load_published(s)]
