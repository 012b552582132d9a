"""Means, corpus scores from summed statistics, and seeded resampling (``score`` and ``compare``).

Every estimate here is a function of **column sums** of a per-example matrix: the mean of a
measure is ``sum(x) / n``; a corpus score (BLEU, chrF) is ``f(sum of each statistic)``, as in
sacrebleu, where per-segment statistics are summed and the score is computed once.

**Resampling** gives each example a random integer weight and recomputes the estimates from
the weighted column sums:

- *Poisson bootstrap* (``weights="poisson"``): weights are independent Poisson(1) draws, the
  large-n equivalent of drawing n examples with replacement (Hanley & MacGibbon 2006,
  "Creating non-parametric bootstrap samples using Poisson frequencies", Computer Methods and
  Programs in Biomedicine 83; Chamandy et al. 2012, "Estimating uncertainty for massive data
  streams", Google). A mean is ``sum(w x) / sum(w)``; a corpus score ``f(sum(w s))``. A
  resample whose weights are all 0 (probability ``e**-n``) has no value (NaN) and is left out
  of the interval.
- *Random relabelling* (``weights="flip"``): weights are independent fair 0/1 draws, for
  paired approximate randomization tests.

Random numbers are counter-based, so any example's weights can be drawn alone, in any order,
on any worker: example i has a 64-bit key ``k_i`` (a hash of its id: see
:func:`stream_keys`), and its weights for resamples ``4j .. 4j+3`` come from the four 16-bit
lanes ``u`` of ``word(i, j) = mix64(k_i + (j + 1) * 0x9E3779B97F4A7C15)`` (SplitMix64: Steele,
Lea & Flood 2014, "Fast splittable pseudorandom number generators", OOPSLA), lane ``l``
holding bits ``16l .. 16l+15``. A Poisson weight is ``#{m : u >= T_m}`` for the thresholds
``T_m = round(65536 * P(Poisson(1) <= m))``, m = 0..7 (so probabilities are exact to 2**-16 and
weights stop at 8; P(Poisson(1) > 8) is 1e-6); a flip is ``u >= 32768``.

**Exact sums.** Before resampling, each column is rounded to the grid ``2**-s`` with ``s``
the largest integer such that ``max_weight * n * max|x| < 2**52 * 2**-s`` (:func:`to_grid`);
every partial sum of weighted values is then a multiple of ``2**-s`` below ``2**53 * 2**-s``,
i.e. exactly representable, so the sums are exact whatever the order of the rows, the
blocking, the vector width or the thread that computes them. For scores in [0, 1] and
1,000,000 examples the grid is ``2**-29`` (about 1.9e-9); integer statistics stay exact. A
resampled value therefore agrees with a floating-point computation to about that grid, and
the same seed gives bit-identical intervals wherever and in whatever order the work is done.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from pipeline.compiled import kernel
from pipeline.machine import usable_cpus

# summed statistics, float64 (R, S) -> scores (R,); the same as metrics.base.CorpusScore
CorpusScore = Callable[[np.ndarray], np.ndarray]

WEIGHTS = ("poisson", "flip")
BOOTSTRAP_METHOD = "poisson"
_STREAM = {"poisson": 0x5DEECE66D1CE4E5B, "flip": 0x2545F4914F6CDD1D}
_LANES = 4


def _thresholds(weights: str) -> np.ndarray:
    if weights == "flip":
        return np.array([32768] + [65536] * 7, dtype=np.int64)
    cdf, out = 0.0, []
    for m in range(8):
        cdf += math.exp(-1.0) / math.factorial(m)
        out.append(min(65536, round(cdf * 65536)))
    return np.array(out, dtype=np.int64)


THRESHOLDS = {w: _thresholds(w) for w in WEIGHTS}
MAX_WEIGHT = {"poisson": 8, "flip": 1}


def stream_keys(hashes: np.ndarray, *, seed: int, weights: str) -> np.ndarray:
    """Per-example keys of the random streams: ``mix64(hash ^ mix64(seed ^ C_weights))``.

    Args:
        hashes: uint64 (n,), a stable hash of each example's identity (e.g.
            :func:`pipeline.io.partition.hash_ids` of the ids); equal hashes share weights.
        seed: the seed, an integer in [0, 2**64).
        weights: ``poisson`` or ``flip`` (independent streams for the same seed).

    Returns:
        uint64 (n,).

    Raises:
        ValueError: seed out of range or unknown weights.

    """
    if weights not in _STREAM:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    if not 0 <= int(seed) < 1 << 64:
        raise ValueError(f"the seed must be in [0, 2**64), got {seed}")
    keys = kernel("stream_keys")
    stream = np.empty(1, dtype=np.uint64)
    keys(np.array([int(seed) ^ _STREAM[weights]], dtype=np.uint64), np.zeros(1, np.uint64),
         stream)  # mix64(seed ^ C_weights)
    out = np.empty(len(hashes), dtype=np.uint64)
    keys(hashes, stream, out)
    return out


def position_hashes(n: int) -> np.ndarray:
    """Hashes of row positions 0..n-1 (keys for examples identified by their position)."""
    out = np.empty(n, dtype=np.uint64)
    kernel("stream_keys")(np.arange(n, dtype=np.uint64), np.zeros(1, np.uint64), out)
    return out


def column_max_abs(values: np.ndarray) -> np.ndarray:
    """Largest absolute value of each column of a float64 (n, k) matrix -> (k,)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    top = np.zeros(values.shape[1])
    kernel("column_max_abs")(values, top)
    return top


def grid_scales(n: int, max_abs: np.ndarray, *, max_weight: int) -> np.ndarray:
    """Each column's exact-summation scale ``2**s_q`` (see :func:`to_grid`).

    Args:
        n: the rows summed together (a whole scope, though its rows be gridded apart).
        max_abs: float64 (k,), each column's largest absolute value over those rows.
        max_weight: the largest weight of one example (8 Poisson, 1 flip).

    Returns:
        float64 (k,): ``2**s_q``, 1 for an all-zero column.

    """
    scales = np.ones(len(max_abs))
    for q in range(len(max_abs)):
        if max_abs[q] > 0.0:
            s = 52 - math.ceil(math.log2(max_weight * n * float(max_abs[q])))
            scales[q] = 2.0 ** min(s, 1000)
    return scales


def to_grid(values: np.ndarray, *, max_weight: int, out: np.ndarray | None = None,
            scales: np.ndarray | None = None) -> np.ndarray:
    """Round each column to its exact-summation grid, transposed for the resampling kernel.

    Column q is rounded (to nearest, ties to even) to multiples of ``2**-s_q``, the largest
    ``s_q`` with ``max_weight * n * max|x_q| <= 2**(52 - s_q)``: every weighted partial sum is
    then exact in float64. Integers stay exact while ``s_q >= 0`` (up to 2**52 in total).

    Args:
        values: float64 (n, k), finite.
        max_weight: the largest weight a resample gives one example (8 Poisson, 1 flip).
        out: float64 (k, n), C-contiguous, to write the grid into (None: a new array).
        scales: float64 (k,), the scales of :func:`grid_scales` for a scope of which these
            rows are a part (None: these rows are the scope). Rows of one scope gridded
            apart with the scope's scales give exactly the sums of the whole.

    Returns:
        float64 (k, n), C-contiguous: ``out`` when given.

    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    n, k = values.shape
    if scales is None:
        scales = grid_scales(n, column_max_abs(values), max_weight=max_weight)
    if out is None:
        out = np.empty((k, n))
    kernel("round_transposed")(values, scales, out)
    return out


def resample_sums(grid: np.ndarray, keys: np.ndarray, *, weights: str, first: int, count: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Weighted column sums of ``count`` resamples (the compiled kernel).

    The kernel is compiled ahead of time (:func:`pipeline.compiled.kernel`: for x86-64-v3 where
    the CPU has it) and releases the GIL, so threads overlap (see
    :func:`resample_sums_threaded`); nothing compiles at run time, whatever the size.

    Args:
        grid: float64 (k, n) from :func:`to_grid` (with this ``weights``' maximum weight).
        keys: uint64 (n,) from :func:`stream_keys`.
        weights: ``poisson`` or ``flip``.
        first: index of the first resample, a multiple of 4 (resample r uses lane r % 4 of
            word r // 4, so any range can be computed alone).
        count: resamples, >= 0.

    Returns:
        ``(sums, totals)``: float64 (count, k) weighted column sums and float64 (count,)
        sums of the weights, both exact.

    """
    if first % _LANES:
        raise ValueError(f"first must be a multiple of {_LANES}, got {first}")
    k = grid.shape[0]
    n_words = -(-count // _LANES)
    acc = np.zeros((k, n_words * _LANES))
    tot = np.zeros(n_words * _LANES)
    if n_words and grid.shape[1]:
        kernel("weighted_sums")(grid, keys, first // _LANES, n_words, THRESHOLDS[weights],
                                weights == "flip", acc, tot)
    return np.ascontiguousarray(acc[:, :count].T), tot[:count]


def _thread_ranges(count: int, threads: int) -> list[tuple[int, int]]:
    words = -(-count // _LANES)
    per = -(-words // max(1, threads))
    out = []
    for w0 in range(0, words, max(per, 1)):
        start = w0 * _LANES
        out.append((start, min(count, (w0 + per) * _LANES) - start))
    return out


def resample_sums_threaded(grid: np.ndarray, keys: np.ndarray, *, weights: str, first: int,
                           count: int, threads: int | None = None
                           ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`resample_sums` split over threads by resample ranges (same result, exactly).

    Args:
        grid: float64 (k, n), as :func:`resample_sums`.
        keys: uint64 (n,), as :func:`resample_sums`.
        weights: ``poisson`` or ``flip``.
        first: the first resample, a multiple of 4.
        count: resamples, >= 0.
        threads: threads to use (default: the CPUs this process may use).

    """
    if threads is None:
        threads = usable_cpus()
    ranges = _thread_ranges(count, threads)
    if len(ranges) <= 1:
        return resample_sums(grid, keys, weights=weights, first=first, count=count)
    with ThreadPoolExecutor(max_workers=len(ranges)) as pool:
        parts = list(pool.map(lambda rc: resample_sums(grid, keys, weights=weights,
                                                       first=first + rc[0], count=rc[1]),
                              ranges))
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


@dataclass(frozen=True)
class Estimate:
    """How one reported value is computed from column sums.

    Attributes:
        columns: the matrix columns it reads: one for a mean, the statistics (in the
            corpus function's order) for a corpus score.
        corpus: the corpus function (summed statistics (R, S) -> (R,)); None for the mean of
            the single column.
        sized: the corpus function depends on the sums' scale (see :func:`evaluate`).

    """

    columns: tuple[int, ...]
    corpus: CorpusScore | None = None
    sized: bool = False


def evaluate(estimates: Sequence[Estimate], sums: np.ndarray, totals: np.ndarray, *,
             size: float | None = None) -> np.ndarray:
    """Estimates from weighted column sums.

    A mean is ``sum(w x) / sum(w)``. A corpus score is its function of the weighted sums;
    for an estimate marked ``sized``, given ``size`` (a resample's), of the sums scaled to
    that many examples, ``sum(w s) x size / sum(w)``, as the multinomial bootstrap's
    resamples all have the scope's size (Efron & Tibshirani 1993, ch. 6). The scale matters
    where the function is not a ratio of the sums: sacrebleu's BLEU smoothing (``exp``:
    ``100 / (2^k x total)``, ``floor``, ``add-k``) scores a corpus counted twice otherwise,
    so without it a one-example group's interval ran from half its value to its value
    (issue 25, item 28). Functions of ratios (chrF) are left unscaled, bit for bit.

    Args:
        estimates: M estimates.
        sums: float64 (R, k) weighted column sums.
        totals: float64 (R,) sums of the weights; rows with total 0 give NaN.
        size: the number of examples the sums are of (the scope's), > 0; None: the sums as
            they are (point estimates, whose weights are all 1).

    Returns:
        float64 (R, M).

    """
    out = np.empty((sums.shape[0], len(estimates)))
    empty = totals <= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = None if size is None else (float(size) / totals)[:, None]
        for m, e in enumerate(estimates):
            if e.corpus is None:
                out[:, m] = sums[:, e.columns[0]] / totals
            else:
                these = sums[:, list(e.columns)]
                if scale is not None and e.sized:
                    these = these * scale
                out[:, m] = np.asarray(e.corpus(these), dtype=np.float64)
    out[empty] = np.nan
    return out


def exact_mean(values: np.ndarray) -> float:
    """Return ``math.fsum(values) / len(values)``: the mean from a correctly rounded sum.

    Args:
        values: float64 array of shape (n,), n >= 1.

    """
    return math.fsum(values.tolist()) / len(values)


# Rounds of exact_partials before giving up (a float64 sum spans at most 2,098 bits, 53 a round)
_PARTIAL_ROUNDS = 48
# Levels of exact_partials' grids (each about 53 - log2(n) bits finer than the one before)
_GRID_LEVELS = 40


def exact_partials(values: np.ndarray) -> list[float]:
    """Floats whose exact sum is the exact sum of ``values`` (mergeable exact summation).

    ``math.fsum`` of these floats, with those of other parts of the same column, is
    ``math.fsum`` of all the values: the correctly rounded sum, bit for bit, whatever the
    parts. The values are split into levels, each rounded to a grid fine enough that its sum
    is exact in float64 (as in :func:`to_grid`: ``n * max|x| <= 2**52`` grid steps) and the
    remainder carried to the next, finer level; each level's sum is one partial, usually two
    or three of them. Where that does not apply (values above ``2**52 / n``, infinities,
    NaN, or more than 40 levels) the partials are taken with ``math.fsum`` instead
    (Shewchuk's, the correctly rounded remainder of the ones before, three passes or so).

    Args:
        values: float64 (n,), C-contiguous or not.

    Returns:
        The partials, largest first; empty when the sum is exactly 0. A column holding an
        infinity or NaN gives ``[math.fsum(values)]`` (or the infinity or NaN).

    """
    rest = np.array(values, dtype=np.float64)  # a copy: worked on in place
    n = len(rest)
    partials: list[float] = []
    if not n:
        return partials
    for _ in range(_GRID_LEVELS):
        top = float(np.max(np.abs(rest)))
        if top == 0.0:
            return partials
        if not math.isfinite(top):
            break
        step = 52 - math.ceil(math.log2(n * top))
        if not 0 <= step <= 1000:  # the scaling below would not be exact
            break
        scale = 2.0 ** step
        level = np.rint(rest * scale) / scale  # multiples of 2**-step: their sum is exact
        partials.append(float(level.sum()))
        rest -= level  # exact (Sterbenz: each value and its rounding are within a factor 2)
    return _fsum_partials(np.array(values, dtype=np.float64))


def merge_partials(mine: list[list[float]], theirs: list[list[float]]) -> None:
    """Add another part's :func:`exact_partials`, column by column, into ``mine`` (in place).

    A column's list is made short again (its exact sum in a few floats) once it passes 64
    floats; ``math.fsum`` of each list stays the correctly rounded sum of every part's values.
    """
    for column, other in zip(mine, theirs, strict=True):
        column.extend(other)
        if len(column) > 64:
            column[:] = exact_partials(np.array(column))


def _fsum_partials(values: np.ndarray) -> list[float]:
    """:func:`exact_partials` by ``math.fsum``: slower, for any finite or infinite values."""
    column = np.ascontiguousarray(values, dtype=np.float64).data
    partials: list[float] = []
    for _ in range(_PARTIAL_ROUNDS):
        try:
            rest = math.fsum(itertools.chain(column, (-p for p in partials)))
        except (OverflowError, ValueError):
            return [math.fsum(column)] if not partials else partials
        if rest == 0.0 or not math.isfinite(rest):
            if not math.isfinite(rest):
                return [rest]
            return partials
        partials.append(rest)
    return partials


def exact_sums(values: np.ndarray) -> np.ndarray:
    """Correctly rounded column sums (``math.fsum``) of a float64 (n, k) matrix -> (k,)."""
    # the column's buffer (a memoryview) yields its floats without building a list (2x faster)
    return np.array([math.fsum(values[:, q].data) for q in range(values.shape[1])])


def point_estimates(values: np.ndarray, estimates: Sequence[Estimate]) -> np.ndarray:
    """Estimates over all rows: exact means, and corpus scores of the exact column sums.

    Args:
        values: float64 (n, k), n >= 1.
        estimates: M estimates.

    Returns:
        float64 (M,).

    """
    used = sorted({c for e in estimates for c in e.columns})
    sums = np.zeros((1, values.shape[1]))
    sums[0, used] = exact_sums(values[:, used])
    return evaluate(estimates, sums, np.array([float(values.shape[0])]))[0]


def bootstrap(values: np.ndarray, hashes: np.ndarray, estimates: Sequence[Estimate], *,
              n_bootstrap: int, seed: int, threads: int | None = None) -> np.ndarray:
    """Poisson-bootstrap replicates of every estimate over one set of examples.

    Args:
        values: float64 (n, k), finite.
        hashes: uint64 (n,), the examples' identity hashes (see :func:`stream_keys`).
        estimates: M estimates over the columns of ``values``.
        n_bootstrap: resamples, >= 0.
        seed: the seed.
        threads: threads (default: every CPU this process may use).

    Returns:
        float64 (n_bootstrap, M); NaN in a resample whose weights are all 0.

    """
    keys = stream_keys(hashes, seed=seed, weights="poisson")
    grid = to_grid(values, max_weight=MAX_WEIGHT["poisson"])
    sums, totals = resample_sums_threaded(grid, keys, weights="poisson", first=0,
                                          count=n_bootstrap, threads=threads)
    return evaluate(estimates, sums, totals, size=values.shape[0])


def percentile_interval(replicates: np.ndarray, confidence: float
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval (Efron & Tibshirani 1993, ch. 13) of each column, NaNs left out.

    Args:
        replicates: float64 (R, M).
        confidence: level in (0, 1).

    Returns:
        ``(low, high)``, float64 (M,) each: the ``(1 - confidence) / 2`` and
        ``(1 + confidence) / 2`` quantiles (numpy's linear interpolation); NaN for a column
        without a finite replicate.

    """
    alpha = 1.0 - confidence
    nan = np.isnan(replicates)
    whole = nan.all(axis=1)  # resamples without an example: NaN throughout
    if replicates.shape[1] and not whole.all() and not (nan & ~whole[:, None]).any():
        # one call for every column: the same values as column by column, faster
        low, high = np.quantile(replicates[~whole], [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        return low, high
    low = np.full(replicates.shape[1], np.nan)
    high = low.copy()
    for m in range(replicates.shape[1]):
        col = replicates[:, m]
        col = col[~np.isnan(col)]
        if len(col):
            low[m], high[m] = np.quantile(col, [alpha / 2.0, 1.0 - alpha / 2.0])
    return low, high


__all__ = ["BOOTSTRAP_METHOD", "MAX_WEIGHT", "THRESHOLDS", "WEIGHTS", "CorpusScore",
           "Estimate", "bootstrap", "column_max_abs", "evaluate", "exact_mean", "exact_partials",
           "exact_sums", "grid_scales", "merge_partials",
           "percentile_interval", "point_estimates", "position_hashes", "resample_sums",
           "resample_sums_threaded", "stream_keys", "to_grid"]
