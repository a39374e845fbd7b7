"""Workload parameters shared between the implementations of one source: the published defaults of
source 001 (word-level LM) and source 004 (PTB "large"), one copy each, and the one check every
workload makes of the parameters a job gives it.

A workload adds its own keys with `dict(WORD_LM_001, key=value)`; the published values are never
repeated in a workload module. A parameter that every cell of the suites gives (the published shape,
data set and optimiser: reprokit/data/suites/*.yaml) is GIVEN here, not repeated: the suite is its one
copy, and a job without it fails naming it. Standard library only, Python 3.5 syntax (2.7-compatible).
"""

# the default of a parameter the suite's cell always gives (its one copy is the suite file)
GIVEN = "<given by the suite>"

# Source 001 (PyTorch word_language_model, seed_workloads.md section 2).
WORD_LM_001 = {
    "dataset": GIVEN,
    "reading": "kawakami",      # blank lines emit nothing, as the original loader
    "data_dir": None,           # None: deterministic stand-in corpus (bench/corpora.py)
    "sha256": None,             # {file name: expected sha256} for real data
    "vocab": None,              # expected model vocabulary (33279); checked when given
    "vocab_override": None,     # stand-in corpus types instead of 33,278 (tests only)
    "emb": GIVEN,
    "hidden": GIVEN,
    "layers": GIVEN,
    "batch": GIVEN,
    "seq_len": 128,
    "lr": GIVEN,
    "tied": GIVEN,
    "seed": 1234,               # the original's default -seed
    "epochs": 10,               # the published command's -epochs 10 (train and validation passes)
    "published_iterations": None,
}

# Source 004 (TF PTB tutorial, "large" configuration, seed_workloads.md section 5).
PTB_LARGE_004 = {
    "dataset": GIVEN,
    "batch": GIVEN,
    "seq_len": GIVEN,
    "hidden": GIVEN,
    "layers": GIVEN,
    "vocab": GIVEN,
    "keep_prob": GIVEN,
    "init_scale": 0.04,
    "lr": 1.0,
    "max_grad_norm": 10.0,
    "gpus": 0,                  # 0: the job's device
    "data_dir": None,           # ptb.train.txt; None: deterministic stand-in
    "sha256": None,
    "n_tokens": None,           # stand-in length (tests)
    "seed": 1234,
}


def resolve(ctx, workload, defaults, variants=None):
    """defaults updated by ctx.params; a key not in defaults, or a variant not in variants (when
    given; None is always accepted), raises ValueError naming the known ones."""
    unknown = sorted(k for k in ctx.params if k not in defaults)
    if unknown:
        raise ValueError("unknown params for %s: %s (known: %s)"
                         % (workload, ", ".join(unknown), ", ".join(sorted(defaults))))
    if variants is not None and ctx.variant not in (None,) + tuple(variants):
        raise ValueError("%s: unknown variant %r (known: %s)"
                         % (workload, ctx.variant, ", ".join(variants)))
    p = dict(defaults)
    p.update(ctx.params)
    missing = sorted(k for k, v in p.items() if isinstance(v, str) and v == GIVEN)
    if missing:
        raise ValueError("%s needs params %s, which the suite's cell gives (reprokit/data/suites); "
                         "this job's cell lacks them" % (workload, ", ".join(missing)))
    return p


def wikitext2_name(p):
    """The stand-in / loader name of source 001's reading of WikiText-2."""
    if p["reading"] not in ("kawakami", "standard"):
        raise ValueError("reading must be 'kawakami' or 'standard', got %r" % (p["reading"],))
    return "wikitext-2-kawakami" if p["reading"] == "kawakami" else "wikitext-2"
