"""`run --repeat K`: merge a cell's K process files into its main result (pure; written by run/record.py).

Each of a cell's K fresh processes writes cells/<stem>.p<N>.json (bench/harness.py --process N;
the host writes a placeholder there when the process produced none: crash, timeout, OOM). After
every process the host rebuilds cells/<stem>.json from the process files that exist so far
(reprokit/run/record.py `merge_cell`, with `merge` here), so an interrupted run always has an
up-to-date merged result; reconcile merges again, in memory, a cell whose main result is gone:

- top level: the first ok process's result (run_id, cell_id, params, implementation,
  stack_fingerprint, ...), `repeat` K and `processes` (one entry per process attempted so far);
- each metric: `samples`, `raw_seconds` and `warmup_seconds` concatenated over the ok processes in
  index order, `processes` = the samples each ok process contributed, `stop_reasons` per ok
  process, `as_published_processes` each ok process's figure as its source defined it; `warmup`
  (a per-process count), `stop_reason` and the descriptive fields from the first;
- status: "ok" only when all K processes are ok; otherwise the status of the first process (by
  index) that is not ok, "pending" for one that has not run yet, with the reason
  "process N of K: <its reason>". The ok processes' metrics are kept either way.
"""

from __future__ import annotations

from reprokit import results
from reprokit.probes import energy, gpu_state, jit_cache

# per-process details of the runner that do not describe the merged cell (they stay in each
# process file)
_PER_PROCESS_RUNNER_KEYS = ("container_id", "container_name", "exit_code", "oom_killed",
                            "traceback")


def cut_summary(cut: dict) -> dict:
    """{"metric", "samples", "finished"} of a result's `cut`: the metric it was sampling and how many
    samples it had, and the metrics it had finished."""
    sampling = cut.get("sampling") or {}
    return {"metric": sampling.get("metric"), "samples": len(sampling.get("raw_seconds") or []),
            "finished": sorted(cut.get("finished") or {})}


def _max_load(entries: list[dict | None], key: str) -> list[float] | None:
    rows = [e[key] for e in entries if e and isinstance(e.get(key), list)]
    if not rows:
        return None
    return [max(vals) for vals in zip(*rows)]


def merge_metrics(ok: list[dict]) -> dict:
    """Metrics of the ok process results (in index order) merged into one metric dict each."""
    names: list[str] = []
    for r in ok:
        names += [n for n in r.get("metrics", {}) if n not in names]
    out = {}
    for name in names:
        parts = [r["metrics"][name] for r in ok if name in r.get("metrics", {})]
        first = parts[0]
        m = dict(first)
        m["samples"] = [v for p in parts for v in p["samples"]]
        m["raw_seconds"] = [v for p in parts for v in p["raw_seconds"]]
        m["warmup_seconds"] = [v for p in parts for v in p.get("warmup_seconds", [])]
        m["warmup"] = first["warmup"]
        m["stop_reason"] = first["stop_reason"]
        m["processes"] = [len(p["samples"]) for p in parts]
        m["stop_reasons"] = [p["stop_reason"] for p in parts]
        if any("state" in p for p in parts):  # what each process started from (e.g. compile cache)
            m["states"] = [p.get("state") for p in parts]
        if any("as_published" in p for p in parts):  # the source's own figure, one per process
            m["as_published_processes"] = [p.get("as_published") for p in parts]
        out[name] = m
    return out


def merge(processes: dict[int, dict], repeat: int) -> dict:
    """The merged cell result of the process results {index: result} of one cell (K = repeat)."""
    if not processes:
        raise ValueError("no process result to merge")
    order = sorted(processes)
    ok = [processes[i] for i in order if processes[i]["status"] == "ok"]
    base = ok[0] if ok else processes[order[0]]
    # what is one process's own stays in its file (a stopped process's `cut`: its entry below says it)
    merged = {k: v for k, v in base.items() if k not in ("process", "traceback", "skip", "cut")}
    cell_id = base["cell_id"]

    entries = []
    for i in order:
        r = processes[i]
        entries.append({
            "index": i, "status": r["status"], "reason": r.get("reason"),
            "started": r.get("started"), "finished": r.get("finished"), "wall_s": r.get("wall_s"),
            "process_wall_s": (r.get("runner") or {}).get("process_wall_s"),
            "result_file": f"cells/{results.cell_filename(cell_id, i)}",
            "log_file": r.get("log_file"), "load_avg": r.get("load_avg"),
        })
        if r.get("cut"):  # what a stopped process had measured (its process file keeps the samples)
            entries[-1]["cut"] = cut_summary(r["cut"])
        node = (r.get("runner") or {}).get("node")
        if node:  # a Slurm process: the node it ran on (the processes of a cell may differ)
            entries[-1]["node"] = node
    merged["repeat"] = repeat
    merged["processes"] = entries
    if len({r.get("code") for r in ok}) > 1:  # processes of two code versions (a resumed run): neither
        merged["code"] = None
    merged["metrics"] = merge_metrics(ok)

    _status(merged, processes, repeat)

    started = [r["started"] for r in processes.values() if r.get("started")]
    finished = [r["finished"] for r in processes.values() if r.get("finished")]
    merged["started"] = min(started) if started else None
    merged["finished"] = max(finished) if finished else None
    walls = [r["wall_s"] for r in processes.values() if isinstance(r.get("wall_s"), (int, float))]
    merged["wall_s"] = sum(walls) if walls else None
    loads = [r.get("load_avg") for r in processes.values()]
    if any(loads):  # the worst process, so the report's load warning sees it
        merged["load_avg"] = {"before": _max_load(loads, "before"),
                              "after": _max_load(loads, "after")}
    # the worst CUDA JIT cache state of any measuring process (a later process that compiled, e.g. on
    # another Slurm node, is not hidden); results without a cache record keep their stored label
    worst = jit_cache.worst([jit_cache.state(r) for r in ok
                             if r.get("jit_cache") is not None or r.get("device") == "gpu"])
    if worst is not None:
        merged["jit_cache"] = worst
    joules = energy.merge([processes[i].get("energy") for i in order])
    if joules is not None:
        merged["energy"] = joules
    gpu = gpu_state.merge([processes[i].get("gpu_state") for i in order])
    if gpu is not None:  # every process's throttling and other processes, so the report sees them
        merged["gpu_state"] = gpu
    first_bad = next((processes[i] for i in order if processes[i]["status"] != "ok"), None)
    merged["log_file"] = (first_bad or base).get("log_file")
    if base.get("runner") is not None:
        runner = {k: v for k, v in base["runner"].items() if k not in _PER_PROCESS_RUNNER_KEYS}
        pw = [e["process_wall_s"] for e in entries if isinstance(e["process_wall_s"], (int, float))]
        runner["process_wall_s"] = sum(pw) if pw else None
        nodes = sorted({e["node"] for e in entries if e.get("node")})
        if len(nodes) > 1:  # `node` and `node_fingerprint` are the first ok process's
            runner["nodes"] = nodes
        merged["runner"] = runner
    return merged


def _status(merged: dict, processes: dict[int, dict], repeat: int) -> None:
    """The merged status: ok when all K processes are, else the first process (by index) that is not
    ok, or `pending` for one that has not run; with its reason, traceback and --time-limit `skip`."""
    bad = None  # (index, status, reason, result or None) of the first process that is not ok
    for i in range(1, repeat + 1):
        r = processes.get(i)
        if r is None:
            bad = (i, "pending", "not run yet (if the run was interrupted, --resume RUN runs it)", None)
            break
        if r["status"] != "ok":
            bad = (i, r["status"], r.get("reason") or "no reason recorded", r)
            break
    if bad is None:
        merged["status"], merged["reason"] = "ok", None
    else:
        i, status, reason, r = bad
        merged["status"], merged["reason"] = status, f"process {i} of {repeat}: {reason}"
        if r is not None and r.get("traceback"):
            merged["traceback"] = r["traceback"]
        if r is not None and r.get("skip"):  # left or stopped by --time-limit
            merged["skip"] = r["skip"]


def load_processes(rundir: results.RunDir, cell_id: str, repeat: int,
                   run_id: str | None = None) -> dict[int, dict]:
    """{index: result} of the cell's process files that exist (of this run, when run_id given)."""
    out = {}
    for i in range(1, repeat + 1):
        r = rundir.load_cell(cell_id, i)
        if r is not None and (run_id is None or r.get("run_id") == run_id):
            out[i] = r
    return out

