"""Benchmark the bootstrap: ours against the previous kernel and numpy's plain approach.

Intervals for ``--measures`` columns of ``--rows`` examples with ``--resamples`` resamples
(default: 12 measures, 1,000,000 examples, 1,000 resamples: about 10**9 weighted draws), timed
in turn in the same run, ``--runs`` times each after one untimed warm-up (compilation):

- ``ours``: :func:`pipeline.stats.bootstrap` (Poisson weights from counter-based random words,
  exact sums, threads over resample ranges), on every CPU and on one thread;
- ``previous``: the kernel this project used before (multinomial: n uniform indices per
  resample from ``numpy.random.Generator.integers``, counted by a compiled loop, then one
  pass of count x value), as it was;
- ``numpy``: the straightforward script (``values[idx].mean(axis=1)`` over blocks of index
  draws); it is timed on ``--numpy-resamples`` resamples (default 50) and its figures are
  scaled to ``--resamples`` (it is linear in them; a full run takes minutes).

Prints the median and the spread (min..max) of the wall seconds and CPU seconds of each, the
ratios of medians, and the load average before and after. Usage::

    python -m scripts.bench_bootstrap [--rows N] [--resamples R] [--measures K] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
from numba import njit

from pipeline import stats

_MAX_DRAWS = 1 << 22


@njit(cache=True, nogil=True)
def _previous_resample_sums(values, draws, out, first):  # pragma: no cover - compiled
    m, k = values.shape
    counts = np.zeros(m, dtype=np.int32)
    for i in range(draws.shape[0]):
        counts[:] = 0
        for j in range(m):
            counts[draws[i, j]] += 1
        for q in range(k):
            out[first + i, q] = 0.0
        for row in range(m):
            c = counts[row]
            if c:
                for q in range(k):
                    out[first + i, q] += c * values[row, q]


def previous(values: np.ndarray, n_bootstrap: int, seed: int) -> np.ndarray:
    """The previous implementation (pipeline/aggregate.py before the Poisson bootstrap)."""
    rng = np.random.default_rng(seed)
    n, k = values.shape
    out = np.empty((n_bootstrap, k))
    block = max(1, min(n_bootstrap, _MAX_DRAWS // n))
    for first in range(0, n_bootstrap, block):
        draws = rng.integers(0, n, size=(min(block, n_bootstrap - first), n), dtype=np.uint32)
        _previous_resample_sums(values, draws, out, first)
    out /= n
    return np.quantile(out, [0.025, 0.975], axis=0)


def plain_numpy(values: np.ndarray, n_bootstrap: int, seed: int) -> np.ndarray:
    """What a user would write: gather rows by random indices, take the means."""
    rng = np.random.default_rng(seed)
    n = len(values)
    per = max(1, (1 << 22) // n)
    means = [values[rng.integers(0, n, size=(min(per, n_bootstrap - f), n))].mean(axis=1)
             for f in range(0, n_bootstrap, per)]
    return np.quantile(np.concatenate(means), [0.025, 0.975], axis=0)


def ours(values: np.ndarray, hashes: np.ndarray, n_bootstrap: int, seed: int,
         threads: int | None) -> np.ndarray:
    """pipeline.stats: Poisson bootstrap over the measure columns."""
    estimates = [stats.Estimate((q,)) for q in range(values.shape[1])]
    reps = stats.bootstrap(values, hashes, estimates, n_bootstrap=n_bootstrap, seed=seed,
                           threads=threads)
    return np.array(stats.percentile_interval(reps, 0.95))


def _time(fn: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--measures", type=int, default=12)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--numpy-resamples", type=int, default=50)
    parser.add_argument("--peers", default="previous,numpy",
                        help="comma-separated peers to time besides ours (previous, numpy)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    values = rng.random((args.rows, args.measures))
    hashes = rng.integers(0, 2**63, args.rows, dtype=np.uint64)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    candidates: dict[str, Callable[[], object]] = {
        f"ours ({cpus} threads)": lambda: ours(values, hashes, args.resamples, 1, None),
        "ours (1 thread)": lambda: ours(values, hashes, args.resamples, 1, 1),
    }
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    if "previous" in peers:
        candidates["previous kernel"] = lambda: previous(values, args.resamples, 1)
    if "numpy" in peers:
        candidates["numpy gather"] = lambda: plain_numpy(values, args.numpy_resamples, 1)
    small = values[:1000]
    ours(small, hashes[:1000], 8, 1, None)  # warm-up: compile or load the kernels
    previous(small, 8, 1)
    load_before = os.getloadavg()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in candidates}
    for _ in range(args.runs):
        for name, fn in candidates.items():
            times[name].append(_time(fn))
    load_after = os.getloadavg()
    print(f"bootstrap: {args.rows:,} examples x {args.measures} measures x "
          f"{args.resamples:,} resamples; {args.runs} timed runs each, in turn, after one "
          f"untimed warm-up; {cpus} CPUs")
    print(f"load average (1, 5, 15 min) before: {load_before[0]:.2f} {load_before[1]:.2f} "
          f"{load_before[2]:.2f}; after: {load_after[0]:.2f} {load_after[1]:.2f} "
          f"{load_after[2]:.2f}")
    first = next(iter(candidates))
    base = statistics.median(w for w, _ in times[first])
    print(f"{'':22} {'wall median':>11} {'wall min..max':>15} {'cpu median':>10} "
          f"{'x ours':>7}")
    scale = {"numpy gather": args.resamples / args.numpy_resamples}
    for name, runs in times.items():
        walls = [w * scale.get(name, 1.0) for w, _ in runs]
        cpus_s = [c * scale.get(name, 1.0) for _, c in runs]
        med = statistics.median(walls)
        print(f"{name:22} {med:10.2f}s {min(walls):6.2f}..{max(walls):6.2f}s "
              f"{statistics.median(cpus_s):9.2f}s {med / base:6.2f}x")
    if "numpy gather" in times:
        print(f"numpy gather: timed on {args.numpy_resamples} resamples, scaled x"
              f"{scale['numpy gather']:g}")
    print(f"target: {first} at most 1.5 s for 1M x 12 x 1000")


if __name__ == "__main__":
    main()
