"""The report's context: everything results/<run>/report.{md,html,json} show, as one JSON-serialisable
dict built from the model of a run (reprokit/reader/model.py) and the data it is judged with.

`build_context(run)` calls the analysis explicitly: for every published number of the run's suite
its verdict (analysis.verdicts.verdicts_for_run) and environment diff (analysis.diff); the claims of
the suite's sources checked on the run's cells (analysis.claims); then the report's own parts: each
number's row in the publication's unit (report_rows), the sections over them (sections), what the run
says about itself (run_health), the cells beside the cells they vary (variants), the environments
(environments) and, for a Slurm run, its cluster (cluster). It only assembles them; report.json is
this dict (reprokit/schemas/report.schema.json; docs/FORMATS.md "Report").
"""

from __future__ import annotations

import json

from reprokit import formats, kitdata
from reprokit.analysis import claims, cpus, diff, roofline, table_checks, verdicts
from reprokit.catalog import datasets, suites
from reprokit.errors import UserError
from reprokit.kitdata import KitData
from reprokit.reader.cells import status_counts
from reprokit.reader.model import Machine, Run
from reprokit.reader.result import CellResult
from reprokit.report import (
    cluster,
    environments,
    overview,
    real_work,
    report_rows,
    reproduction,
    run_health,
    sections,
    variants,
)
from reprokit.report.filters import slug

REPORT_VERSION = formats.version("report")


def _suite_info(run: Run) -> tuple[str | None, list[str], str | None]:
    """Description and sources of the run's suite; falls back to the cells' sources."""
    try:
        suite = suites.load_suite(run.suite)
        return suite.description.strip(), list(suite.sources), None
    except UserError as e:
        known = suites.load_sources()
        found = sorted({c.source for c in run.results.values() if c.source in known})
        return None, found, f"suite not loadable now ({e}); sources taken from the cell results"


def _device_label(device: str | None, machine: Machine, short: bool = False) -> str:
    if device is None:
        return "—"
    if device == "cpu":
        return "CPU" if short else f"CPU: {cpus.short_label(machine.cpu)}"
    names = [str(g.get("name")) for g in machine.gpus]
    return "GPU: " + (", ".join(names) if names else "none listed in the host fingerprint")


def number_anchor(number_id: str) -> str:
    return "n-" + slug(number_id, 60)


def _run_device(devices_: list[str], machine: Machine) -> str:
    if "gpu" in devices_:
        names = [str(g.get("name")) for g in machine.gpus]
        return f"GPU ({', '.join(names) or 'name not recorded'})"
    return f"CPU ({cpus.short_label(machine.cpu)})" if devices_ or machine.host else "machine"


def _rows_for(numbers: list[dict], run: Run, all_sources: dict, load: dict) -> list[dict]:
    """Verdict, display row and environment diff of every published number."""
    high = set(load["high_cells"])
    out = []
    for n, v in zip(numbers, verdicts.verdicts_for_run(numbers, run, all_sources)):
        cell = run.result(n["cell"])
        r = report_rows.row(n, v, cell, run.entry(n["cell"]) if n["cell"] else None)
        r["anchor"] = number_anchor(n["id"])
        r["device_label"] = _device_label(r["device"], run.machine, short=True) if r["device"] else None
        r["load_high"] = n["cell"] in high
        r["tested"] = overview.tested(r)
        r["data"] = datasets.provenance(cell.extra) if cell is not None else None  # stand-in or real files
        r["environment_diff"] = diff.environment_diff(n, all_sources.get(r["source"]), run.host, cell)
        # what kind of re-measurement it is (ACM terms), beside the verdict; None when nothing measured
        r["reproduction"] = reproduction.kind(r["analysis"], r["measured"] is not None)
        out.append(r)
    return out


def _energy_rows(cell_list: list[CellResult]) -> list[dict]:
    """One row per timed metric of each GPU cell with an `energy` record (reprokit/probes/energy.py)."""
    rows = []
    for c in cell_list:
        for metric, e in sorted(c.energy.items()):
            rows.append({"cell": c.cell_id, "metric": metric, "status": e["status"],
                         "joules_per_step": e.get("joules_per_step"),
                         "joules_per_item": e.get("joules_per_item"), "window_s": e.get("window_s"),
                         "disagreement": e.get("disagreement"), "flagged": bool(e.get("flagged")),
                         "reason": e.get("reason") or ""})
    return rows


def _rejudged(run: Run) -> dict | None:
    """The first screen's note of a run judged again with later data (`report RUN --rejudge OUT`,
    reprokit/run/rejudge.py): {"at", "kit", "copied_from", "started", "had_snapshot"}; None for a run
    judged with the data it started with."""
    if not run.rejudged:
        return None
    r = run.rejudged[-1]  # the newest: the data this report judges with (run.json keeps the chain)
    return {"at": r.at, "kit": run.doc["rejudged"][-1]["kit"], "copied_from": r.copied_from,
            "started": run.started, "had_snapshot": r.had_snapshot}


def _incidents(run: Run) -> list[dict]:
    """What stopped or changed the run, and for a Slurm run not finished, that its jobs were not all
    collected when the report was made (collecting them is `status`'s work, never the report's)."""
    out = [{"kind": i.kind, "at": i.at, "cell_id": i.cell_id, "text": i.text} for i in run.incidents]
    if run.runner == "slurm" and run.finished is None and run.slurm is not None and run.slurm.jobs:
        out.append({"kind": "uncollected", "at": None, "cell_id": None,
                    "text": "the run's Slurm jobs were not all collected when this report was made: "
                            f"`reproduce.py status {run.run_id}` collects what they finished, then "
                            "`reproduce.py report` shows it"})
    return out


def _by_stack(cell_list: list[CellResult]) -> dict[str, list[CellResult]]:
    out: dict[str, list[CellResult]] = {}
    for c in cell_list:
        out.setdefault(c.stack, []).append(c)
    return out


def _numbers(run: Run, source_ids: list[str]) -> tuple[list[dict], list[dict], list[dict], dict]:
    """(published numbers, their rows, the checked claims, the machine load) of the run."""
    all_sources = suites.load_sources()
    published = [n for sid in source_ids for n in suites.load_published(sid)]
    load = run_health.machine_load(run)
    rows = _rows_for(published, run, all_sources, load)
    gpu_labels = run_health.gpu_health(run.cell_results())["labels"]
    for r in rows:  # a number measured by a throttled or shared GPU cell says so, as one under load does
        if gpu_labels.get(r.get("cell")):
            r["gpu_state_label"] = gpu_labels[r["cell"]]
    claim_results = claims.check_claims(claims.observations_from_cells(run), source_ids,
                                        published=published, machine=run.machine)
    return published, rows, claim_results, load


def build_context(run: Run, data: KitData | None = None) -> dict:
    """The report's context of `run` (a run directory read by reprokit/reader/load.py: its results as
    the files on disk have them; an unreadable, invalid or deleted result is listed as such), judged
    with `data` (default: the data chosen around the call, else the packaged data)."""
    with kitdata.using(data or kitdata.current()):
        return _context(run)


def as_stored(run: Run, data: KitData | None = None) -> dict:
    """`build_context` as report.json holds it (through JSON: tuples as lists, keys as strings), for
    comparing with a stored report.json."""
    return json.loads(json.dumps(build_context(run, data)))


def _context(run: Run) -> dict:
    cell_list = run.cell_results()
    description, source_ids, suite_note = _suite_info(run)
    device_kinds = sorted({c.device for c in cell_list if c.device})
    all_sources = suites.load_sources()
    published, rows, claim_results, load = _numbers(run, source_ids)
    labelled = variants.labelled_cells(run.suite)
    source_sections = [sections.source_section(sid, all_sources.get(sid, {}),
                                               [r for r in rows if r["source"] == sid], labelled)
                       for sid in source_ids]
    run_device = _run_device(device_kinds, run.machine)
    first_screen = [
        overview.source_line(sid, all_sources.get(sid, {}).get("title"),
                             [r for r in rows if r["source"] == sid],
                             [c for c in claim_results if c["source"] == sid], run_device.split(" (")[0],
                             table_checks.check(list(suites.load_published(sid))))
        for sid in source_ids
    ]
    # a cell's own result file says its status; run.json's entry where there is none
    counts = status_counts({"status": run.status_of(e.cell_id)} for e in run.entries)
    twins = variants.precision_twins(run)
    gpu_health = run_health.gpu_health(cell_list)  # GPU cells run throttled or shared (none: no key)
    context = {
        "schema_version": REPORT_VERSION, "kind": "report",
        "run": {k: run.doc.get(k) for k in ("run_id", "suite", "argv", "runner", "protocol", "quick",
                                             "started", "finished", "wall_s", "kit")},
        "rejudged": _rejudged(run),
        "suite_description": description, "suite_note": suite_note,
        "status_counts": counts,
        "devices": device_kinds,
        "device_labels": {d: _device_label(d, run.machine) for d in device_kinds},
        "run_device": run_device,
        "first_screen": first_screen,
        "intervals": run_health.interval_summary(run),
        "plan": run_health.plan_summary(run),
        "conventions": roofline.CONVENTIONS,
        "roofline": sections.roofline_summary(rows),
        "efficiency_tolerance": verdicts.load_policy()["efficiency"]["tolerance"],
        "load": load,
        "summary": sections.summary(rows, claim_results),
        "numbers": rows,
        "sources": source_sections,
        "claims": sorted(claim_results, key=lambda c: sections.CLAIM_ORDER.index(c["status"])),
        "claims_without_claim": [c["id"] for c in claim_results if c["status"] == claims.NO_CLAIM],
        "claim_ratios": claims.ratio_rows(claim_results),
        "energy": _energy_rows(cell_list),
        "real_work": real_work.summary(cell_list),
        "overhead": run_health.driver_overhead(run),
        "unmatched": report_rows.unmatched(published, run),
        "variants": variants.variants(labelled, run),
        **({"precision_twins": twins} if twins["ran"] or twins["not_run"] else {}),
        "not_run": run_health.cells_not_run(run),
        "incomplete": run_health.incomplete_cells(run),
        "incidents": _incidents(run),
        "environments": {
            "host": environments.host(run),
            "stacks": [environments.stack(s, cs, run.stacks.get(s, {}))
                       for s, cs in sorted(_by_stack(cell_list).items())],
        },
    }
    if gpu_health["cells"]:
        context["gpu_state"] = gpu_health
    gpu_peak = run_health.gpu_peak_summary(run)  # the measured GEMM rate beside peaks.yaml
    if gpu_peak is not None:
        context["environments"]["host"]["gpu_peak"] = gpu_peak
    _add_cluster(context, run)
    return context


def _add_cluster(context: dict, run: Run) -> None:
    """A Slurm run's cluster (the other reports have no such key); on several nodes, each cell is
    judged on its own node's CPU (devices.measured_device), not the driver's."""
    found = cluster.summary(run)
    if found is None:
        return
    context["cluster"] = found
    cpu_nodes = sorted({n["cpu"] for n in found["nodes"] if n["cpu"]})
    if len(found["nodes"]) > 1 and "cpu" in context["device_labels"]:
        context["device_labels"]["cpu"] = (
            f"CPU: each cell's node's, {len(found['nodes'])} nodes "
            f"({'; '.join(cpu_nodes) or 'CPUs not recorded'}: see Nodes)")
