"""The paired statistics of a comparison, over :mod:`pipeline.stats`'s resampling.

For M measures over the same n paired examples (row i of both runs is the same example):

- **delta**: ``candidate - baseline`` of each measure's value: the difference of the means
  for a per-example measure, the difference of the corpus scores (each from its run's summed
  statistics) for a corpus measure;
- **paired bootstrap interval** (Koehn 2004, "Statistical Significance Tests for Machine
  Translation Evaluation", EMNLP; sacrebleu's ``--paired-bs``): each resample gives every
  example one Poisson(1) weight, the same in both runs (what makes it paired), and recomputes
  both runs' values from the weighted sums; the interval is the percentile interval of the
  resampled deltas. All measures share the resamples;
- **two-sided p-value by paired approximate randomization** (Riezler & Maxwell 2005; sacrebleu's
  ``--paired-ar``): each trial swaps each example's two runs with probability 1/2 (a fair
  flip per example) and recomputes both runs' values from the swapped sums;
  ``p = (1 + #{|trial delta| >= |observed delta|}) / (1 + trials)`` (the +1 from Clark et
  al.'s MultEval); ties count as extreme, so identical runs get p = 1;
- **minimal detectable effect** at 80% power: ``(z_{(1+confidence)/2} + z_{0.8}) * sd`` of the
  resampled deltas (the usual normal approximation; Cohen 1988, ch. 2): the smallest true
  change the interval would exclude 0 for in 80% of comparisons like this one.

Each example's weights come from the seed and a hash of its pairing key (see
:mod:`pipeline.stats`), so a group's result depends only on its own examples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from pipeline import stats
from pipeline.config_checks import MAX_BOOTSTRAP, check_resamples, work_limit_note
from pipeline.errors import ConfigError
from pipeline.machine import check_fits
from pipeline.stats import Estimate

DEFAULT_BAND = 0.01
DEFAULT_CONFIDENCE = 0.95
DEFAULT_N_BOOTSTRAP = 1000
DEFAULT_SEED = 12345
DEFAULT_MAX_MISSING = 0.01
DEFAULT_TOP = 10  # examples listed per measure as the ones that moved most
POWER = 0.8
INTERVAL_METHOD = "paired Poisson bootstrap percentile interval (Koehn 2004)"
TEST_METHOD = "paired approximate randomization, two-sided (Riezler & Maxwell 2005)"
MDE_METHOD = "(z_(1+confidence)/2 + z_power) * sd of the resampled deltas, power 0.8"
# Below this many weighted draws a comparison runs on one thread.
_THREAD_MIN_DRAWS = 20_000_000


@dataclass(frozen=True)
class PairedTest:
    """Result of :func:`paired_test` for M measures over the same n paired examples.

    Attributes:
        baseline_mean: shape (M,), the baseline's value (mean, or corpus score).
        candidate_mean: shape (M,), the candidate's value.
        delta: shape (M,), ``candidate_mean - baseline_mean``.
        ci_low: shape (M,), lower end of the paired bootstrap percentile interval of delta;
            NaN when n < 2.
        ci_high: shape (M,), upper end; NaN when n < 2.
        p_value: shape (M,), two-sided approximate randomization p-value in
            [1 / (n_bootstrap + 1), 1]; NaN when n < 2.
        mde: shape (M,), the minimal detectable effect at 80% power, in the measure's units;
            NaN when n < 2.
        p_refined: shape (M,), ``p_value``, except where no trial was as extreme: there the
            smaller of it and the two-sided normal tail of the randomization distribution
            (mean 0; variance ``sum(d^2) / n^2`` exactly for a mean, the trials' mean square
            for a corpus score; Hoeffding 1952, "The large-sample power of tests based on
            permutations of observations"), so that a p-value adjusted for many rows is not
            bounded by ``rows / (trials + 1)``; NaN when n < 2.

    """

    baseline_mean: np.ndarray
    candidate_mean: np.ndarray
    delta: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_value: np.ndarray
    mde: np.ndarray | None = None
    p_refined: np.ndarray | None = None


# Bytes a comparison holds per resample at least: one compared measure's Poisson sums of
# baseline and candidate, the weights' total and its randomization trial (float64 each, see
# ScopeResamples), a part's share and the merged scope's alive at once.
BYTES_PER_RESAMPLE = 2 * 8 * (2 + 1 + 1)


def check_settings(*, n_bootstrap: int, confidence: float, band: float = 0.0,
                   max_missing: float = 0.0) -> None:
    """Validate comparison settings.

    Raises:
        ConfigError: confidence outside (0, 1), n_bootstrap < 1, more resamples than the
            machine's memory holds (:data:`BYTES_PER_RESAMPLE` each) or than
            :data:`~pipeline.config_checks.MAX_BOOTSTRAP`, band < 0, or max_missing outside
            [0, 1].

    """
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")
    if n_bootstrap < 1:
        raise ConfigError(f"n_bootstrap must be at least 1, got {n_bootstrap}")
    check_fits("n_bootstrap", n_bootstrap, bytes_each=BYTES_PER_RESAMPLE,
               at_most=MAX_BOOTSTRAP, hint=work_limit_note(DEFAULT_N_BOOTSTRAP))
    check_resamples("n_bootstrap", n_bootstrap, default=DEFAULT_N_BOOTSTRAP)
    if not band >= 0.0:
        raise ConfigError(f"band must be a non-negative score difference, got {band}")
    if not 0.0 <= max_missing <= 1.0:
        raise ConfigError(f"max_missing must be a fraction in [0, 1], got {max_missing}")


def _threads(n: int, count: int) -> int | None:
    return None if n * count >= _THREAD_MIN_DRAWS else 1


def bootstrap_mean_differences(differences: np.ndarray, *, n_bootstrap: int, seed: int,
                               hashes: np.ndarray | None = None) -> np.ndarray:
    """Paired Poisson-bootstrap replicates of mean differences.

    Args:
        differences: float64 (n, M), ``candidate - baseline`` per example and measure.
        n_bootstrap: resamples, >= 1.
        seed: the seed.
        hashes: uint64 (n,) identity hashes of the examples (default: their positions).

    Returns:
        float64 (n_bootstrap, M): ``sum(w d) / sum(w)`` per resample (NaN when all w are 0).

    """
    d = np.asarray(differences, dtype=np.float64)
    n, m = d.shape
    hashes = stats.position_hashes(n) if hashes is None else hashes
    return stats.bootstrap(d, hashes, [Estimate((q,)) for q in range(m)],
                           n_bootstrap=n_bootstrap, seed=seed, threads=_threads(n, n_bootstrap))


def paired_resampling(baseline: np.ndarray, candidate: np.ndarray,
                      estimates: Sequence[Estimate], *, n_bootstrap: int, confidence: float,
                      seed: int, hashes: np.ndarray | None = None,
                      n_trials: int | None = None) -> PairedTest:
    """Values, deltas, paired bootstrap interval, randomization p-value and MDE.

    The sums of :class:`ScopeTotals` and :class:`ScopeResamples` over all n examples at once,
    then :func:`paired_from_sums`: a partitioned comparison that adds the same sums part by
    part gets the same result, bit for bit.

    Args:
        baseline: float64 (n, k): per-example columns of the baseline (measures and
            statistics), finite.
        candidate: float64 (n, k): the same columns of the candidate, row i the same example.
        estimates: M estimates over the k columns (a mean, or a corpus function).
        n_bootstrap: bootstrap resamples and randomization trials, >= 1.
        confidence: interval level in (0, 1).
        seed: the seed, in [0, 2**64).
        hashes: uint64 (n,) identity hashes of the pairs (default: their positions).
        n_trials: randomization trials (default ``n_bootstrap``), >= 1; the p-value is then
            in [1 / (n_trials + 1), 1].

    Returns:
        A :class:`PairedTest` with arrays of shape (M,); with n < 2 the interval, p-value and
        MDE are NaN, with n = 0 every field is NaN.

    """
    b = np.ascontiguousarray(baseline, dtype=np.float64)
    c = np.ascontiguousarray(candidate, dtype=np.float64)
    n = b.shape[0]
    trials = n_bootstrap if n_trials is None else n_trials
    totals = scope_totals(b, c)
    resamples = None
    if n >= 2:
        hashes = stats.position_hashes(n) if hashes is None else hashes
        resamples = scope_resamples(
            b, c, hashes, scales(totals), n_bootstrap=n_bootstrap, n_trials=trials, seed=seed,
            threads=_threads(n, n_bootstrap))
    return paired_from_sums(totals, resamples, estimates, confidence=confidence,
                            n_bootstrap=n_bootstrap, n_trials=trials)


@dataclass
class ScopeTotals:
    """Mergeable first-pass sums of a set of paired examples (a scope, or a part of one).

    Attributes:
        n: paired examples.
        partials: per column of ``[baseline, candidate, candidate - baseline]`` (3k lists),
            floats whose exact sum is the column's exact sum
            (:func:`pipeline.stats.exact_partials`).
        max_abs: float64 (3k,), each of those columns' largest absolute value (they fix the
            scope's exact-summation grids: :func:`pipeline.stats.grid_scales`).

    """

    n: int
    partials: list[list[float]]
    max_abs: np.ndarray

    def merge(self, other: ScopeTotals) -> None:
        """Add another part's totals of the same scope."""
        self.n += other.n
        self.max_abs = np.maximum(self.max_abs, other.max_abs)
        stats.merge_partials(self.partials, other.partials)

    def sums(self) -> np.ndarray:
        """float64 (3k,): each column's correctly rounded sum (``math.fsum``)."""
        return np.array([math.fsum(p) for p in self.partials])


def scope_totals(baseline: np.ndarray, candidate: np.ndarray) -> ScopeTotals:
    """:class:`ScopeTotals` of n paired examples (float64 (n, k) each, finite)."""
    b = np.ascontiguousarray(baseline, dtype=np.float64)
    c = np.ascontiguousarray(candidate, dtype=np.float64)
    values = np.concatenate([b, c, c - b], axis=1)
    return ScopeTotals(len(values), [stats.exact_partials(values[:, q])
                                     for q in range(values.shape[1])],
                       stats.column_max_abs(values) if len(values)
                       else np.zeros(values.shape[1]))


@dataclass(frozen=True)
class GridScales:
    """A scope's exact-summation grids (:func:`pipeline.stats.grid_scales`).

    Attributes:
        poisson: float64 (2k,), for [baseline, candidate] under Poisson weights (at most 8).
        flip: float64 (k,), for candidate - baseline under 0/1 weights.

    """

    poisson: np.ndarray
    flip: np.ndarray


def scales(totals: ScopeTotals) -> GridScales:
    """The grids of the scope whose merged totals these are (:func:`pipeline.stats.to_grid`)."""
    k = len(totals.max_abs) // 3
    return GridScales(
        stats.grid_scales(totals.n, totals.max_abs[:2 * k], max_weight=stats.MAX_WEIGHT["poisson"]),
        stats.grid_scales(totals.n, totals.max_abs[2 * k:], max_weight=1))


@dataclass
class ScopeResamples:
    """Mergeable second-pass sums of a scope (or a part of one), on the scope's grids.

    Attributes:
        boot_sums: float64 (n_bootstrap, 2k), Poisson-weighted sums of [baseline, candidate].
        boot_totals: float64 (n_bootstrap,), sums of the Poisson weights.
        kept: float64 (n_trials, k), flip-weighted sums of candidate - baseline.
        d_total: float64 (k,), sums of candidate - baseline on the flip grid.
        d_square: per column (k lists), exact partials of the squares of those grid values.

    All but ``d_square`` are exact (multiples of the grid), so they add up part by part to
    the sums over the whole scope bit for bit; ``d_square`` is summed correctly rounded.
    """

    boot_sums: np.ndarray
    boot_totals: np.ndarray
    kept: np.ndarray
    d_total: np.ndarray
    d_square: list[list[float]]

    def merge(self, other: ScopeResamples) -> None:
        """Add another part's resamples of the same scope."""
        self.boot_sums += other.boot_sums
        self.boot_totals += other.boot_totals
        self.kept += other.kept
        self.d_total += other.d_total
        stats.merge_partials(self.d_square, other.d_square)


def scope_resamples(baseline: np.ndarray, candidate: np.ndarray, hashes: np.ndarray,
                    grids: GridScales, *, n_bootstrap: int, n_trials: int, seed: int,
                    threads: int | None = 1) -> ScopeResamples:
    """One part's :class:`ScopeResamples` of a scope whose grids are ``grids``.

    Each example's weights come from the seed and its pair hash (:func:`stats.stream_keys`),
    so a part's share does not depend on which other examples share its part.

    Args:
        baseline: float64 (n, k), finite.
        candidate: float64 (n, k).
        hashes: uint64 (n,), the pairs' identity hashes.
        grids: the scope's :func:`scales` (from the whole scope's merged totals).
        n_bootstrap: Poisson resamples, >= 0.
        n_trials: randomization trials, >= 0.
        seed: the seed.
        threads: threads for the resampling kernel (None: every usable CPU).

    """
    b = np.ascontiguousarray(baseline, dtype=np.float64)
    c = np.ascontiguousarray(candidate, dtype=np.float64)
    keys = stats.stream_keys(hashes, seed=seed, weights="poisson")
    grid = stats.to_grid(np.concatenate([b, c], axis=1), max_weight=stats.MAX_WEIGHT["poisson"],
                         scales=grids.poisson)
    sums, totals = stats.resample_sums_threaded(grid, keys, weights="poisson", first=0,
                                                count=n_bootstrap, threads=threads)
    del grid
    keys = stats.stream_keys(hashes, seed=seed, weights="flip")
    d_grid = stats.to_grid(c - b, max_weight=1, scales=grids.flip)
    kept, _ = stats.resample_sums_threaded(d_grid, keys, weights="flip", first=0,
                                           count=n_trials, threads=threads)
    square = d_grid * d_grid
    return ScopeResamples(sums, totals, kept, d_grid.sum(axis=1),  # exact: on the grid
                          [stats.exact_partials(square[q]) for q in range(len(square))])


def paired_from_sums(totals: ScopeTotals, resamples: ScopeResamples | None,
                     estimates: Sequence[Estimate], *, confidence: float, n_bootstrap: int,
                     n_trials: int) -> PairedTest:
    """The :class:`PairedTest` of a scope from its merged sums (see the module docstring).

    Args:
        totals: the scope's merged :class:`ScopeTotals` (k value columns).
        resamples: its merged :class:`ScopeResamples` (None when ``totals.n < 2``).
        estimates: M estimates over the k columns.
        confidence: interval level in (0, 1).
        n_bootstrap: resamples in ``resamples``.
        n_trials: randomization trials in ``resamples``.

    Returns:
        A :class:`PairedTest` with arrays of shape (M,).

    """
    n = totals.n
    m = len(estimates)
    nan = np.full(m, np.nan)
    if n == 0:
        return PairedTest(nan, nan.copy(), nan.copy(), nan.copy(), nan.copy(), nan.copy(),
                          nan.copy(), nan.copy())
    k = len(totals.partials) // 3
    every = totals.sums()
    b_sums, c_sums, d_sums = every[:k], every[k:2 * k], every[2 * k:]
    count = np.array([float(n)])
    base_value = stats.evaluate(estimates, b_sums[None, :], count)[0]
    cand_value = stats.evaluate(estimates, c_sums[None, :], count)[0]
    mean_only = all(e.corpus is None for e in estimates)
    if mean_only:
        delta = stats.evaluate(estimates, d_sums[None, :], count)[0]
    else:
        delta = cand_value - base_value
    if n < 2 or resamples is None:
        return PairedTest(base_value, cand_value, delta, nan, nan.copy(), nan.copy(),
                          nan.copy(), nan.copy())

    # paired bootstrap: the same Poisson weights on both runs' columns
    sums, boot_totals = resamples.boot_sums, resamples.boot_totals
    deltas = (stats.evaluate(estimates, sums[:, k:], boot_totals, size=n)
              - stats.evaluate(estimates, sums[:, :k], boot_totals, size=n))
    ci_low, ci_high = stats.percentile_interval(deltas, confidence)
    with np.errstate(invalid="ignore"):
        sd = np.nanstd(deltas, axis=0) if np.isfinite(deltas).any() else nan
    z = NormalDist().inv_cdf((1.0 + confidence) / 2.0) + NormalDist().inv_cdf(POWER)
    mde = z * sd

    # approximate randomization: fair flips; K = sum of kept (c - b) per trial
    trials = n_trials
    kept = resamples.kept
    ones = np.full(trials, float(n))
    if mean_only:
        total = resamples.d_total  # exact: on the grid
        observed = np.abs(total / n)
        trial = np.abs((2.0 * kept - total) / n)
        order = [e.columns[0] for e in estimates]
        extreme = (trial[:, order] >= observed[order]).sum(axis=0)
        # the randomization distribution of the mean: symmetric, variance sum(d^2) / n^2
        square = np.array([math.fsum(p) for p in resamples.d_square])
        spread = np.sqrt(square)[order] / n
        observed = observed[order]
    else:
        signed = (stats.evaluate(estimates, b_sums + kept, ones)
                  - stats.evaluate(estimates, c_sums - kept, ones))
        trial = np.abs(signed)
        observed = np.abs(delta)
        extreme = (trial >= observed * (1.0 - 1e-9)).sum(axis=0)
        with np.errstate(invalid="ignore"):
            spread = np.sqrt(np.nanmean(signed * signed, axis=0))
    p_value = (extreme + 1.0) / (trials + 1.0)
    # beyond the trials (none as extreme), the normal tail of the same distribution
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.array([math.erfc(x / math.sqrt(2.0)) if np.isfinite(x) else np.nan
                         for x in observed / spread])
    tail = np.where(spread > 0, tail, np.where(observed > 0, 0.0, 1.0))
    p_refined = np.where(extreme == 0, np.minimum(p_value, tail), p_value)
    return PairedTest(base_value, cand_value, delta, ci_low, ci_high, p_value, mde,
                      p_refined)


def paired_test(
    baseline: np.ndarray,
    candidate: np.ndarray,
    *,
    n_bootstrap: int = DEFAULT_N_BOOTSTRAP,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
    hashes: np.ndarray | None = None,
) -> PairedTest:
    """Delta of means, its paired bootstrap interval, a randomization p-value and the MDE.

    See the module docstring for the methods and their sources.

    Args:
        baseline: float64, shape (n,) or (n, M): per-example baseline scores (row i of both
            arrays is the same example), finite.
        candidate: same shape, per-example candidate scores.
        n_bootstrap: bootstrap resamples and randomization trials, >= 1.
        confidence: interval level in (0, 1).
        seed: the seed, in [0, 2**64).
        hashes: uint64 (n,) identity hashes of the pairs (default: their positions).

    Returns:
        A :class:`PairedTest` with arrays of shape (M,) ((1,) for 1-d inputs).

    Raises:
        ConfigError: n_bootstrap < 1 or confidence outside (0, 1).
        ValueError: shapes differ or values are not finite.

    """
    check_settings(n_bootstrap=n_bootstrap, confidence=confidence)
    b = np.asarray(baseline, dtype=np.float64)
    c = np.asarray(candidate, dtype=np.float64)
    if b.ndim == 1 and c.ndim == 1:
        b, c = b[:, None], c[:, None]
    if b.shape != c.shape or b.ndim != 2:
        raise ValueError(f"baseline {b.shape} and candidate {c.shape} must have one shape (n, M)")
    if not (np.isfinite(b).all() and np.isfinite(c).all()):
        raise ValueError("scores must be finite")
    return paired_resampling(b, c, [Estimate((q,)) for q in range(b.shape[1])],
                             n_bootstrap=n_bootstrap, confidence=confidence, seed=seed,
                             hashes=hashes)


def is_alarm(delta: float, ci_low: float, ci_high: float, *, band: float) -> bool:
    """Apply the alarm rule: the interval excludes 0 and ``|delta| > band``, either way.

    Args:
        delta: the change, candidate - baseline, in the measure's units.
        ci_low: lower end of its interval (NaN: no interval, no alarm).
        ci_high: upper end.
        band: the tolerated absolute change, >= 0, in the measure's units.

    """
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return False
    return bool((ci_low > 0.0 or ci_high < 0.0) and abs(delta) > band)


ADJUST_METHODS = ("holm", "bh", "none")
DEFAULT_ADJUST = "holm"


def adjust_p_values(p_values: np.ndarray, method: str = DEFAULT_ADJUST) -> np.ndarray:
    """Adjust p-values for the number of rows tested together.

    - ``holm``: Holm's step-down (Holm 1979, "A simple sequentially rejective multiple test
      procedure", Scand. J. Statistics 6): with the m p-values sorted ascending,
      ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``; controls the chance of any false
      alarm in the comparison (family-wise error) at the level;
    - ``bh``: Benjamini & Hochberg (1995, JRSS B 57): ``adj_(i) = min_{j >= i} min(1,
      m p_(j) / j)``; controls the expected share of false alarms among alarms;
    - ``none``: unchanged.

    The same values as statsmodels' ``multipletests(p, method="holm" | "fdr_bh")``.

    Args:
        p_values: float64 (R,), in (0, 1]; NaN entries (rows without a test) are left NaN
            and not counted in m.
        method: ``holm``, ``bh`` or ``none``.

    Returns:
        float64 (R,), the adjusted p-values, >= the raw ones, <= 1.

    Raises:
        ConfigError: an unknown method.

    """
    if method not in ADJUST_METHODS:
        raise ConfigError(f"unknown --adjust {method!r}",
                          hint=f"choose one of {', '.join(ADJUST_METHODS)}")
    p = np.asarray(p_values, dtype=np.float64)
    out = p.copy()
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if method == "none" or m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    sorted_p = p[order]
    rank = np.arange(1, m + 1)
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, (m - rank + 1) * sorted_p))
    else:
        adj = np.minimum.accumulate((m * sorted_p / rank)[::-1])[::-1]
        adj = np.minimum(1.0, adj)
    out[order] = adj
    return out


def is_missing(n_paired: int, n_baseline_only: int, *, max_missing: float) -> bool:
    """The missing-examples alarm: examples of the baseline absent from the candidate.

    Args:
        n_paired: examples in both runs (in a group, or overall).
        n_baseline_only: examples of the baseline without a candidate.
        max_missing: the tolerated fraction of the baseline's examples, in [0, 1].

    Returns:
        True when the baseline has examples here and none is paired (a whole group is
        gone), or when more than ``max_missing`` of them are missing.

    """
    n_base = n_paired + n_baseline_only
    if n_base == 0:
        return False
    return n_paired == 0 or n_baseline_only > max_missing * n_base


__all__ = ["ADJUST_METHODS", "DEFAULT_ADJUST", "DEFAULT_BAND", "DEFAULT_CONFIDENCE",
           "DEFAULT_MAX_MISSING", "DEFAULT_N_BOOTSTRAP", "DEFAULT_SEED", "INTERVAL_METHOD",
           "MDE_METHOD", "POWER", "TEST_METHOD", "GridScales", "PairedTest", "ScopeResamples",
           "ScopeTotals", "adjust_p_values", "bootstrap_mean_differences", "check_settings",
           "is_alarm", "is_missing", "paired_from_sums", "paired_resampling", "paired_test",
           "scales", "scope_resamples", "scope_totals"]
