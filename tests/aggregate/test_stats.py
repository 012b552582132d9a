"""The resampling module: counter-based weights, exact sums, estimates from summed statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline import stats
from tests.support.plain_bootstrap import plain_weights


def _ratio(sums: np.ndarray) -> np.ndarray:
    return 100.0 * sums[:, 0] / sums[:, 1]


@pytest.mark.parametrize("kind", ["poisson", "flip"])
def test_kernel_sums_equal_plain_weights(kind):
    rng = np.random.default_rng(4)
    values = rng.random((301, 6))
    values[:, 5] = rng.integers(0, 50, 301)  # an integer statistic
    hashes = rng.integers(0, 2**63, 301, dtype=np.uint64)
    keys = stats.stream_keys(hashes, seed=9, weights=kind)
    grid = stats.to_grid(values, max_weight=stats.MAX_WEIGHT[kind])
    sums, totals = stats.resample_sums(grid, keys, weights=kind, first=0, count=22)
    w = plain_weights([int(h) for h in hashes], seed=9, count=22, kind=kind)
    np.testing.assert_allclose(sums, w @ values, rtol=1e-12)
    assert np.array_equal(totals, w.sum(axis=1))
    assert np.array_equal(sums[:, 5], w @ values[:, 5])  # integers stay exact


def test_poisson_weights_have_mean_and_variance_one():
    keys = stats.stream_keys(np.arange(20000, dtype=np.uint64), seed=1, weights="poisson")
    grid = stats.to_grid(np.ones((20000, 1)), max_weight=8)
    _, totals = stats.resample_sums(grid, keys, weights="poisson", first=0, count=200)
    # each total is a sum of 20000 Poisson(1) draws: mean 20000, sd sqrt(20000)
    assert totals.mean() == pytest.approx(20000, abs=4 * math.sqrt(20000 / 200))
    assert totals.std() == pytest.approx(math.sqrt(20000), rel=0.15)


def test_sums_do_not_depend_on_order_threads_or_ranges():
    rng = np.random.default_rng(5)
    values = rng.random((5000, 7)) * 100
    hashes = rng.integers(0, 2**63, 5000, dtype=np.uint64)
    keys = stats.stream_keys(hashes, seed=3, weights="poisson")
    grid = stats.to_grid(values, max_weight=8)
    a, ta = stats.resample_sums(grid, keys, weights="poisson", first=0, count=37)
    b, tb = stats.resample_sums_threaded(grid, keys, weights="poisson", first=0, count=37,
                                         threads=3)
    perm = rng.permutation(5000)
    c, _ = stats.resample_sums(stats.to_grid(values[perm], max_weight=8), keys[perm],
                               weights="poisson", first=0, count=37)
    d, _ = stats.resample_sums(grid, keys, weights="poisson", first=8, count=29)
    assert np.array_equal(a, b) and np.array_equal(ta, tb)
    assert np.array_equal(a, c)
    assert np.array_equal(a[8:], d)


def test_corpus_estimate_from_summed_statistics():
    hits = np.array([1.0, 2.0, 0.0, 3.0])
    total = np.array([2.0, 4.0, 1.0, 3.0])
    values = np.column_stack([hits, total, hits / total])
    estimates = [stats.Estimate((0, 1), _ratio), stats.Estimate((2,))]
    point = stats.point_estimates(values, estimates)
    assert point[0] == 100.0 * 6 / 10  # corpus: ratio of sums
    assert point[1] == (0.5 + 0.5 + 0.0 + 1.0) / 4  # mean of ratios
    sums = np.array([[2.0, 4.0, 1.0], [0.0, 0.0, 0.0]])
    got = stats.evaluate(estimates, sums, np.array([2.0, 0.0]))
    assert got[0, 0] == 50.0 and got[0, 1] == 0.5
    assert np.isnan(got[1]).all()  # a resample without any example has no value


def test_percentile_interval_leaves_out_empty_resamples():
    reps = np.array([[1.0, np.nan], [np.nan, np.nan], [3.0, np.nan]])
    low, high = stats.percentile_interval(reps, 0.5)
    assert (low[0], high[0]) == (1.5, 2.5)
    assert np.isnan(low[1]) and np.isnan(high[1])


def test_to_grid_bounds_every_partial_sum():
    values = np.array([[0.1, 1e6, -0.3], [0.7, 2e6, 0.2]])
    grid = stats.to_grid(values, max_weight=8)
    for q in range(3):
        s = 52 - math.ceil(math.log2(8 * 2 * np.abs(values[:, q]).max()))
        assert np.array_equal(grid[q] * 2.0**s, np.rint(grid[q] * 2.0**s))
        assert np.abs(grid[q] - values[:, q]).max() <= 2.0**-(s + 1)
    assert np.array_equal(grid[1], values[:, 1])  # integers stay exact


def test_bad_arguments():
    with pytest.raises(ValueError, match="seed"):
        stats.stream_keys(np.zeros(2, dtype=np.uint64), seed=-1, weights="poisson")
    with pytest.raises(ValueError, match="weights"):
        stats.stream_keys(np.zeros(2, dtype=np.uint64), seed=1, weights="normal")
    with pytest.raises(ValueError, match="multiple of 4"):
        stats.resample_sums(np.zeros((1, 2)), np.zeros(2, dtype=np.uint64),
                            weights="poisson", first=2, count=4)


def test_percentile_interval_of_all_columns_at_once_equals_column_by_column():
    from pipeline.stats import percentile_interval

    rng = np.random.default_rng(4)
    for trial in range(200):
        reps = rng.random((int(rng.integers(1, 1100)), int(rng.integers(1, 17))))
        if trial % 3 == 0:
            reps = np.round(reps, 2)  # ties
        if trial % 4 == 1:
            reps[rng.random(len(reps)) < 0.1] = np.nan  # resamples without an example
        if trial % 5 == 2:
            reps[0, 0] = np.nan  # one value alone
        conf = [0.95, 0.9, 0.5][trial % 3]
        low, high = percentile_interval(reps, conf)
        for m in range(reps.shape[1]):
            col = reps[:, m][~np.isnan(reps[:, m])]
            want = np.quantile(col, [(1 - conf) / 2, (1 + conf) / 2]) if len(col) \
                else [np.nan, np.nan]
            np.testing.assert_array_equal([low[m], high[m]], want)
