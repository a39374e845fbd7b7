"""Hierarchical bootstrap over a measurement's levels: processes, then iterations within them.

Kalibera & Jones, "Rigorous Benchmarking in Reasonable Time" (ISMM 2013), section 4: the ratio of two
systems' times gets its interval from a bootstrap that resamples every level of the experiment: draw
the processes with replacement, then within each drawn process its iterations with replacement, and
take the statistic (here the pooled median) of the resample. The ratio's interval is the percentile
interval of the ratio of the two sides' resampled statistics. With one process per side only the
iteration level exists and the interval covers those processes only (the caller says so).

Pure functions (numpy), deterministic (a fixed seed).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

N_BOOT = 2000
SEED = 0


# resamples are drawn and their medians taken in chunks of at most this many values
_CHUNK_VALUES = 250_000


def medians(groups: Sequence[Sequence[float]], n_boot: int = N_BOOT, seed: int = SEED) -> np.ndarray:
    """n_boot resampled pooled medians of `groups` (one list of iteration values per process).

    Drawn from one generator in chunks of resamples (the chunk's size depends only on the groups'
    shape, so the values do too): one process: its n iteration indices per resample, uniform integers
    (the values of drawing them resample by resample); k > 1 processes: the chunk's k process indices
    per resample, then for each drawn process (of length L) its iteration indices as floor(u * L) of
    uniform u in [0, 1), taken from a draw as long as the longest process."""
    rng = np.random.default_rng(seed)
    procs = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not procs:
        raise ValueError("no samples to resample")
    k = len(procs)
    lens = np.array([len(p) for p in procs])
    longest = int(lens.max())
    chunk = max(1, _CHUNK_VALUES // (k * longest))
    out = np.empty(n_boot)
    if k == 1:
        x = procs[0]
        for start in range(0, n_boot, chunk):
            c = min(chunk, n_boot - start)
            out[start:start + c] = np.median(x[rng.integers(0, longest, size=(c, longest))], axis=1)
        return out
    table = np.full((k, longest), np.nan)
    for i, p in enumerate(procs):
        table[i, :len(p)] = p
    uneven = bool((lens != longest).any())
    for start in range(0, n_boot, chunk):
        c = min(chunk, n_boot - start)
        picks = rng.integers(0, k, size=(c, k))
        drawn_lens = lens[picks][:, :, None]
        idx = (rng.random((c, k, longest)) * drawn_lens).astype(np.int64)
        vals = table[picks[:, :, None], idx]
        if uneven:  # a shorter process's draws past its length take no part
            vals = np.where(np.arange(longest) < drawn_lens, vals, np.nan)
            out[start:start + c] = np.nanmedian(vals.reshape(c, -1), axis=1)
        else:
            out[start:start + c] = np.median(vals.reshape(c, -1), axis=1)
    return out


def ratio_interval(num: Sequence[Sequence[float]], den: Sequence[Sequence[float]], confidence: float = 0.95,
                   n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """The percentile interval of median(num) / median(den) from the hierarchical bootstrap of both sides
    (independent resamples). Returns {"low", "high", "ratio" (of the observed pooled medians),
    "levels" (["processes", "iterations"], or ["iterations"] when a side has one process),
    "processes": [k_num, k_den], "method", "confidence"}."""
    a = medians(num, n_boot, seed)
    b = medians(den, n_boot, seed + 1)
    r = a / b
    alpha = 1.0 - confidence
    lo, hi = np.quantile(r, [alpha / 2, 1 - alpha / 2])
    obs = float(np.median(np.concatenate([np.asarray(g, float) for g in num]))
                / np.median(np.concatenate([np.asarray(g, float) for g in den])))
    k = [sum(1 for g in num if len(g)), sum(1 for g in den if len(g))]
    return {"low": float(lo), "high": float(hi), "ratio": obs,
            "levels": ["processes", "iterations"] if min(k) > 1 else ["iterations"], "processes": k,
            "method": "hierarchical_bootstrap", "confidence": confidence}
