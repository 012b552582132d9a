"""Coefficients against outside truth: scipy at full precision, mt-metrics-eval's published
test values (stats_test.py), hand counts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pipeline.agree.coefficients import coefficient, pair_counts, tie_calibration, why_undefined
from pipeline.agree.columns import column_coefficients
from pipeline.errors import ConfigError

# mt-metrics-eval stats_test.py: Correlation(1, [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3])
GOLD = np.array([1, 2, 2, 3, 4], dtype=float)
METRIC = np.array([2, 1, 1.5, 5, 3], dtype=float)


@pytest.mark.parametrize("name, expected", [
    ("kendall", 0.316227766), ("kendall_c", 0.32), ("tau23", 0.2), ("acc23", 0.6)])
def test_mt_metrics_eval_published_values(name, expected):
    assert coefficient(METRIC, GOLD, name) == pytest.approx(expected, abs=1e-9)


def test_acc23_with_epsilon_2_is_mt_metrics_eval_value():
    assert coefficient(METRIC, GOLD, "acc23", epsilon=2) == pytest.approx(0.4, abs=1e-12)


def test_tie_optimised_acc23_is_mt_metrics_eval_value():
    best, threshold = tie_calibration([METRIC], [GOLD], "acc23")
    assert best == pytest.approx(0.7, abs=1e-12)
    assert threshold == pytest.approx(0.5)  # ties 1 vs 1.5 (gold tie 2, 2) and 2 vs 1.5


def test_pair_counts_by_hand():
    # pairs of (metric, gold): 10 pairs; the gold tie (2, 2) has metric 1 vs 1.5
    con, dis, t_x, t_z, both = pair_counts(METRIC, GOLD)
    assert (con, dis, t_x, t_z, both) == (6, 3, 0, 1, 0)


def _random_vectors(seed, n, ties):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, ties, n).astype(float) if ties else rng.normal(size=n)
    z = x + rng.normal(size=n) if not ties else rng.integers(0, ties, n).astype(float)
    return x, z


@pytest.mark.parametrize("seed, n, ties", [(0, 16, 0), (1, 50, 5), (2, 7, 3), (3, 300, 0),
                                           (4, 1000, 10)])
def test_scipy_at_full_precision(seed, n, ties):
    x, z = _random_vectors(seed, n, ties)
    assert coefficient(x, z, "pearson") == pytest.approx(stats.pearsonr(x, z)[0], abs=1e-13)
    assert coefficient(x, z, "spearman") == pytest.approx(stats.spearmanr(x, z)[0], abs=1e-13)
    assert coefficient(x, z, "kendall") == pytest.approx(
        stats.kendalltau(x, z, variant="b")[0], abs=1e-13)
    assert coefficient(x, z, "kendall_c") == pytest.approx(
        stats.kendalltau(x, z, variant="c")[0], abs=1e-13)


@pytest.mark.parametrize("seed, n, ties", [(5, 12, 0), (6, 30, 4), (7, 9, 2)])
def test_acc23_tau23_against_pair_enumeration(seed, n, ties):
    x, z = _random_vectors(seed, n, ties)
    con = dis = tx = tz = tb = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dz = x[i] - x[j], z[i] - z[j]
            if dx == 0 and dz == 0:
                tb += 1
            elif dx == 0:
                tx += 1
            elif dz == 0:
                tz += 1
            elif dx * dz > 0:
                con += 1
            else:
                dis += 1
    total = n * (n - 1) / 2
    assert coefficient(x, z, "acc23") == pytest.approx((con + tb) / total, abs=1e-15)
    assert coefficient(x, z, "tau23") == pytest.approx((con + tb - dis - tx - tz) / total,
                                                       abs=1e-15)


def test_columns_equal_scipy_per_column_with_missing_cells():
    rng = np.random.default_rng(9)
    X = rng.integers(0, 6, (12, 40)).astype(float)
    Z = X + rng.integers(-3, 4, (12, 40))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:, 0] = 3.0  # a constant column: NaN
    for name, fn in [("pearson", lambda a, b: stats.pearsonr(a, b)[0]),
                     ("spearman", lambda a, b: stats.spearmanr(a, b)[0]),
                     ("kendall", lambda a, b: stats.kendalltau(a, b)[0]),
                     ("kendall_c", lambda a, b: stats.kendalltau(a, b, variant="c")[0])]:
        got = column_coefficients(X, Z, name)
        assert np.isnan(got[0])
        for j in range(1, X.shape[1]):
            keep = ~np.isnan(X[:, j])
            assert got[j] == pytest.approx(fn(X[keep, j], Z[keep, j]), abs=1e-12), (name, j)
    for name in ("acc23", "tau23"):
        got = column_coefficients(X, Z, name, epsilon=1.0)
        for j in range(X.shape[1]):
            keep = ~np.isnan(X[:, j])
            assert got[j] == pytest.approx(coefficient(X[keep, j], Z[keep, j], name,
                                                       epsilon=1.0), abs=1e-12)


def test_undefined_cases_say_why():
    assert why_undefined(np.ones(4), np.arange(4.0), "kendall") == "constant metric"
    assert why_undefined(np.arange(4.0), np.ones(4), "pearson") == "constant human score"
    assert np.isnan(coefficient(np.ones(4), np.arange(4.0), "spearman"))
    assert coefficient(np.ones(4), np.ones(4), "acc23") == 1.0  # every pair tied in both


def test_bad_names():
    with pytest.raises(ConfigError):
        coefficient(METRIC, GOLD, "kendal")
    with pytest.raises(ConfigError):
        coefficient(METRIC, GOLD, "kendall", epsilon=1.0)
