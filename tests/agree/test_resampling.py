"""Levels, bootstrap intervals and permutation p-values against nlpstats 0.0.1 given the
same resample indices and swap masks (nlpstats draws from numpy's global RNG: the indices
are drawn here in the order it draws them, then nlpstats runs from the same seed)."""

from __future__ import annotations

import nlpstats.correlations as nlp
import numpy as np
import pytest

from pipeline.agree.levels import correlate
from pipeline.agree.resampling import (
    Indices,
    assign_ranks,
    bootstrap,
    draw_indices,
    draw_masks,
    permutation_test,
)


def _matrices(seed, m=8, n=15):
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(m, 1)) + rng.normal(scale=0.5, size=(m, n))
    Z = np.round(quality + rng.normal(scale=0.5, size=(m, n)), 1)
    X = quality + rng.normal(scale=0.8, size=(m, n))
    Y = quality + rng.normal(scale=1.2, size=(m, n))
    return X, Y, Z


@pytest.mark.parametrize("level", ["system", "input", "global"])
@pytest.mark.parametrize("name", ["pearson", "spearman", "kendall"])
def test_levels_equal_nlpstats(level, name):
    X, _, Z = _matrices(1)
    X[2, 3] = Z[2, 3] = np.nan  # missing in both, as nlpstats requires
    assert correlate(X, Z, level, name).value == pytest.approx(
        nlp.correlate(X, Z, level, name), abs=1e-12)


def _nlpstats_indices(seed, m, n, method, R):
    np.random.seed(seed)
    rows, cols = [], []
    for _ in range(R):
        if method in ("systems", "both"):
            rows.append(np.random.choice(m, m, replace=True))
        if method in ("inputs", "both"):
            cols.append(np.random.choice(n, n, replace=True))
    return Indices(np.array(rows) if rows else None, np.array(cols) if cols else None, R)


@pytest.mark.parametrize("method", ["systems", "inputs", "both"])
@pytest.mark.parametrize("level", ["system", "input", "global"])
@pytest.mark.parametrize("name, fast", [("pearson", False), ("spearman", False),
                                        ("kendall", False), ("kendall", True)])
def test_bootstrap_equals_nlpstats_given_the_same_indices(method, level, name, fast):
    X, _, Z = _matrices(2)
    R = 60
    indices = _nlpstats_indices(7, *X.shape, method, R)
    np.random.seed(7)
    theirs = nlp.bootstrap(X, Z, level, name, method, n_resamples=R, confidence_level=0.9)
    ours = bootstrap(X, Z, level, name, indices=indices, confidence=0.9, fast=fast)
    assert ours.low == pytest.approx(theirs.lower, abs=1e-12)
    assert ours.high == pytest.approx(theirs.upper, abs=1e-12)
    assert ours.n_valid == len(theirs.samples)


def _nlpstats_masks(seed, m, n, method, R):
    np.random.seed(seed)
    out = []
    for _ in range(R):
        s = np.zeros(m, bool)
        i = np.zeros(n, bool)
        if method in ("systems", "both"):
            s = (np.random.rand(m, 1) > 0.5).reshape((m,))
        if method in ("inputs", "both"):
            i = (np.random.rand(1, n) > 0.5).reshape((n,))
        out.append(s[:, None] ^ i[None, :])
    return out


@pytest.mark.parametrize("method", ["systems", "inputs", "both"])
@pytest.mark.parametrize("level", ["system", "input", "global"])
def test_permutation_p_value_equals_nlpstats_given_the_same_masks(method, level):
    X, Y, Z = _matrices(3)
    R = 80
    masks = _nlpstats_masks(11, *X.shape, method, R)
    np.random.seed(11)
    theirs = nlp.permutation_test(X, Y, Z, level, "kendall", method, n_resamples=R)
    ours = permutation_test(X, Y, Z, level, "kendall", masks=masks)
    assert ours.p_value == pytest.approx(theirs.pvalue, abs=1e-12)


def test_seeded_draws_repeat_and_differ_by_seed():
    a = draw_indices(5, 7, n_resamples=4, seed=1)
    b = draw_indices(5, 7, n_resamples=4, seed=1)
    c = draw_indices(5, 7, n_resamples=4, seed=2)
    assert np.array_equal(a.rows, b.rows) and np.array_equal(a.cols, b.cols)
    assert not np.array_equal(a.rows, c.rows)
    cells = list(draw_masks(5, 7, method="cells", n_resamples=200, seed=3))
    share = np.mean(cells)
    assert 0.45 < share < 0.55
    rc = list(draw_masks(5, 7, method="rows-columns", n_resamples=3, seed=3))
    for mask in rc:  # a swap of rows then columns: rank 1 pattern under xor
        assert all(np.array_equal(mask[i], mask[0]) or np.array_equal(mask[i], ~mask[0])
                   for i in range(5))


def test_the_global_rng_does_not_change_an_interval():
    X, _, Z = _matrices(4)
    np.random.seed(1)
    a = bootstrap(X, Z, "input", "kendall", n_resamples=50, seed=5)
    np.random.seed(2)
    b = bootstrap(X, Z, "input", "kendall", n_resamples=50, seed=5)
    assert a == b


def test_assign_ranks_as_mt_metrics_eval():
    # mt-metrics-eval data.AssignRanks: rank increases when a metric of the current
    # cluster above is significantly better
    p = np.array([[1, 0.3, 0.01, 0.001],
                  [0, 1, 0.2, 0.04],
                  [0, 0, 1, 0.3],
                  [0, 0, 0, 1.0]])
    assert assign_ranks(p, 0.05) == [1, 1, 2, 2]
    assert assign_ranks(np.ones((3, 3)), 0.05) == [1, 1, 1]


@pytest.mark.parametrize("level", ["input", "global"])
def test_fast_kendall_equals_resampled_copies_with_ties_and_missing_cells(level):
    from pipeline.agree.resampling import resampled_values

    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, (9, 13)).astype(float)
    Z = rng.integers(0, 3, (9, 13)).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    Z[np.isnan(X)] = np.nan
    X[:, 2] = 1.0  # a constant input: tau-b undefined there
    indices = draw_indices(9, 13, n_resamples=40, seed=3)
    slow = resampled_values(X, Z, level, "kendall", indices, fast=False)
    quick = resampled_values(X, Z, level, "kendall", indices, fast=True)
    np.testing.assert_allclose(quick, slow, rtol=0, atol=1e-12)


def test_system_means_tie_exactly_as_nlpstats_sums_them():
    # human scores in thirds: two systems' means are equal in exact arithmetic; summed in
    # another order (a matrix product) they differed in the last bit, and tau-b saw no tie
    rng = np.random.default_rng(0)
    quality = rng.normal(size=(100, 1)) + rng.normal(scale=0.7, size=(100, 300))
    Z = np.round(np.clip(3 + quality + rng.normal(scale=0.6, size=quality.shape), 1, 5) * 3) / 3
    X = quality + rng.normal(scale=0.5, size=quality.shape)
    indices = _nlpstats_indices(7, 100, 300, "both", 3)
    from pipeline.agree.resampling import resampled_values

    ours = resampled_values(X, Z, "system", "kendall", indices)
    theirs = [nlp.correlate(X[indices.rows[r]][:, indices.cols[r]],
                            Z[indices.rows[r]][:, indices.cols[r]], "system", "kendall")
              for r in range(3)]
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
