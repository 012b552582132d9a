"""Benchmark ``overlap agree``'s bootstrap against nlpstats 0.0.1 on the same data and resamples.

Issue 27, item 8: ``--systems`` x ``--inputs`` judged examples (default 100 x 1,000), ``--measures``
metrics (default 4), the three levels, Kendall tau-b, Boot-Both with ``--resamples``
resamples (default 1,000). Both compute the interval of every (measure, level) from the
same resample indices: nlpstats draws them from numpy's global generator; the indices are
drawn here in the order it draws them (rows, then columns, per resample), nlpstats is run
from the same seed, and ours is given them (``pipeline.agree.resampling.Indices``), so the
bounds must be equal (checked, to 1e-9).

nlpstats takes seconds per resample at this size (one scipy ``kendalltau`` per input per
resample), so it is timed on ``--peer-resamples`` resamples (default 20) and its time scaled
to ``--resamples`` (it is linear in them: a loop over resamples); the equality check uses
those first resamples for both. Ours runs ``--runs`` times after one untimed warm-up (numba
compiles the global-level kernel), in turn with the peer; medians, the spread (min..max),
the ratio, the peak memory of ours (tracemalloc, numpy's allocations included) and the load
average are printed. The machine is shared: figures vary with its load.

    python -m scripts.bench_agree [--systems 100] [--inputs 1000] [--measures 4]
        [--resamples 1000] [--peer-resamples 20] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import tracemalloc

import numpy as np

from pipeline.agree.resampling import Indices, bootstrap

LEVELS = ("system", "input", "global")


def data(systems: int, inputs: int, measures: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(systems, 1)) + rng.normal(scale=0.7, size=(systems, inputs))
    human = np.round(np.clip(3 + quality + rng.normal(scale=0.6, size=quality.shape), 1, 5) * 3) / 3
    metrics = [quality + rng.normal(scale=0.5 + k / 2, size=quality.shape)
               for k in range(measures)]
    return metrics, human


def peer_indices(seed: int, m: int, n: int, resamples: int) -> Indices:
    np.random.seed(seed)
    rows, cols = [], []
    for _ in range(resamples):
        rows.append(np.random.choice(m, m, replace=True))
        cols.append(np.random.choice(n, n, replace=True))
    return Indices(np.array(rows), np.array(cols), resamples)


def ours(metrics, human, indices: Indices) -> dict:
    return {(k, level): bootstrap(X, human, level, "kendall", indices=indices)
            for k, X in enumerate(metrics) for level in LEVELS}


def peer(metrics, human, seed: int, resamples: int) -> dict:
    from nlpstats.correlations import bootstrap as nlp_bootstrap

    out = {}
    for k, X in enumerate(metrics):
        for level in LEVELS:
            np.random.seed(seed)
            r = nlp_bootstrap(X, human, level, "kendall", "both", n_resamples=resamples)
            out[(k, level)] = (r.lower, r.upper)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--systems", type=int, default=100)
    p.add_argument("--inputs", type=int, default=1000)
    p.add_argument("--measures", type=int, default=4)
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--peer-resamples", type=int, default=20)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seed", type=int, default=7)
    a = p.parse_args()
    metrics, human = data(a.systems, a.inputs, a.measures)
    print(f"{a.systems} systems x {a.inputs} inputs = {a.systems * a.inputs:,} examples, "
          f"{a.measures} measures, levels {'+'.join(LEVELS)}, Kendall tau-b, Boot-Both; "
          f"load average {os.getloadavg()[0]:.1f}")
    small = peer_indices(a.seed, a.systems, a.inputs, a.peer_resamples)
    ours(metrics, human, Indices(small.rows[:2], small.cols[:2], 2))  # warm-up (numba)
    ours_small = ours(metrics, human, small)
    full = peer_indices(a.seed, a.systems, a.inputs, a.resamples)
    ours_times, peer_times = [], []
    peer_values = None
    for _ in range(a.runs):
        t = time.perf_counter()
        ours(metrics, human, full)
        ours_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        peer_values = peer(metrics, human, a.seed, a.peer_resamples)
        peer_times.append((time.perf_counter() - t) * a.resamples / a.peer_resamples)
    assert peer_values is not None
    worst = max(max(abs(ours_small[k].low - lo), abs(ours_small[k].high - hi))
                for k, (lo, hi) in peer_values.items())
    print(f"equal bounds on {a.peer_resamples} shared resamples: max |difference| {worst:.2e}")
    assert worst < 1e-9, worst
    tracemalloc.start()
    ours(metrics, human, full)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    mo, mp = statistics.median(ours_times), statistics.median(peer_times)
    print(f"ours     {mo:8.2f} s  ({min(ours_times):.2f}..{max(ours_times):.2f}) "
          f"for {a.resamples} resamples; peak traced memory {peak / 2**20:.0f} MiB")
    print(f"nlpstats {mp:8.2f} s  ({min(peer_times):.2f}..{max(peer_times):.2f}) scaled "
          f"from {a.peer_resamples} resamples")
    print(f"ratio nlpstats / ours: {mp / mo:.1f}x (range {min(peer_times) / max(ours_times):.1f}"
          f"..{max(peer_times) / min(ours_times):.1f}); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
