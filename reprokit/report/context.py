"""The report's context: everything results/<run>/report.{md,html,json} show, as one JSON-serialisable
dict built from the run directory and the data the run holds (its kit-data/ snapshot).

`build_context(rundir)` calls the analysis explicitly: for every published number of the run's suite
its verdict (analysis.verdicts.verdicts_for_run) and environment diff (analysis.diff); the claims of
the suite's sources checked on the run's cells (analysis.claims); each number's row in the
publication's unit (analysis.report_rows) and what the run says about itself: load, overhead,
intervals, cells without a result (analysis.run_health). It only assembles them; report.json is this
dict (reprokit/schemas/report.schema.json; docs/FORMATS.md "Report").
"""

from __future__ import annotations

from reprokit import files, results
from reprokit.analysis import (
    claims,
    cpus,
    devices,
    diff,
    flops,
    overview,
    real_work,
    report_rows,
    reproduction,
    roofline,
    run_health,
    stats,
    verdicts,
)
from reprokit.catalog import datasets, suites
from reprokit.errors import UserError
from reprokit.reader import reconcile
from reprokit.reader.cells import status_counts
from reprokit.report.filters import flat, slug

REPORT_VERSION = files.version("report")
TEMPLATES = files.REPO / "report_templates"
CATEGORIES = overview.CATEGORIES
CATEGORY_MEANINGS = {
    verdicts.IMPLAUSIBLE: verdicts.MEANINGS[verdicts.IMPLAUSIBLE]
    + " (roofline bound below); no other verdict",
    verdicts.REPRODUCED: verdicts.MEANINGS[verdicts.REPRODUCED],
    overview.DEVIATES_CATEGORY: "same device model: the measured interval lies entirely outside "
    "published ± tolerance (faster/slower for speeds, higher/lower otherwise)",
    verdicts.INCONCLUSIVE: "same device model or class: the measured interval overlaps an edge of the "
    "band, or the metric has too few samples for an interval (one compile time per process)",
    overview.EFFICIENCY_CATEGORY: "same device class, other model: achieved FLOP/s as a fraction of "
    "each device's theoretical fp32 peak, compared within ± the policy tolerance; 'higher' = this run "
    "used a larger fraction of its device than the publication did of its device",
    **{v: verdicts.MEANINGS[v] for v in (verdicts.NOT_TESTABLE_HERE, verdicts.NOT_TESTABLE_STANDIN,
                                         verdicts.NOT_COMPARABLE, verdicts.NOT_RUN)},
}
CLAIM_ORDER = claims.PRECEDENCE


def _suite_info(name: str, cells: list[dict]) -> tuple[str | None, list[str], str | None]:
    """Description and sources of the run's suite; falls back to the cells' sources."""
    try:
        suite = suites.load_suite(name)
        return suite.description.strip(), list(suite.sources), None
    except UserError as e:
        known = suites.load_sources()
        found = sorted({c.get("source") for c in cells if c.get("source") in known})
        return None, found, f"suite not loadable now ({e}); sources taken from the cell results"


def _device_label(device: str | None, host: dict, short: bool = False) -> str:
    if device is None:
        return "—"
    if device == "cpu":
        return "CPU" if short else f"CPU: {cpus.short_label(host.get('cpu') or {})}"
    names = [str(g.get("name")) for g in host.get("gpus") or [] if isinstance(g, dict)]
    return "GPU: " + (", ".join(names) if names else "none listed in the host fingerprint")


def _defects_of(source: dict, ids: list[str], corrected_by: dict[str, list[str]] | None = None
                ) -> list[dict]:
    """The defects with their summary, kind and how the kit deals with them: the suite's cells that
    correct them (`corrected_by`) or the defect's own `correction` text."""
    by_id = {d["id"]: d for d in source.get("defects", [])}
    return [{"id": i, "summary": by_id.get(i, {}).get("summary", "(no summary in sources.yaml)"),
             "reference": by_id.get(i, {}).get("reference"), "kind": by_id.get(i, {}).get("kind"),
             "correction": by_id.get(i, {}).get("correction"),
             "corrected_by": list((corrected_by or {}).get(i, []))} for i in ids]


def _labelled_cells(suite_name: str) -> list[suites.Cell]:
    """The suite's corrected and alternative cells (none when the suite cannot be loaded now)."""
    try:
        return [c for c in suites.load_suite(suite_name).cells if c.label]
    except UserError:
        return []


def _corrected_by(labelled: list[suites.Cell]) -> dict[str, list[str]]:
    """{defect id: ids of the suite's cells labelled as correcting it (or reading it otherwise)}."""
    out: dict[str, list[str]] = {}
    for c in labelled:
        for d in c.label["defects"]:
            out.setdefault(d, []).append(c.id)
    return out


def _cell_median(cell: dict | None, metric: str) -> dict | None:
    """The metric's median (unit, n, state) in an ok cell result, else None."""
    m = ((cell or {}).get("metrics") or {}).get(metric) if cell and cell.get("status") == "ok" else None
    if not m or not m.get("samples"):
        return None
    summ = stats.summarize_metric(m)
    return {"median": summ["median"], "unit": summ["unit"], "n": summ["n"], "state": m.get("state")}


def _metric_pairs(base: dict | None, mine: dict | None, metrics: list[str]) -> list[dict]:
    """Per metric: the base cell's median (`as_published`), this cell's (`variant`), and their ratio
    (variant / base) with how to read it, from this run's results only."""
    rows = []
    for metric in metrics:
        a, b = _cell_median(base, metric), _cell_median(mine, metric)
        ratio = None
        if a and b and a["median"] and a["unit"] == b["unit"]:
            ratio = b["median"] / a["median"]
        rows.append({"metric": metric, "as_published": a, "variant": b, "ratio": ratio,
                     "reading": report_rows.reading(ratio, b["unit"]) if ratio and b else None})
    return rows


def _precision_twins(suite_name: str, cells: dict[str, dict]) -> dict:
    """Each framework-defaults twin of the run beside its fp32 cell (issue 20: what TF32 buys):
    per metric both medians and their ratio (defaults / fp32) and the precision each cell recorded;
    the twins that did not run are counted with their reasons (on a CPU run: all of them)."""
    try:
        twins = [c for c in suites.load_suite(suite_name).cells if c.precision_of]
    except UserError:
        twins = []
    ran, not_run = [], {}
    for c in twins:
        mine = cells.get(c.id)
        if mine is None:
            continue
        if mine.get("status") != "ok":
            why = mine.get("reason") or mine.get("status")
            not_run[why] = not_run.get(why, 0) + 1
            continue
        base = cells.get(c.precision_of)
        ran.append({"cell": c.id, "fp32_cell": c.precision_of,
                    "precision": {"fp32": ((base or {}).get("precision") or {}).get("effective"),
                                  "defaults": (mine.get("precision") or {}).get("effective")},
                    "metrics": _metric_pairs(base, mine, c.metrics)})
    return {"ran": ran, "not_run": [{"reason": k, "cells": n} for k, n in sorted(not_run.items())]}


def _variants(labelled: list[suites.Cell], cells: dict[str, dict]) -> list[dict]:
    """Each corrected or alternative cell of the run beside its as-published cell: per metric both
    medians and their ratio (corrected / as published), from this run's results only."""
    out = []
    for c in labelled:
        mine = cells.get(c.id)
        if mine is None:
            continue
        base_id = c.label["as_published_cell"]
        base = cells.get(base_id)
        rows = _metric_pairs(base, mine, c.metrics)
        note = None
        if base is None:
            note = "the as-published cell is not in this run"
        elif base.get("status") != "ok":
            note = f"the as-published cell is {base.get('status')}"
        elif mine.get("status") != "ok":
            note = f"this cell is {mine.get('status')}"
        out.append({"cell": c.id, "kind": c.label["kind"], "defects": list(c.label["defects"]),
                    "as_published_cell": base_id, "status": mine.get("status"), "note": note,
                    "metrics": rows})
    return out


def number_anchor(number_id: str) -> str:
    return "n-" + slug(number_id, 60)


def _source_section(sid: str, source: dict, rows: list[dict],
                    labelled: list[suites.Cell] | None = None) -> dict:
    """A source with its tables: the numbers (ids) of each table whose cell is part of the run; each
    table's defects name the suite's cells that correct them for this table's cells."""
    tables: dict[str, list[dict]] = {}
    for r in rows:
        tables.setdefault(r["table"], []).append(r)
    rendered, uncovered = [], []
    for title, trs in tables.items():
        in_run = [r for r in trs if r["in_run"]]
        omitted = [r["id"] for r in trs if not r["in_run"]]
        if not in_run:
            uncovered.append({"title": title, "numbers": len(trs)})
            continue
        anchor = f"s{slug(sid, 10)}-t{len(rendered) + 1}"
        defect_ids: list[str] = []
        for r in in_run:
            defect_ids += [d for d in r["defects"] if d not in defect_ids]
        reasons = [r["reason"] for r in in_run]
        # the most frequent reason; of equally frequent ones the first in row order (a set's order
        # follows string hashing, which changes per process: the report must not)
        common = max(reasons, key=reasons.count) if reasons else None
        if common is not None and reasons.count(common) < 2:
            common = None
        for r in in_run:
            r["reason_shown"] = None if r["reason"] == common else r["reason"]
        rendered.append({
            "anchor": anchor, "title": title, "numbers": [r["id"] for r in in_run],
            "common_reason": common,
            "defects": _defects_of(source, defect_ids, _corrected_by(
                [c for c in labelled or [] if c.label["as_published_cell"] in {r["cell"] for r in in_run}])),
            "omitted": omitted,
            "plot": f"plots/{anchor}-{slug(title)}.svg",
            "efficiency": any(r["comparison"] == "efficiency" for r in in_run),
            "cpu_vs_gpu": any(r["published_on_gpu"] and r["device"] == "cpu" for r in in_run),
            "standins": sorted({part for r in in_run if r["standin"] for part in r["standin"].split("; ")}),
        })
    envs: dict[tuple, dict] = {}
    keys = ("gpu", "cuda", "cudnn", "framework", "framework_version")
    for r in rows:
        e = r["analysis"]["published"]["environment"]
        key = tuple(e.get(k) for k in keys)
        envs.setdefault(key, {**dict(zip(keys, key)), "numbers": 0})["numbers"] += 1
    return {
        "id": sid, "title": source.get("title"), "repository": source.get("repository"),
        "commit": source.get("commit"), "reference": source.get("reference"),
        "tolerance": source.get("tolerance", verdicts.DEFAULT_TOLERANCE),
        "environment": source.get("environment", {}),
        "publication_environments": list(envs.values()),
        "published_numbers": len(rows), "tables": rendered, "tables_not_covered": uncovered,
    }


def _summary(rows: list[dict], claim_results: list[dict]) -> dict:
    """Counts of the published numbers per verdict category and of the claims per status."""
    cats: dict[str, list[str]] = {c: [] for c in CATEGORIES}
    by_verdict: dict[str, int] = {}
    for r in rows:
        cats[overview.category(r)].append(r["id"])
        by_verdict[r["verdict"]] = by_verdict.get(r["verdict"], 0) + 1
    not_run = [r for r in rows if r["verdict"] == verdicts.NOT_RUN]
    claim_counts = {s: 0 for s in claims.PRECEDENCE}
    pair_counts = {s: 0 for s in claims.PRECEDENCE}
    for c in claim_results:
        claim_counts[c["status"]] += 1
        for pair in c.get("pairs") or []:
            pair_counts[pair["status"]] += 1
    return {
        "published_numbers": len(rows),
        "counts": {c: len(ids) for c, ids in cats.items()},
        "numbers": cats,
        "meanings": CATEGORY_MEANINGS,
        "by_verdict": dict(sorted(by_verdict.items())),
        "efficiency": {v: by_verdict.get(v, 0) for v in overview.EFFICIENCY}
        | {verdicts.INCONCLUSIVE: sum(1 for r in rows if overview.category(r) == overview.EFFICIENCY_CATEGORY
                               and r["verdict"] == verdicts.INCONCLUSIVE)},
        "deviates": {v: by_verdict.get(v, 0) for v in overview.SAME_MODEL if v != verdicts.REPRODUCED},
        "not_run_in_run": sum(1 for r in not_run if r["in_run"]),
        "not_run_not_in_run": sum(1 for r in not_run if not r["in_run"]),
        "implausible": [r["id"] for r in rows if r["implausible"]],
        "suspicious": [r["id"] for r in rows if r.get("tier") == verdicts.SUSPICIOUS],
        "tiers": {t: sum(1 for r in rows if r.get("tier") == t)
                  for t in ("PLAUSIBLE", verdicts.SUSPICIOUS, verdicts.IMPLAUSIBLE)}
        | {"no FLOP model": sum(1 for r in rows if r.get("tier") is None)},
        "claims": claim_counts,
        "claim_meanings": claims.MEANINGS,
        "claim_pairs": pair_counts,
        "claims_total": len(claim_results),
    }


def _roofline_summary(rows: list[dict]) -> dict:
    """The SUSPICIOUS threshold with its reason, and, when no number is suspicious, why none is."""
    policy = flops.load_models()["roofline"]
    frac = float(policy["suspicious_fraction"])
    below = [r for r in rows if r.get("tier") == "PLAUSIBLE"]
    top = max(below, key=lambda r: r["analysis"]["roofline"]["fraction_of_bound"], default=None)
    if top is None:
        none_txt = "no published number of these sources has a FLOP model and a device peak to bound it"
    else:
        f = top["analysis"]["roofline"]["fraction_of_bound"]
        none_txt = (f"every bounded number below the impossible ones stays under {frac:.0%} of its bound; "
                    f"the highest is {top['id']} at {f:.1%} of {top['bound']} on {top['published_device']}")
    return {"suspicious_fraction": frac, "why": policy["why"], "none_suspicious": none_txt}


def _run_device(devices_: list[str], host: dict) -> str:
    if "gpu" in devices_:
        names = [str(g.get("name")) for g in host.get("gpus") or [] if isinstance(g, dict)]
        return f"GPU ({', '.join(names) or 'name not recorded'})"
    return f"CPU ({cpus.short_label(host.get('cpu') or {})})" if devices_ or host else "machine"


def _rows_for(numbers: list[dict], run: dict, cells: dict[str, dict],
              all_sources: dict, load: dict) -> list[dict]:
    """Verdict, display row and environment diff of every published number."""
    host = run.get("host_fingerprint") or {}
    entries = {e["cell_id"]: e for e in run["cells"]}
    high = set(load["high_cells"])
    out = []
    for n, v in zip(numbers, verdicts.verdicts_for_run(numbers, cells, run, all_sources)):
        cell = cells.get(n["cell"]) if n["cell"] else None
        r = report_rows.row(n, v, cell, entries.get(n["cell"]) if n["cell"] else None)
        r["anchor"] = number_anchor(n["id"])
        r["device_label"] = _device_label(r["device"], host, short=True) if r["device"] else None
        r["load_high"] = n["cell"] in high
        r["tested"] = overview.tested(r)
        r["data"] = datasets.provenance(cell)  # stand-in or real data files, None if neither
        r["environment_diff"] = diff.environment_diff(n, all_sources.get(r["source"]), host, cell)
        # what kind of re-measurement it is (ACM terms), beside the verdict; None when nothing measured
        r["reproduction"] = reproduction.kind(r["analysis"], r["measured"] is not None)
        out.append(r)
    return out


def _host_summary(host: dict, cpu_peak: dict | None) -> dict:
    osi, cpu, mem = host.get("os") or {}, host.get("cpu") or {}, host.get("memory") or {}
    nv = host.get("nvidia") or {}
    gpus = [{k: g.get(k) for k in ("index", "name", "memory_total_bytes", "compute_capability",
                                   "architecture", "driver_version", "cuda_driver_version")}
            for g in host.get("gpus") or [] if isinstance(g, dict)]
    total = mem.get("total_bytes")
    return {
        "os": (osi.get("distro") or {}).get("PRETTY_NAME") or osi.get("name"),
        "kernel": osi.get("release"), "machine": osi.get("machine"), "libc": osi.get("libc"),
        "cpu": cpu.get("model_name"), "logical_cores": cpu.get("logical_cores"),
        "physical_cores": cpu.get("physical_cores"), "usable_cores": cpu.get("usable_cores"),
        "governor": (cpu.get("scaling_governor") or {}).get("per_cpu")
        or (cpu.get("scaling_governor") or {}).get("reason"),
        "memory_gib": round(total / 2 ** 30, 1) if total else None,
        "python": (host.get("python") or {}).get("version"),
        "nvidia_available": nv.get("available"), "nvidia_reason": nv.get("reason"),
        "nvidia_driver": nv.get("driver_version"), "gpus": gpus, "env": host.get("env") or {},
        "host_id": host.get("host_id"),
        "cpu_label": cpus.short_label(cpu),
        "cpu_peak_theoretical": _cpu_theoretical(host, cpu_peak),
        "cpu_peak_gflops": (cpu_peak or {}).get("gflops"), "cpu_peak_method": (cpu_peak or {}).get("method"),
    }


def _cpu_theoretical(host: dict, cpu_peak: dict | None) -> str:
    """The peak CPU verdicts use, with its derivation (the theoretical figure, or the measured GEMM rate
    where that exceeds it: reprokit.analysis.devices.measured_device)."""
    d = devices.measured_device({"device": "cpu"}, {"host_fingerprint": host, "cpu_peak": cpu_peak})
    return d.get("peak_source") or f"unknown: {d.get('reason')}"


def _environment_summary(cells: list[dict]) -> dict | None:
    """Which candidate environment ran the stack (reprokit/runners/venvs.py), or the stand-in and why, and
    every candidate tried for it on the measuring machine."""
    env = next((c["environment"] for c in cells if c.get("environment")), None)
    if not env:
        return None
    ch = env["chosen"]
    if ch.get("fallback"):
        used = f"stand-in on Python {ch['python']}"
    elif ch["candidate"].startswith("kit "):  # a stack without candidates: the kit's interpreter
        kind = "interpreter" if ch["candidate"] == "kit host" else "venv"
        used = f"the kit's {kind} on Python {ch['python']}"
    else:
        used = f"candidate {ch['candidate']} on Python {ch['python']}"
    if ch.get("requirements"):
        used += f" ({', '.join(ch['requirements'])})"
    attempts = [f"{a['candidate']} (Python {a.get('interpreter_version') or a['python']}): {a['outcome']}"
                + (f": {a['error']}" if a.get("error") else "") for a in env.get("attempts") or []]
    return {"used": used, "fallback": bool(ch.get("fallback")), "why": ch.get("why"),
            "attempts": attempts}


def _stack_summary(stack: str, cells: list[dict], spec: dict) -> dict:
    with_fp = [c for c in cells if c.get("stack_fingerprint")]
    fp = with_fp[0]["stack_fingerprint"] if with_fp else {}
    fw = fp.get("framework") or {}
    libs = fp.get("cuda_libraries") or {}
    numpy = fp.get("numpy") or {}
    image = fp.get("image") or {}

    def lib(name: str) -> str | None:
        d = libs.get(name) or {}
        return d.get("version_str") or (f"none ({d['reason']})" if d.get("reason") else None)

    details = [{"key": k, "value": flat(v)} for k, v in fw.items()
               if k not in ("name", "version", "errors") and v not in (None, "", [], {})]
    subs: list[dict] = []
    notes: list[str] = []
    apis: list[str] = []
    scan_loops: list[str] = []
    for c in cells:
        impl = c.get("implementation") or {}
        for s in impl.get("substitutes") or []:
            if s not in subs:
                subs.append(s)
        for n in impl.get("notes") or []:
            if n not in notes:
                notes.append(n)
        label = " ".join(str(impl[k]) for k in ("framework", "framework_version", "api")
                         if impl.get(k))
        if label and label not in apis:
            apis.append(label)
        if impl.get("scan_loop") and impl["scan_loop"] not in scan_loops:
            scan_loops.append(impl["scan_loop"])
    return {
        "stack": stack, "original": spec.get("original"), "image": spec.get("image"),
        "fingerprint_from": with_fp[0]["cell_id"] if with_fp else None,
        "fingerprint_error": fp.get("error"),
        "framework": fw.get("name"), "framework_version": fw.get("version"),
        "framework_error": fw.get("error"),
        "python": (fp.get("python") or {}).get("version"),
        "numpy": " ".join(str(x) for x in (numpy.get("version"), numpy.get("blas")) if x) or None,
        "cuda_runtime": lib("cuda_runtime"), "cudnn": lib("cudnn"), "cuda_driver": lib("cuda_driver"),
        "image_id": image.get("id") or image.get("digest") or image.get("reason"),
        "details": details, "implementations": apis, "substitutes": subs, "notes": notes,
        # only where the cells recorded them (results made before issue 13 render as they did)
        **({"scan_loops": scan_loops} if scan_loops else {}),
        **({"environment": env} if (env := _environment_summary(cells)) else {}),
        "cells": [c["cell_id"] for c in cells],
    }


def _node_records(rundir: results.RunDir) -> dict[str, dict]:
    """{node: its record of the run} (slurm/nodes/<node>.json, written by slurm_task.py: the node's
    fingerprint and CPU peak); unreadable ones are left out."""
    out = {}
    for f in sorted((rundir.path / "slurm" / "nodes").glob("*.json")):
        try:
            doc = files.loads_bounded(f, "record")
        except (OSError, ValueError, UserError):
            continue
        if isinstance(doc, dict):
            out[str(doc.get("node") or f.stem)] = doc
    return out


def node_sharing(slurm: dict) -> tuple[bool, str, str | None]:
    """(every cell had its node, how the cells shared nodes, the report's note or None) of a Slurm
    run, from the sbatch line of each job array (--exclusive or not; issue 34 item 7: GPU cells
    hold their GPUs, not whole nodes, unless --slurm-exclusive)."""
    opts = slurm.get("options") or {}
    jobs = slurm.get("jobs") or []
    arrays = [("--exclusive" in j["sbatch"], bool(j.get("gpus"))) for j in jobs if j.get("sbatch")]
    if not arrays:  # runs before the sbatch line was kept: their option (exclusive by default then)
        arrays = [(opts.get("exclusive", True) is not False, False)]
    held = [h for h, _ in arrays]
    exclusive = all(held)
    if exclusive:
        sharing, note = "exclusive nodes", None
    elif not any(held) and opts.get("exclusive") is False:
        sharing = "nodes shared (--slurm-no-exclusive)"
        note = ("the cells did not have their nodes to themselves (--slurm-no-exclusive): other jobs "
                "may have shared a node with a cell, and its timings then include their load")
    else:
        shared_gpu = all(gpu for h, gpu in arrays if not h)
        if shared_gpu and any(held):
            sharing = "CPU cells on exclusive nodes, GPU cells on shared nodes"
        elif shared_gpu:
            sharing = "GPU cells on shared nodes (each holds its GPUs)"
        else:
            sharing = "some cells on shared nodes"
        note = ("the GPU cells held their GPUs, not their nodes (the default; --slurm-exclusive "
                "holds whole nodes): other jobs may have used a node's CPUs beside a GPU cell, which "
                "a launch-bound cell feels")
    return exclusive, sharing, note


def _energy_rows(cell_list: list[dict]) -> list[dict]:
    """One row per timed metric of each GPU cell with an `energy` record (reprokit/probes/energy.py)."""
    rows = []
    for c in cell_list:
        for metric, e in sorted((c.get("energy") or {}).items()):
            rows.append({"cell": c["cell_id"], "metric": metric, "status": e["status"],
                         "joules_per_step": e.get("joules_per_step"),
                         "joules_per_item": e.get("joules_per_item"), "window_s": e.get("window_s"),
                         "disagreement": e.get("disagreement"), "flagged": bool(e.get("flagged")),
                         "reason": e.get("reason") or ""})
    return rows


def _cluster(run: dict, cell_list: list[dict], node_records: dict | None = None) -> dict | None:
    """A Slurm run (reprokit/runners/slurm.py): its launcher, job arrays, whether cells had their
    nodes to themselves, and its nodes with their cells; None for the other runners (whose reports
    have no such key)."""
    slurm = run.get("slurm")
    if run.get("runner") != "slurm" or not isinstance(slurm, dict):
        return None
    opts = slurm.get("options") or {}
    nodes: dict[str, dict] = {}

    def fingerprint(n: dict, fp: dict) -> None:
        if n["cpu"] is None and isinstance(fp, dict) and fp:
            cpu = fp.get("cpu") or {}
            # the distinguishing label (microarchitecture, the cores the node's jobs may use) and
            # the model name: nodes of one model with other CPU sets or counts differ here
            n["cpu"] = " ".join(x for x in (cpus.short_label(cpu), f"({cpu['model_name']})"
                                            if cpu.get("model_name") else "") if x)
            mem = (fp.get("memory") or {}).get("total_bytes")
            n["memory_gib"] = round(mem / 2**30, 1) if isinstance(mem, (int, float)) else None
            n["gpus"] = [g.get("name") for g in fp.get("gpus") or [] if isinstance(g, dict)]

    for c in cell_list:
        r = c.get("runner") or {}
        # run --repeat K: each process's node (reader/merge.py), else the cell's
        where = [(e["node"], f"{c['cell_id']} (process {e.get('index')})")
                 for e in c.get("processes") or [] if isinstance(e, dict) and e.get("node")]
        if len({w[0] for w in where}) <= 1:
            where = [(r["node"], c["cell_id"])] if r.get("node") else []
        for node, label in where:
            n = nodes.setdefault(node, {"node": node, "partitions": [], "cells": [],
                                        "cpu": None, "memory_gib": None, "gpus": []})
            if r.get("partition") and r["partition"] not in n["partitions"]:
                n["partitions"].append(r["partition"])
            n["cells"].append(label)
            if node == r.get("node"):
                fingerprint(n, r.get("node_fingerprint") or {})
    for n in nodes.values():  # a node only some processes ran on: its record of the run
        if n["cpu"] is None and node_records:
            fingerprint(n, (node_records.get(n["node"]) or {}).get("fingerprint") or {})
    jobs = slurm.get("jobs") or []
    exclusive, sharing, note = node_sharing(slurm)
    return {"launcher": opts.get("launcher"), "exclusive": exclusive, "sharing": sharing,
            "job_arrays": [j.get("job_id") for j in jobs],
            "nodes": sorted(nodes.values(), key=lambda n: n["node"]), "note": note}


def _rejudged(run: dict) -> dict | None:
    """The first screen's note of a run judged again with later data (`report RUN --rejudge OUT`,
    reprokit/run/rejudge.py): {"at", "kit", "copied_from", "started", "had_snapshot"}; None for a run
    judged with the data it started with."""
    r = run.get("rejudged")
    if not r:
        return None
    return {"at": r["at"], "kit": r["kit"], "copied_from": r["from"], "started": run.get("started"),
            "had_snapshot": bool(r.get("data_snapshot_before"))}


def build_context(rundir: results.RunDir) -> dict:
    # run.json as the files on disk have it (reconcile.py): an unreadable, invalid or deleted result
    # is listed as such and the others are reported; nothing is written here
    rec = reconcile.reconcile(rundir, modify=False)
    run = rec.run
    cell_list = sorted(rec.cells.values(), key=lambda c: results.cell_filename(c["cell_id"]))
    cells = {c["cell_id"]: c for c in cell_list}
    host = run.get("host_fingerprint") or {}
    description, source_ids, suite_note = _suite_info(run["suite"], cell_list)
    device_kinds = sorted({c.get("device") for c in cell_list if c.get("device")})
    all_sources = suites.load_sources()
    published = [n for sid in source_ids for n in suites.load_published(sid)]
    load = run_health.machine_load(run, cell_list)
    rows = _rows_for(published, run, cells, all_sources, load)
    gpu_health = run_health.gpu_health(cell_list)  # GPU cells run throttled or shared (none: no key)
    for r in rows:  # a number measured by such a cell says so, as one measured under load does
        if gpu_health["labels"].get(r.get("cell")):
            r["gpu_state_label"] = gpu_health["labels"][r["cell"]]
    labelled = _labelled_cells(run["suite"])
    sections = [_source_section(sid, all_sources.get(sid, {}), [r for r in rows if r["source"] == sid],
                                labelled)
                for sid in source_ids]
    claim_results = claims.check_claims(claims.observations_from_cells(cell_list, run), source_ids,
                                        published=published, run=run)
    run_device = _run_device(device_kinds, host)
    first_screen = [
        overview.source_line(sid, all_sources.get(sid, {}).get("title"),
                             [r for r in rows if r["source"] == sid],
                             [c for c in claim_results if c["source"] == sid], run_device.split(" (")[0])
        for sid in source_ids
    ]
    by_stack: dict[str, list[dict]] = {}
    for c in cell_list:
        by_stack.setdefault(c["stack"], []).append(c)
    stack_specs = run.get("stacks") or {}
    # a cell's own result file says its status; run.json's entry where there is none
    counts = status_counts((cells.get(e["cell_id"]) or e) for e in run["cells"])
    twins = _precision_twins(run["suite"], cells)
    context = {
        "schema_version": REPORT_VERSION, "kind": "report",
        "run": {k: run.get(k) for k in ("run_id", "suite", "argv", "runner", "protocol", "quick",
                                         "started", "finished", "wall_s", "kit")},
        "rejudged": _rejudged(run),
        "suite_description": description, "suite_note": suite_note,
        "status_counts": counts,
        "devices": device_kinds, "device_labels": {d: _device_label(d, host) for d in device_kinds},
        "run_device": run_device,
        "first_screen": first_screen,
        "intervals": run_health.interval_summary(cell_list, run),
        "plan": run_health.plan_summary(run),
        "conventions": roofline.CONVENTIONS,
        "roofline": _roofline_summary(rows),
        "efficiency_tolerance": verdicts.load_policy()["efficiency"]["tolerance"],
        "load": load,
        "summary": _summary(rows, claim_results),
        "numbers": rows,
        "sources": sections,
        "claims": sorted(claim_results, key=lambda c: CLAIM_ORDER.index(c["status"])),
        "claims_without_claim": [c["id"] for c in claim_results if c["status"] == claims.NO_CLAIM],
        "claim_ratios": claims.ratio_rows(claim_results),
        "energy": _energy_rows(cell_list),
        "real_work": real_work.summary(cell_list),
        "overhead": run_health.driver_overhead(run, cells),
        "unmatched": report_rows.unmatched(published, cell_list),
        "variants": _variants(labelled, cells),
        **({"precision_twins": twins} if twins["ran"] or twins["not_run"] else {}),
        "not_run": run_health.cells_not_run(run, cells),
        "incomplete": run_health.incomplete_cells(run),
        "incidents": [{"kind": i.get("kind"), "at": i.get("at"), "cell_id": i.get("cell_id"),
                       "text": i.get("text")} for i in run.get("incidents") or []],
        "environments": {
            "host": _host_summary(host, flops.cpu_peak_of(run)),
            "stacks": [_stack_summary(s, cs, stack_specs.get(s, {}))
                       for s, cs in sorted(by_stack.items())],
        },
    }
    if gpu_health["cells"]:
        context["gpu_state"] = gpu_health
    gpu_peak = run_health.gpu_peak_summary(run)  # the measured GEMM rate beside peaks.yaml
    if gpu_peak is not None:
        context["environments"]["host"]["gpu_peak"] = gpu_peak
    cluster = _cluster(run, cell_list, _node_records(rundir) if run.get("runner") == "slurm" else None)
    if cluster is not None:  # Slurm runs only: the other reports stay as they were
        context["cluster"] = cluster
        cpu_nodes = sorted({n["cpu"] for n in cluster["nodes"] if n["cpu"]})
        if len(cluster["nodes"]) > 1 and "cpu" in context["device_labels"]:
            # each cell is judged on its own node's CPU (devices.measured_device), not the driver's
            context["device_labels"]["cpu"] = (
                f"CPU: each cell's node's, {len(cluster['nodes'])} nodes "
                f"({'; '.join(cpu_nodes) or 'CPUs not recorded'}: see Nodes)")
    return context
