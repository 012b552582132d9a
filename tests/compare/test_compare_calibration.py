"""Calibration of the alarm under the null hypothesis.

Two runs drawn from the same distribution: per example a difficulty mu_i ~ Beta(2, 3) (mean
0.4, like ROUGE fmeasures), and baseline_i, candidate_i = clip(mu_i + N(0, 0.08), 0, 1) drawn
independently, so each pair is exchangeable and the true delta is 0. With ``band = 0`` the
alarm is "the paired bootstrap interval excludes 0", whose rate should be 1 - confidence.

Tolerance: over K independent seeds the number of alarms is Binomial(K, q) with q the
interval's true miss rate. We accept when the count lies in the central 99.9% region of
Binomial(K, 1 - confidence), computed exactly below, so a correct interval fails this test
with probability < 0.001 (the seeds are fixed, so the test is deterministic anyway). For
K = 1000 at 95% that region is about [29, 73] alarms (rate 0.029..0.073); it would reject an
interval whose miss rate were e.g. 0.10 or 0.01 almost surely. The percentile bootstrap's
own coverage error is O(1/n) (Hall 1988), well inside this tolerance at n = 200.
The approximate randomization p-value is checked the same way (p <= 1 - confidence).
The pure function is used, not the CLI: 1,000 comparisons take about 3 s on this machine.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipeline.compare import is_alarm, paired_test


def binomial_region(k: int, q: float, *, level: float = 0.999) -> tuple[int, int]:
    """Smallest lo and largest hi with P(X < lo) <= (1-level)/2 and P(X > hi) <= (1-level)/2."""
    pmf = [math.comb(k, x) * q**x * (1 - q) ** (k - x) for x in range(k + 1)]
    tail = (1 - level) / 2
    lo, below = 0, 0.0
    while below + pmf[lo] <= tail:
        below += pmf[lo]
        lo += 1
    hi, above = k, 0.0
    while above + pmf[hi] <= tail:
        above += pmf[hi]
        hi -= 1
    return lo, hi


def null_runs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, 99])
    mu = rng.beta(2.0, 3.0, size=n)
    baseline = np.clip(mu + rng.normal(0.0, 0.08, size=n), 0.0, 1.0)
    candidate = np.clip(mu + rng.normal(0.0, 0.08, size=n), 0.0, 1.0)
    return baseline, candidate


@pytest.mark.parametrize("confidence, n_seeds", [(0.95, 1000), (0.80, 300)])
def test_alarm_rate_under_the_null_is_one_minus_confidence(confidence, n_seeds):
    n_examples = 200
    alarms = significant = 0
    for seed in range(n_seeds):
        baseline, candidate = null_runs(seed, n_examples)
        test = paired_test(baseline, candidate, confidence=confidence, seed=seed)
        alarms += is_alarm(test.delta[0], test.ci_low[0], test.ci_high[0], band=0.0)
        significant += bool(test.p_value[0] <= 1 - confidence)
    lo, hi = binomial_region(n_seeds, 1 - confidence)
    assert lo <= alarms <= hi, (alarms, (lo, hi))
    assert lo <= significant <= hi, (significant, (lo, hi))


def test_the_band_silences_the_null():
    """With the default band (0.01), null noise whose mean has sd ~0.0025 never alarms."""
    for seed in range(20):
        test = paired_test(*null_runs(seed, 2000), seed=seed)
        assert not is_alarm(test.delta[0], test.ci_low[0], test.ci_high[0], band=0.01)


def test_binomial_region():
    lo, hi = binomial_region(1000, 0.05)
    assert 25 <= lo <= 32 and 68 <= hi <= 76
