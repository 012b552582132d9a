"""Extreme but valid numbers handled numerically, never a raw numpy RuntimeWarning (issue 25,
item 25), and a measure given twice in --band refused (item 26).

``--band 1e-320`` printed "RuntimeWarning: overflow encountered in divide" with a source line,
and ranked its alarms by an infinite ratio (ties in row order); a history value of 1e308
overflowed the drift chart's nightly sd.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.compare import drift_rows, learn_bands
from pipeline.compare.alarms import alarm_list
from pipeline.compare.drift import chart_statistics, nightly_sd
from tests.support.warehouse_runs import cut_predictions, realsumm_inputs, score_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("numerics")
    preds, refs = realsumm_inputs(root / "in", n=60)
    cut_predictions(preds, root / "in" / "cand.parquet")
    return (score_run(preds, refs, root / "base", run_id="base"),
            score_run(root / "in" / "cand.parquet", refs, root / "cand", run_id="cand"))


@pytest.mark.parametrize("band", ["1e-320", "rouge1.fmeasure=1e-320", "5e-324"])
def test_a_tiny_band_gives_no_numpy_warning(runs, band):
    result = CliRunner().invoke(main, ["compare", *map(str, runs), "--band", band,
                                       "--adjust", "none", "--format", "alarms"])
    assert result.exit_code == 1, result.output
    assert "RuntimeWarning" not in result.output and "np.where" not in result.output


def test_alarms_beyond_a_tiny_band_keep_their_order():
    """|delta| / band overflowed to inf for both rows; the order was the rows' order."""
    rows = pd.DataFrame({
        "group": ["all", "g=a", "g=b", "g=c"], "metric": ["m"] * 4, "measure": ["x"] * 4,
        "delta": [0.0, -0.2, -0.5, 0.3], "band": [0.01, 1e-320, 1e-320, 5e-324],
        "alarm": [False, True, True, True], "missing": [False] * 4, "drift": [False] * 4,
        "drift_p": [np.nan] * 4})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        order = [a["group"] for a in alarm_list(rows)]
    # by |delta| / band: 0.3 / 5e-324 > 0.5 / 1e-320 > 0.2 / 1e-320
    assert order == ["g=c", "g=b", "g=a"]


QUIET = np.array([0.30, 0.31, 0.29, 0.30, 0.32, 0.30, 0.31, 0.30, 0.33, 0.31])


def test_huge_history_values_give_no_warning_and_a_scale_free_chart():
    """The chart is location- and scale-free: the same nights times 1e307 chart the same."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        small = drift_rows(QUIET[None, :], np.array([0.35]), np.array([0.0]))
        huge = drift_rows(QUIET[None, :] * 1e307, np.array([0.35e307]), np.array([0.0]))
        np.testing.assert_allclose(huge.statistic, small.statistic, rtol=1e-9)
        assert huge.p_value[0] == small.p_value[0]
        np.testing.assert_allclose(nightly_sd(QUIET[None, :] * 1e307),
                                   nightly_sd(QUIET[None, :]) * 1e307, rtol=1e-12)
        # a night at +-1e308 (their difference is past the largest float): no warning
        wild = QUIET.copy()
        wild[8], wild[9] = 1e308, -1e308
        drift_rows(wild[None, :], np.array([1e308]), np.array([0.01]))
        chart_statistics(wild[None, :], np.array([0.3]), method="cusum", min_nights=7)
        bands = learn_bands(wild[None, :], np.array([0.01]))
        assert bands.band[0] > 0.01


def test_ordinary_values_are_unchanged_by_the_scaling():
    """Values of an ordinary size are not rescaled: bit for bit what they were."""
    rng = np.random.default_rng(5)
    series = 0.3 + 0.01 * rng.standard_normal((6, 12))
    c = np.diff(series, axis=1)
    c = c - np.median(c, axis=1, keepdims=True)
    assert np.array_equal(nightly_sd(series), np.sqrt(np.mean(c * c, axis=1) / 2.0))


@pytest.mark.parametrize("values,named", [
    (["rouge1.fmeasure=0.005", "rouge1.fmeasure=0.01"], "rouge1.fmeasure"),
    (["rouge1.fmeasure=0.005,rouge1.fmeasure=0.02"], "rouge1.fmeasure"),
    (["0.01", "0.02"], "the floor of every measure")])
@pytest.mark.parametrize("command", ["compare", "report"])
def test_a_measure_given_twice_in_band_is_refused(runs, tmp_path, values, named, command):
    args = [a for v in values for a in ("--band", v)]
    if command == "compare":
        argv = ["compare", *map(str, runs), *args]
    else:
        argv = ["report", str(runs[1]), "--baseline", str(runs[0]), "--output",
                str(tmp_path / "r.html"), *args]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert "given twice" in result.output and named in result.output
    assert not (tmp_path / "r.html").exists()


def test_the_same_band_twice_is_one_request(runs):
    result = CliRunner().invoke(main, ["compare", *map(str, runs), "--band",
                                       "rouge1.fmeasure=0.005", "--band",
                                       "rouge1.fmeasure=0.005", "--format", "alarms"])
    assert result.exit_code in (0, 1), result.output
