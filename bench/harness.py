"""reprokit bench harness: runs inside a stack.

    python harness.py JOB.json [--cell CELL_ID] [--process N]

Reads a job file (docs/FORMATS.md), runs its cells (or only CELL_ID) and writes one JSON result
per cell into the job's out_dir, atomically: `<cell>.json`, or with `--process N` (one of the
host's `run --repeat K` processes, N >= 1) `<cell>.p<N>.json` with `"process": N` in it; the host
merges the process files into `<cell>.json`. A failing cell becomes data (status "failed" with its
reason), never an exception that ends the job. Exit status 0 means every selected cell has a result
file (whatever its status); anything else means the harness itself broke.

Python 3.5 syntax (2.7-compatible), standard library plus the stack's framework. Never imports
the host package `reprokit`.
"""
from __future__ import print_function

import datetime
import importlib
import json
import math
import os
import signal
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import corpora  # noqa: E402
import float_mode  # noqa: E402
import gpu_runtime  # noqa: E402
import ran_on  # noqa: E402
import timing  # noqa: E402

SCHEMA_VERSION = 8
PARTIAL_DIR = ".partial"  # reprokit/run/record.py PARTIAL_DIR: what a stopped process measured


def utcnow():
    return datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z"


def cell_filename(cell_id, process=None):
    """'/' becomes '__'; with a process index N (run --repeat), '<stem>.p<N>.json'."""
    stem = cell_id.replace("/", "__")
    if process is None:
        return stem + ".json"
    return "%s.p%d.json" % (stem, process)


def write_json_atomic(path, obj, indent=1):
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=indent, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def checked_samples(name, key, values):
    """`values` (a list) when every one is a finite number >= 0. Otherwise a ValueError naming
    the metric and the bad value: the cell then becomes status "failed" with that one-line reason,
    instead of a result holding NaN (which is not JSON) or a negative time."""
    values = list(values)
    for i, v in enumerate(values):
        bad = isinstance(v, bool)
        if not bad:
            try:
                x = float(v)
            except (TypeError, ValueError):
                bad = True
            else:
                bad = x != x or abs(x) == float("inf") or x < 0
        if bad:
            raise ValueError("refusing to record metric %r: %s[%d] of %d is %r, not a finite "
                             "number >= 0" % (name, key, i, len(values), v))
    return values


class CellContext(object):
    """What a workload sees: its parameters, the budget, and ways to record metrics."""

    def __init__(self, cell, job, process=None):
        # the stand-in data sets' sizes come from the kit's data (datasets.yaml) through the job file
        if "facts" in job:
            corpora.configure(job["facts"].get("stand_ins"))
        self.cell = cell
        self.process = process  # N of `--process N` (the host's run --repeat), else None
        self.params = cell.get("params", {})
        self.variant = cell.get("variant")
        # the cell's own device (its published numbers were measured on a CPU) over the job's
        self.device = cell.get("device") or job.get("device", "cpu")
        self.protocol = cell.get("protocol", "budget")
        self.budget_spec = cell.get("budget", {})
        self.metrics = {}
        self.implementation = {"notes": [], "substitutes": []}
        self.extra = {}
        self.ran_on = None  # set by a workload that knows where its work ran (record_ran_on)
        self.run_id = job.get("run_id")
        out = job.get("out_dir")  # where keep_so_far writes (none: a job without a results dir)
        self.partial_path = (os.path.join(out, PARTIAL_DIR, cell_filename(cell["id"], process))
                             if out else None)

    def record_ran_on(self, device, detail):
        """Where the cell's work ran ("gpu" | "cpu"), said by the workload itself; kept over what
        the harness asks the framework afterwards (bench/ran_on.py)."""
        self.ran_on = {"device": device, "detail": detail}

    # -- budget -----------------------------------------------------------------------------
    def budget(self, metric):
        """Budget for one metric. Under protocol 'published' the original iteration count for
        this metric is taken from params['published_iterations'][metric]."""
        count = None
        if self.protocol == "published":
            counts = self.params.get("published_iterations", {})
            count = counts.get(metric, counts.get("default"))
        return timing.Budget.from_dict(self.budget_spec, count)

    # -- recording --------------------------------------------------------------------------
    def precision_stop(self):
        """The adaptive stop rule of the budget (`rel_ci_half_width`), or None."""
        target = self.budget_spec.get("rel_ci_half_width")
        if not target or self.protocol == "published":
            return None
        import precision
        return precision.median_precision_stop(rel_half_width=float(target))

    def measure(self, name, step, unit, kind, items, method, sync=None, sync_desc=None,
                should_stop=None, real_work=None):
        """Time step() under this cell's budget and record metric `name`.

        Sampling stops at max_samples, or once min_samples are taken and either the time budget
        is spent or the median's 95 % confidence interval is narrower than the budget's
        `rel_ci_half_width` (adaptive sampling); the stop reason is recorded.

        `real_work` (bench/real_work.py) checks that the timed steps did the work: its
        `state()` (a digest of the weights, taken after the warm-up) must change over the timed
        training steps, and its `output(step_result)` of the last timed step must equal
        `reference()`, the same computation done untimed afterwards, within `rel_tol`. The check is
        recorded with the metric; a failed one fails the cell with its reason."""
        if should_stop is None:
            should_stop = self.precision_stop()
        t = timing.sample(step, self.budget(name), sync=sync, should_stop=should_stop,
                          before_timed=real_work.before if real_work is not None else None,
                          progress=lambda raw, warm: self.keep_so_far(name, unit, raw, warm))
        metric = self.record_timed(name, t, unit, kind, items, method, sync_desc)
        if real_work is not None:
            self.check_real_work([name], real_work, t)
        return metric

    def keep_so_far(self, name, unit, raw, warm):
        """Write what this process has measured so far (the metrics it finished, and the raw seconds of
        metric `name`, still sampling) to cells/.partial/<result file name>, atomically: a process
        stopped by a limit or a signal before its result leaves them (the host lists them)."""
        if not self.partial_path:
            return
        try:
            if not os.path.isdir(os.path.dirname(self.partial_path)):
                try:  # another process may make it at the same moment
                    os.makedirs(os.path.dirname(self.partial_path))
                except OSError:
                    pass
            write_json_atomic(self.partial_path, {
                "kind": "partial_samples", "run_id": self.run_id, "cell_id": self.cell["id"],
                "process": self.process, "at": utcnow(), "finished": self.metrics,
                "sampling": {"metric": name, "unit": unit, "raw_seconds": list(raw),
                             "warmup_seconds": list(warm)}}, indent=None)
        except (OSError, ValueError):  # keeping them must never cost the measurement
            pass

    def check_real_work(self, names, real_work, t):
        """Run `real_work` (bench/real_work.py Check) on the samples `t` (timing.sample's dict: its
        `before_timed` digest, taken after the warm-up so only timed steps count, and `last_result`)
        and record it with each metric in `names` (the metrics those samples gave). A failed check
        raises real_work.Failed, failing the cell with the reason; the metrics stay recorded."""
        got = real_work.check(t.get("before_timed"), t.get("last_result"))
        for name in names:
            self.metrics[name]["real_work"] = got
        if not got["ok"]:
            raise real_work.Failed("real-work check of %s failed: %s"
                                   % (" and ".join(names), got["reason"]))
        return got

    def record_timed(self, name, t, unit, kind, items, method, sync_desc=None):
        raw = checked_samples(name, "raw_seconds", t["raw_seconds"])
        warm = checked_samples(name, "warmup_seconds", t["warmup_seconds"])
        try:
            values, derivation = timing.derive(raw, kind, items)
        except ZeroDivisionError:
            raise ValueError("refusing to record metric %r: a timed sample took 0 s, too short "
                             "for the clock; time more work per sample" % (name,))
        values = checked_samples(name, "samples", values)
        self.metrics[name] = {
            "unit": unit,
            "samples": values,
            "raw_seconds": raw,
            "items_per_sample": items,
            "derivation": derivation,
            "warmup": len(warm),
            "warmup_seconds": warm,
            "stop_reason": t["stop_reason"],
            "method": method,
            "sync": sync_desc or self.default_sync(),
        }
        if t.get("window"):  # the timed span on the epoch clock, for the host's energy counter
            self.metrics[name]["window"] = t["window"]
        return self.metrics[name]

    def record_single(self, name, seconds, unit, method, sync_desc=None, state=None):
        """A metric measured once by nature (compile time, first step). `state` says what the
        measurement started from when that matters (e.g. a cold or warm compile cache)."""
        checked_samples(name, "raw_seconds", [seconds])
        value = seconds if unit == "s" else 1000.0 * seconds
        checked_samples(name, "samples", [value])
        self.metrics[name] = {
            "unit": unit, "samples": [value], "raw_seconds": [seconds], "items_per_sample": 1,
            "derivation": "seconds" if unit == "s" else "1000 * seconds", "warmup": 0,
            "warmup_seconds": [], "stop_reason": "single", "method": method,
            "sync": sync_desc or self.default_sync(),
        }
        if state is not None:
            self.metrics[name]["state"] = state
        return self.metrics[name]

    def record_as_published(self, name, definition, text, figure, segments, planned_iterations,
                            planned_segments=1, scale=1.0):
        """Metric `name` computed as its source defined it, recorded beside its per-iteration
        samples as `as_published` (docs/FORMATS.md): `definition` names it, `text` says what the
        source computed, `segments` (timing.split_segments) hold the raw seconds it is computed
        from, `planned_iterations` per segment and `planned_segments` are the source's counts.
        `complete` is false when fewer ran: the value is then an estimate (timing.segment_totals)
        and the report labels it partial, never as the published figure."""
        m = self.metrics[name]
        key = "as_published"
        segs = []
        for s in segments:
            seconds = checked_samples(name, key + ".seconds", s["seconds"])
            other = max(0.0, float(s.get("other_seconds", 0.0)))
            checked_samples(name, key + ".other_seconds", [other])
            segs.append({"seconds": seconds, "warmup": int(s.get("warmup", 0)),
                         "other_seconds": other,
                         "items_per_iteration": float(s["items_per_iteration"])})
        value = timing.as_published_value(figure, segs, planned_iterations, scale)
        checked_samples(name, key + ".value", [value])
        planned_iterations = int(planned_iterations)
        complete = (len(segs) >= int(planned_segments)
                    and all(len(s["seconds"]) >= planned_iterations for s in segs))
        m[key] = {
            "definition": definition, "text": text, "figure": figure, "scale": float(scale),
            "unit": m["unit"], "value": value, "complete": complete,
            "planned": {"segments": int(planned_segments),
                        "iterations_per_segment": planned_iterations},
            "segments": segs,
        }
        return m[key]

    def record_value(self, name, values, unit, method):
        """A non-time metric (memory, counts): values are samples in `unit`."""
        values = checked_samples(name, "samples", values)
        self.metrics[name] = {
            "unit": unit, "samples": values, "raw_seconds": [], "items_per_sample": 1,
            "derivation": "measured directly", "warmup": 0, "warmup_seconds": [],
            "stop_reason": "single", "method": method, "sync": "n/a",
        }
        return self.metrics[name]

    def default_sync(self):
        if self.device == "cpu":
            return "n/a: CPU execution is synchronous"
        return "none"

    def note(self, text):
        self.implementation["notes"].append(text)

    def substitute(self, original, used, why):
        """Record that `used` ran in place of `original` (a historical API or version)."""
        self.implementation["substitutes"].append(
            {"original": original, "used": used, "why": why})

    def describe(self, **fields):
        self.implementation.update(fields)


def _cuda_cache_state():
    """The CUDA JIT cache before the cell's workload imports anything (bench/gpu_runtime.py)."""
    try:
        import gpu_runtime
        return gpu_runtime.cuda_cache_state()
    except Exception as e:  # never costs a measurement
        return {"error": "%s: %s" % (type(e).__name__, e)}


def _add_gpu_runtime(fingerprint, cache_before):
    """The stack fingerprint's `cuda_cache` (cold: empty when the cell started) and, where the
    stack needs it, `libcuda_link` (the libcuda.so link made at the container's start)."""
    if not isinstance(fingerprint, dict):
        return
    try:
        import gpu_runtime
        fingerprint["cuda_cache"] = gpu_runtime.cuda_cache_record(cache_before,
                                                                  gpu_runtime.cuda_cache_state())
        link = gpu_runtime.libcuda_record()
        if link is not None:
            fingerprint["libcuda_link"] = link
    except Exception as e:
        fingerprint["cuda_cache"] = {"error": "%s: %s" % (type(e).__name__, e)}


def _driver_load():
    """Which libcuda the cell loaded and whether it fits the image's glibc (bench/driver_load.py)."""
    try:
        import driver_load
        return driver_load.record()
    except Exception as e:  # never costs a measurement
        return {"error": "%s: %s" % (type(e).__name__, e)}


def jit_cache_state(device, cache):
    """The cell result's `jit_cache` from its CUDA JIT cache record (bench/gpu_runtime.py
    jit_cache_state, the rules the host reads too); "n/a" on a CPU."""
    if device != "gpu":
        return "n/a"
    return gpu_runtime.jit_cache_state(cache)


def _backend(module, cell, framework):
    """The framework whose device and precision switches count: the module's BACKEND (a Keras
    workload's backend; a dict by variant like FRAMEWORK), else its FRAMEWORK."""
    backend = getattr(module, "BACKEND", framework)
    if isinstance(backend, dict):
        backend = backend.get(cell.get("variant"))
    return backend


def _add_precision(result, ctx, cell, state, tf32=None):
    """`ran_on` and `precision` (bench/ran_on.py, bench/float_mode.py); a cell that asked for a GPU
    and ran on the CPU becomes "failed" with the reason naming the fix. Never raises."""
    try:
        if not state.get("loaded"):
            where = {"device": "unknown", "detail": "the workload module did not load"}
        else:
            where = ctx.ran_on or ran_on.detect(state.get("backend"))
        result["ran_on"] = where
        result["precision"] = float_mode.record(
            state.get("requested") or cell.get("precision") or float_mode.FP32,
            state.get("backend"), state.get("applied"), state.get("env"), where, tf32)
        why = ran_on.mismatch(ctx.device, where)
        if why is not None and result.get("status") in ("ok", "failed"):  # the workload's own
            result["status"], result["reason"] = "failed", why  # error stays in `traceback`
    except Exception as e:  # a precision record must never cost a measurement
        result.setdefault("ran_on", {"device": "unknown", "detail": "check failed: %s" % e})
        result["precision"] = {"requested": cell.get("precision") or float_mode.FP32,
                               "effective": "unknown", "why": "read-back failed: %s" % e,
                               "settings": {}, "env": {}, "autotune": {}}


def _stack_fingerprint(framework):
    try:
        import stack_fingerprint
        return stack_fingerprint.collect(framework)
    except Exception as e:  # the fingerprint must never cost a measurement
        return {"error": "%s: %s" % (type(e).__name__, e)}


def _threads(fingerprint):
    """The threads the cell's framework computed with, read after the cell ran (its stack
    fingerprint): {"count", "source"}, or None when the framework does not say (TensorFlow's intra_op
    0 means its default, every core)."""
    fw = (fingerprint or {}).get("framework") or {}
    n = fw.get("num_threads")
    if isinstance(n, int) and n > 0:
        return {"count": n, "source": "torch.get_num_threads() after the cell ran"}
    t = fw.get("threads")
    if isinstance(t, dict) and isinstance(t.get("intra_op"), int) and t["intra_op"] > 0:
        return {"count": t["intra_op"], "source": "tf.config.threading intra_op_parallelism_threads"}
    return None


def _load_avg():
    try:
        return list(os.getloadavg())
    except (OSError, AttributeError):
        return None


def classify_exception(exc):
    if isinstance(exc, MemoryError):
        return "oom"
    text = str(exc).lower()
    if "out of memory" in text or "oom" in text.split() or "resource exhausted" in text:
        return "oom"
    return "failed"


def run_cell(cell, job, process=None):
    ctx = CellContext(cell, job, process)
    result = {
        "schema_version": SCHEMA_VERSION,
        "kind": "cell_result",
        "run_id": job["run_id"],
        "cell_id": cell["id"],
        "source": cell.get("source"),
        "stack": job["stack"],
        "workload": cell["workload"],
        "variant": cell.get("variant"),
        "params": cell.get("params", {}),
        "device": ctx.device,
        "protocol": ctx.protocol,
        "kit": job.get("kit", {}),
        "code": cell.get("code"),
        "started": utcnow(),
    }
    if process is not None:
        result["process"] = process
    cache_before = _cuda_cache_state()
    load_before = _load_avg()
    start = timing.clock()
    framework = None
    fp = {}  # float precision: requested, env, backend, applied (bench/float_mode.py)
    try:
        fp["requested"] = float_mode.check_request(cell.get("precision"))
        fp["env"] = float_mode.set_env(fp["requested"])  # before any framework is imported
        module = importlib.import_module("workloads." + cell["workload"])
        framework = getattr(module, "FRAMEWORK", None)
        if isinstance(framework, dict):  # one module serving several frameworks, by variant
            framework = framework.get(cell.get("variant"))
        fp["loaded"], fp["backend"] = True, _backend(module, cell, framework)
        fp["applied"] = float_mode.apply(fp["requested"], fp["backend"])
        for err in fp["applied"]["errors"]:
            ctx.note("precision: could not set fp32: %s" % err)
        module.run(ctx)
        missing = [m for m in cell.get("metrics", []) if m not in ctx.metrics]
        if missing:
            raise RuntimeError("workload did not produce metrics: %s" % ", ".join(missing))
        result["status"] = "ok"
        result["reason"] = None
    except BaseException as e:  # KeyboardInterrupt included: record, then re-raise below
        result["status"] = classify_exception(e)
        line = ("%s: %s" % (type(e).__name__, e)).strip().splitlines()
        result["reason"] = line[0][:500] if line else type(e).__name__
        result["traceback"] = traceback.format_exc()[-4000:]
        if isinstance(e, KeyboardInterrupt):
            result["status"] = "failed"
    result["wall_s"] = timing.clock() - start
    _add_precision(result, ctx, cell, fp, (job.get("facts") or {}).get("tf32"))
    # other work on the machine slows a cell down: keep the 1/5/15-minute load averages
    result["load_avg"] = {"before": load_before, "after": _load_avg()}
    result["finished"] = utcnow()
    result["metrics"] = ctx.metrics
    result["implementation"] = ctx.implementation
    result["stack_fingerprint"] = _stack_fingerprint(framework)
    threads = _threads(result["stack_fingerprint"])
    if threads is not None:  # the cores the host counts in this cell's peak
        result["threads"] = threads
    _add_gpu_runtime(result["stack_fingerprint"], cache_before)
    if ctx.device == "gpu" and isinstance(result["stack_fingerprint"], dict):
        result["stack_fingerprint"]["driver_load"] = _driver_load()
    result["jit_cache"] = jit_cache_state(ctx.device, (result["stack_fingerprint"] or {}).get("cuda_cache")
                                          if isinstance(result["stack_fingerprint"], dict) else None)
    if ctx.extra:
        result["extra"] = ctx.extra
    path = os.path.join(job["out_dir"], cell_filename(cell["id"], process))
    write_json_atomic(path, result)
    if ctx.partial_path and os.path.exists(ctx.partial_path):  # the result holds them all now
        try:
            os.remove(ctx.partial_path)
        except OSError:
            pass
    return result


HEARTBEAT_EXIT = 75  # reprokit.runners.cell_process.HEARTBEAT_EXIT: stopped because the driver is gone
TIMEOUT_GRACE_S = 30  # reprokit.runners.cell_process.TIMEOUT_GRACE_S (a job may say timeout_grace_s)


def arm_time_limit(cell, job):
    """alarm(timeout_s + grace) with SIGALRM's default action, which ends the process even inside
    C code: the cell's time limit holds when its driver (which enforces timeout_s) is gone."""
    timeout = cell.get("timeout_s")
    if not timeout or not hasattr(signal, "alarm"):
        return 0
    grace = job.get("timeout_grace_s", TIMEOUT_GRACE_S)
    seconds = int(math.ceil(float(timeout) + float(grace)))
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(max(1, seconds))
    return seconds


def watch_heartbeat(path, stale_s, poll_s=1.0):
    """A daemon thread that ends the process (exit HEARTBEAT_EXIT) once the driver's heartbeat
    file has not been touched for stale_s seconds: a container cannot see its driver's pid, so this
    is how a cell of a driver killed outright stops by itself. Returns the thread (None when the
    file does not exist: nothing to watch)."""
    import threading

    if not path or not os.path.exists(path):
        return None

    def loop():
        while True:
            time.sleep(poll_s)
            try:
                age = time.time() - os.stat(path).st_mtime
            except OSError:
                age = None  # the file is gone: as stale as it gets
            if age is None or age > stale_s:
                print("harness: the driver's heartbeat %s is %s (limit %.0f s): the driver is gone "
                      "or stopped; stopping so this cell does not measure unobserved"
                      % (path, "gone" if age is None else "%.0f s old" % age, stale_s))
                sys.stdout.flush()
                os._exit(HEARTBEAT_EXIT)

    t = threading.Thread(target=loop, name="reprokit-heartbeat")
    t.daemon = True
    t.start()
    return t


def main(argv=None):
    if argv is None:  # a process of its own: a GPU container's libcuda.so link (may re-exec)
        import gpu_runtime
        gpu_runtime.link_libcuda()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    job_path = argv[0]
    only = None
    if "--cell" in argv:
        only = argv[argv.index("--cell") + 1]
    process = None
    if "--process" in argv:
        try:
            process = int(argv[argv.index("--process") + 1])
        except (IndexError, ValueError):
            process = 0
        if process < 1:
            print("harness: --process needs an integer >= 1", file=sys.stderr)
            return 2
    with open(job_path) as f:
        job = json.load(f)
    try:  # another cell's process may make it at the same moment (exist_ok is 3.2+, not 2.7)
        os.makedirs(job["out_dir"])
    except OSError:
        if not os.path.isdir(job["out_dir"]):
            raise
    cells = [c for c in job["cells"] if only is None or c["id"] == only]
    if not cells:
        print("harness: no cell %r in %s" % (only, job_path), file=sys.stderr)
        return 2
    beat = os.environ.get("REPROKIT_HEARTBEAT")
    if beat:
        try:
            stale = float(os.environ.get("REPROKIT_HEARTBEAT_STALE_S") or 30)
        except ValueError:
            stale = 30.0
        watch_heartbeat(beat, stale)
    for cell in cells:
        arm_time_limit(cell, job)
        r = run_cell(cell, job, process)
        if hasattr(signal, "alarm"):
            signal.alarm(0)
        print("harness: %s %s%s" % (cell["id"], r["status"],
                                    "" if r["status"] == "ok" else " (%s)" % r["reason"]))
        sys.stdout.flush()
    return 0  # every cell's outcome, failures included, is in its result file


if __name__ == "__main__":
    sys.exit(main())
