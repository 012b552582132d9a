"""Intervals and tests for any coefficient at any level, by resampling the score matrices.

Resampling is separate from the statistic (as in nlpstats): the indices (which systems,
which inputs each resample holds) and the swap masks (which cells of two metrics trade
places) are drawn here from a seeded :func:`numpy.random.default_rng` per computation, or
given by the caller, and any coefficient of :mod:`pipeline.agree.levels` is evaluated on
them. Sources:

- Bootstrap, percentile method: Deutsch, Dror and Roth (2021), "A Statistical Analysis of
  Summarization Evaluation Metrics using Resampling Methods", TACL. ``systems`` resamples
  the rows of ``X[system, input]`` with replacement, ``inputs`` the columns, ``both``
  (Boot-Both, the default) the rows and then the columns; resamples where the coefficient
  is undefined are dropped; the interval is :func:`numpy.percentile` (linear) of the rest,
  as nlpstats 0.0.1's ``bootstrap``, which gives the same bounds given the same indices.
- Permutation test of the difference of two metrics' coefficients (the same paper): both
  metrics (and the human scores) standardized over all their cells, then, per resample,
  cells of the two metrics swapped: ``cells`` swaps each (system, input) cell with
  probability 1/2 (the paper's code and mt-metrics-eval's ``PermutationSigDiff``),
  ``rows-columns`` swaps whole rows and then whole columns, each with probability 1/2
  (nlpstats 0.0.1's ``both``), ``systems`` rows only, ``inputs`` columns only. The p-value
  is two-sided, the share of resamples whose |difference| >= the observed one (nlpstats).
- Clusters of metrics not significantly different: mt-metrics-eval's ``AssignRanks``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.agree.coefficients import coefficient as vector_coefficient
from pipeline.agree.columns import column_coefficients
from pipeline.agree.levels import MIN_SYSTEMS, correlate

RESAMPLING = ("systems", "inputs", "both")
PERMUTATIONS = ("cells", "rows-columns", "systems", "inputs")
DEFAULT_RESAMPLING = "both"
DEFAULT_PERMUTATION = "cells"
DEFAULT_N_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 12345


@dataclass(frozen=True)
class Indices:
    """The rows and columns of each bootstrap resample.

    Attributes:
        rows: int (resamples, systems) row indices, or None (every resample keeps the rows).
        cols: int (resamples, inputs) column indices, or None (keeps the columns).
        n_resamples: the number of resamples, >= 1.

    """

    rows: np.ndarray | None
    cols: np.ndarray | None
    n_resamples: int


def draw_indices(n_systems: int, n_inputs: int, *, method: str = DEFAULT_RESAMPLING,
                 n_resamples: int = DEFAULT_N_RESAMPLES, seed: int = DEFAULT_SEED) -> Indices:
    """Draw bootstrap indices with a generator of its own (``default_rng(seed)``).

    Args:
        n_systems: rows of the matrices, >= 1.
        n_inputs: columns, >= 1.
        method: ``systems``, ``inputs`` or ``both`` (rows first, then columns).
        n_resamples: resamples, >= 1.
        seed: the generator's seed; the same seed gives the same indices.

    Returns:
        :class:`Indices`.

    Raises:
        ConfigError: an unknown method or a resample count < 1.

    """
    from pipeline.errors import ConfigError

    if method not in RESAMPLING:
        raise ConfigError(f"unknown resampling {method!r}",
                          hint=f"choose among {', '.join(RESAMPLING)}")
    if n_resamples < 1:
        raise ConfigError(f"the number of resamples must be >= 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    rows = (rng.integers(0, n_systems, size=(n_resamples, n_systems))
            if method in ("systems", "both") else None)
    cols = (rng.integers(0, n_inputs, size=(n_resamples, n_inputs))
            if method in ("inputs", "both") else None)
    return Indices(rows, cols, n_resamples)


def resampled_values(X: np.ndarray, Z: np.ndarray, level: str, coefficient: str,
                     indices: Indices, *, epsilon: float = 0.0, fast: bool = True
                     ) -> np.ndarray:
    """The coefficient on every resample.

    Args:
        X: metric scores, float (systems, inputs), NaN for missing.
        Z: human scores, same shape.
        level: ``system``, ``input`` or ``global``.
        coefficient: a coefficient name.
        indices: the resamples (:func:`draw_indices`, or the caller's own).
        epsilon: acc23 / tau23 metric-tie threshold.
        fast: tau-b at the input and global levels from resample counts
            (:mod:`pipeline.agree.fast`) rather than one resampled copy at a time.

    Returns:
        float (resamples,): the coefficient on each resample (NaN where undefined),
        equal to :func:`pipeline.agree.levels.correlate` on ``X[rows][:, cols]``.

    """
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    m, n = X.shape
    R = indices.n_resamples
    rows, cols = indices.rows, indices.cols
    if level == "system":
        # each resample's system means summed in the order numpy's nanmean sums the
        # resampled columns (as nlpstats does): equal means stay exactly equal (ties)
        both = ~np.isnan(X) & ~np.isnan(Z)
        Xm, Zm = np.where(both, X, 0.0), np.where(both, Z, 0.0)
        bf = both.astype(np.float64)
        mx = np.empty((m, R))
        mz = np.empty((m, R))
        with np.errstate(invalid="ignore", divide="ignore"):
            for r in range(R):
                c = slice(None) if cols is None else cols[r]
                count = bf[:, c].sum(axis=1)
                mx[:, r] = Xm[:, c].sum(axis=1) / count
                mz[:, r] = Zm[:, c].sum(axis=1) / count
        if rows is not None:
            mx = np.take_along_axis(mx, rows.T, axis=0)
            mz = np.take_along_axis(mz, rows.T, axis=0)
        if coefficient in ("pearson", "spearman", "kendall", "kendall_c") or epsilon == 0:
            values = column_coefficients(mx, mz, coefficient, epsilon=epsilon)
        else:
            values = np.array([correlate(mx[:, [r]], mz[:, [r]], "global", coefficient,
                                         epsilon=epsilon).value for r in range(R)])
        enough = (~np.isnan(mx) & ~np.isnan(mz)).sum(axis=0) >= MIN_SYSTEMS
        values[~enough] = np.nan
        return values
    if fast and coefficient == "kendall" and level in ("input", "global"):
        from pipeline.agree.fast import global_kendall, input_kendall

        return (input_kendall if level == "input" else global_kendall)(X, Z, rows, cols, R)
    out = np.empty(R, dtype=np.float64)
    for r in range(R):
        Xr = X if rows is None else X[rows[r]]
        Zr = Z if rows is None else Z[rows[r]]
        if cols is not None:
            Xr, Zr = Xr[:, cols[r]], Zr[:, cols[r]]
        if level == "input":
            per = column_coefficients(Xr, Zr, coefficient, epsilon=epsilon)
            per = per[~np.isnan(per)]
            out[r] = per.mean() if per.size else np.nan
        elif level == "global":
            keep = ~np.isnan(Xr) & ~np.isnan(Zr)
            out[r] = vector_coefficient(Xr[keep], Zr[keep], coefficient, epsilon=epsilon)
        else:
            raise ValueError(f"unknown level {level!r}")
    return out


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval.

    Attributes:
        low: lower bound (NaN when no resample gave a value).
        high: upper bound.
        n_valid: resamples where the coefficient was defined.

    """

    low: float
    high: float
    n_valid: int


def percentile_interval(values: np.ndarray, confidence: float = DEFAULT_CONFIDENCE
                        ) -> Interval:
    """The percentile interval of resampled values, NaN ones dropped (as nlpstats).

    Args:
        values: float (resamples,).
        confidence: in (0, 1).

    Returns:
        :class:`Interval` with ``numpy.percentile`` (linear) at ``(1 - confidence) / 2``
        and ``1 - (1 - confidence) / 2``.

    """
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return Interval(float("nan"), float("nan"), 0)
    alpha = (1 - confidence) / 2
    low, high = np.percentile(v, [alpha * 100, (1 - alpha) * 100])
    return Interval(float(low), float(high), int(v.size))


def bootstrap(X: np.ndarray, Z: np.ndarray, level: str, coefficient: str, *,
              method: str = DEFAULT_RESAMPLING, n_resamples: int = DEFAULT_N_RESAMPLES,
              confidence: float = DEFAULT_CONFIDENCE, seed: int = DEFAULT_SEED,
              indices: Indices | None = None, epsilon: float = 0.0, fast: bool = True
              ) -> Interval:
    """A bootstrap interval of a coefficient at a level (module docstring).

    Args:
        X: metric scores, float (systems, inputs), NaN for missing.
        Z: human scores, same shape.
        level: ``system``, ``input`` or ``global``.
        coefficient: a coefficient name.
        method: ``systems``, ``inputs`` or ``both``.
        n_resamples: resamples, >= 1.
        confidence: the interval's coverage, in (0, 1).
        seed: the seed of this computation's generator.
        indices: resamples to use instead of drawing them (``method``, ``n_resamples``
            and ``seed`` are then ignored).
        epsilon: acc23 / tau23 metric-tie threshold.
        fast: as :func:`resampled_values`.

    Returns:
        :class:`Interval`.

    Raises:
        ConfigError: an unknown method, a bad count or confidence.

    """
    from pipeline.errors import ConfigError

    if not 0 < confidence < 1:
        raise ConfigError(f"the confidence must be in (0, 1), got {confidence}")
    X = np.asarray(X, dtype=np.float64)
    if indices is None:
        indices = draw_indices(X.shape[0], X.shape[1], method=method,
                               n_resamples=n_resamples, seed=seed)
    values = resampled_values(X, Z, level, coefficient, indices, epsilon=epsilon, fast=fast)
    return percentile_interval(values, confidence)


def standardize(X: np.ndarray) -> np.ndarray:
    """``(X - nanmean(X)) / nanstd(X)`` over all cells (nlpstats' ``_standardize``)."""
    X = np.asarray(X, dtype=np.float64)
    sd = np.nanstd(X)
    return (X - np.nanmean(X)) / (sd if sd > 0 else 1.0)


def draw_masks(n_systems: int, n_inputs: int, *, method: str = DEFAULT_PERMUTATION,
               n_resamples: int = DEFAULT_N_RESAMPLES, seed: int = DEFAULT_SEED
               ) -> Iterable[np.ndarray]:
    """Swap masks of a permutation test, one bool (systems, inputs) per resample.

    Args:
        n_systems: rows.
        n_inputs: columns.
        method: ``cells`` (each cell with probability 1/2), ``rows-columns`` (rows, then
            columns: a cell swaps when exactly one of its row and column does),
            ``systems`` or ``inputs``.
        n_resamples: resamples, >= 1.
        seed: the generator's seed.

    Yields:
        bool (systems, inputs): True where the two metrics trade the cell.

    Raises:
        ConfigError: an unknown method.

    """
    from pipeline.errors import ConfigError

    if method not in PERMUTATIONS:
        raise ConfigError(f"unknown permutation {method!r}",
                          hint=f"choose among {', '.join(PERMUTATIONS)}")
    rng = np.random.default_rng(seed)
    for _ in range(n_resamples):
        if method == "cells":
            yield rng.random((n_systems, n_inputs)) < 0.5
        else:
            s = (rng.random(n_systems) < 0.5 if method != "inputs"
                 else np.zeros(n_systems, bool))
            i = (rng.random(n_inputs) < 0.5 if method != "systems"
                 else np.zeros(n_inputs, bool))
            yield s[:, None] ^ i[None, :]


@dataclass(frozen=True)
class PermutationResult:
    """A paired permutation test of ``coef(X, Z) - coef(Y, Z)``.

    Attributes:
        delta: the observed difference (on the standardized scores).
        p_value: two-sided, in [0, 1].
        n_resamples: resamples drawn.

    """

    delta: float
    p_value: float
    n_resamples: int


def permutation_test(X: np.ndarray, Y: np.ndarray, Z: np.ndarray, level: str,
                     coefficient: str, *, method: str = DEFAULT_PERMUTATION,
                     n_resamples: int = DEFAULT_N_RESAMPLES, seed: int = DEFAULT_SEED,
                     masks: Sequence[np.ndarray] | None = None, epsilon: float = 0.0
                     ) -> PermutationResult:
    """Test whether two metrics agree with the human scores equally well (module docstring).

    Args:
        X: first metric, float (systems, inputs), NaN for missing.
        Y: second metric, same shape and missing cells.
        Z: human scores, same shape.
        level: ``system``, ``input`` or ``global``.
        coefficient: a coefficient name.
        method: ``cells``, ``rows-columns``, ``systems`` or ``inputs``.
        n_resamples: resamples, >= 1.
        seed: the seed of this computation's generator.
        masks: swap masks to use instead of drawing them (bool (systems, inputs) each).
        epsilon: acc23 / tau23 metric-tie threshold.

    Returns:
        :class:`PermutationResult`.

    """
    Xs, Ys, Zs = standardize(X), standardize(Y), standardize(Z)
    observed = (correlate(Xs, Zs, level, coefficient, epsilon=epsilon).value
                - correlate(Ys, Zs, level, coefficient, epsilon=epsilon).value)
    if masks is None:
        masks = list(draw_masks(Xs.shape[0], Xs.shape[1], method=method,
                                n_resamples=n_resamples, seed=seed))
    count = 0
    total = 0
    batch: list[np.ndarray] = []
    for mask in [*masks, None]:
        if mask is not None:
            batch.append(np.asarray(mask, dtype=bool))
            if len(batch) < _PERMUTATION_BATCH:
                continue
        if not batch:
            break
        M = np.stack(batch)
        batch = []
        Xp = np.where(M, Ys[None], Xs[None])
        Yp = np.where(M, Xs[None], Ys[None])
        samples = (batch_values(Xp, Zs, level, coefficient, epsilon=epsilon)
                   - batch_values(Yp, Zs, level, coefficient, epsilon=epsilon))
        total += samples.size
        with np.errstate(invalid="ignore"):
            count += int((np.abs(samples) >= abs(observed)).sum())
    return PermutationResult(float(observed), count / total if total else float("nan"),
                             total)


_PERMUTATION_BATCH = 64


def batch_values(Xb: np.ndarray, Z: np.ndarray, level: str, coefficient: str, *,
                 epsilon: float = 0.0) -> np.ndarray:
    """A coefficient at a level for a stack of metric matrices against one human matrix.

    Args:
        Xb: float (batch, systems, inputs), NaN for missing.
        Z: float (systems, inputs).
        level: ``system``, ``input`` or ``global``.
        coefficient: a coefficient name.
        epsilon: acc23 / tau23 metric-tie threshold.

    Returns:
        float (batch,), equal to :func:`pipeline.agree.levels.correlate` on each matrix.

    """
    B, m, n = Xb.shape
    if level == "input":
        flat = Xb.transpose(1, 0, 2).reshape(m, B * n)
        per = column_coefficients(flat, np.tile(Z, (1, B)), coefficient,
                                  epsilon=epsilon).reshape(B, n)
        ok = ~np.isnan(per)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(ok, per, 0.0).sum(axis=1) / ok.sum(axis=1)
        out[ok.sum(axis=1) == 0] = np.nan
        return out
    if level == "system" and (coefficient in ("pearson", "spearman", "kendall", "kendall_c")
                              or epsilon == 0):
        both = ~np.isnan(Xb) & ~np.isnan(Z)[None]
        count = both.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            mx = np.where(both, Xb, 0.0).sum(axis=2) / count
            mz = np.where(both, Z[None], 0.0).sum(axis=2) / count
        values = column_coefficients(mx.T, mz.T, coefficient, epsilon=epsilon)
        values[(count > 0).sum(axis=1) < MIN_SYSTEMS] = np.nan
        return values
    return np.array([correlate(Xb[b], Z, level, coefficient, epsilon=epsilon).value
                     for b in range(B)])


def assign_ranks(p_values: np.ndarray, alpha: float = 0.05) -> list[int]:
    """Clusters of metrics not significantly different, as mt-metrics-eval's ``AssignRanks``.

    Args:
        p_values: float (k, k) for k metrics sorted by decreasing coefficient; entry
            ``[i, j]`` (i < j) is the p-value of the test that metric i agrees better than
            metric j.
        alpha: the significance level.

    Returns:
        k ranks starting at 1: a metric opens a new rank when a metric of the current rank
        above it is significantly better (p <= alpha).

    """
    p = np.asarray(p_values, dtype=np.float64)
    ranks = []
    current, start = 1, 0
    for i in range(p.shape[0]):
        if np.any(p[start:i, i] <= alpha):
            current += 1
            start = i
        ranks.append(current)
    return ranks
