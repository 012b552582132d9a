"""Krippendorff's alpha against the `krippendorff` package; leave-one-out by hand."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from pipeline.agree.raters import krippendorff_alpha, leave_one_out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ["interval", "ordinal"])
def test_alpha_equals_the_package_with_missing_values(seed, kind):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, 40)
    data = np.clip(truth + rng.integers(-1, 2, (4, 40)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.15] = np.nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=kind)
    assert krippendorff_alpha(data, kind) == pytest.approx(expected, abs=1e-12)


def test_krippendorff_2011_example_interval():
    # the worked example of Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability"
    nan = np.nan
    data = np.array([
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]])
    assert krippendorff_alpha(data, "interval") == pytest.approx(0.849, abs=5e-4)
    assert krippendorff_alpha(data, "ordinal") == pytest.approx(0.815, abs=5e-4)


def test_leave_one_out_is_the_mean_of_the_others():
    R = np.array([[[1.0, 2.0]], [[3.0, np.nan]], [[5.0, 4.0]]])
    pairs = leave_one_out(R)
    np.testing.assert_allclose(pairs[0][1], [[4.0, 4.0]])
    np.testing.assert_allclose(pairs[1][1], [[3.0, 3.0]])
    np.testing.assert_allclose(pairs[2][1], [[2.0, 2.0]])
