"""A Slurm run in its report: its launcher, job arrays, whether the cells had their nodes to themselves,
and its nodes with their cells, CPUs, memory and GPUs (reprokit/runners/slurm.py ran it)."""

from __future__ import annotations

from reprokit.analysis import cpus
from reprokit.reader.frozen import mapping
from reprokit.reader.model import Run, Slurm


def node_sharing(slurm: Slurm) -> tuple[bool, str, str | None]:
    """(every cell had its node, how the cells shared nodes, the report's note or None) of a Slurm
    run, from each job array's `exclusive` (whether it held whole nodes; GPU cells hold their GPUs,
    not whole nodes, unless --slurm-exclusive); a run that submitted no array: from its options."""
    arrays = [(bool(j["exclusive"]), bool(j.get("gpus"))) for j in slurm.jobs] \
        or [(slurm.options.get("exclusive", True) is not False, False)]
    held = [h for h, _ in arrays]
    exclusive = all(held)
    if exclusive:
        return exclusive, "exclusive nodes", None
    if not any(held) and slurm.options.get("exclusive") is False:
        return exclusive, "nodes shared (--slurm-no-exclusive)", (
            "the cells did not have their nodes to themselves (--slurm-no-exclusive): other jobs "
            "may have shared a node with a cell, and its timings then include their load")
    shared_gpu = all(gpu for h, gpu in arrays if not h)
    if shared_gpu and any(held):
        sharing = "CPU cells on exclusive nodes, GPU cells on shared nodes"
    elif shared_gpu:
        sharing = "GPU cells on shared nodes (each holds its GPUs)"
    else:
        sharing = "some cells on shared nodes"
    return exclusive, sharing, ("the GPU cells held their GPUs, not their nodes (the default; "
                                "--slurm-exclusive holds whole nodes): other jobs may have used a node's "
                                "CPUs beside a GPU cell, which a launch-bound cell feels")


def _describe(n: dict, fp: dict) -> None:
    """Fill a node's CPU, memory and GPUs from a fingerprint, once."""
    if n["cpu"] is not None or not isinstance(fp, dict) or not fp:
        return
    cpu = mapping(fp.get("cpu"))
    # the distinguishing label (microarchitecture, the cores the node's jobs may use) and the model
    # name: nodes of one model with other CPU sets or counts differ here
    n["cpu"] = " ".join(x for x in (cpus.short_label(cpu), f"({cpu['model_name']})"
                                    if cpu.get("model_name") else "") if x)
    mem = mapping(fp.get("memory")).get("total_bytes")
    n["memory_gib"] = round(mem / 2**30, 1) if isinstance(mem, int | float) else None
    n["gpus"] = [g.get("name") for g in fp.get("gpus") or [] if isinstance(g, dict)]


def summary(run: Run) -> dict | None:
    """The report's `cluster` of a Slurm run; None for the other runners (whose reports have no such
    key)."""
    if run.runner != "slurm" or run.slurm is None:
        return None
    nodes: dict[str, dict] = {}
    for c in run.cell_results():
        r = c.runner
        # run --repeat K: each process's node (reader/merge.py), else the cell's
        where = [(e.node, f"{c.cell_id} (process {e.index})") for e in c.processes if e.node]
        if len({w[0] for w in where}) <= 1:
            where = [(r["node"], c.cell_id)] if r.get("node") else []
        for node, label in where:
            n = nodes.setdefault(node, {"node": node, "partitions": [], "cells": [],
                                        "cpu": None, "memory_gib": None, "gpus": []})
            if r.get("partition") and r["partition"] not in n["partitions"]:
                n["partitions"].append(r["partition"])
            n["cells"].append(label)
            if node == r.get("node"):
                _describe(n, mapping(r.get("node_fingerprint")))
    for n in nodes.values():  # a node only some processes ran on: its record of the run
        _describe(n, mapping(mapping(run.node_records.get(n["node"])).get("fingerprint")))
    exclusive, sharing, note = node_sharing(run.slurm)
    return {"launcher": run.slurm.options.get("launcher"), "exclusive": exclusive, "sharing": sharing,
            "job_arrays": [j.get("job_id") for j in run.slurm.jobs],
            "nodes": sorted(nodes.values(), key=lambda n: n["node"]), "note": note}
