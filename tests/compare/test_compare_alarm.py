"""The alarm's second half: missing examples, distinct NaN/null groups, MDE, plots, escaping.

Issue 12 item 6, and compare's measures from the metric registry (issue 9): every case runs
the real CLI or the pure functions on texts scored by ``score_texts`` (exact rouge-score).
"""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.compare import compare_examples, describe, measure_column
from pipeline.metrics.base import MetricSpec
from tests.compare.test_compare_fixtures import realsumm, score, write_run
from tests.support.plain_bootstrap import plain_weights


def run_cli(*args: object):
    return CliRunner().invoke(main, ["compare", *map(str, args)], catch_exceptions=False)


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    """300 REALSumm examples of 3 systems, scored."""
    frame = realsumm()
    systems = sorted(frame["system"].unique())[:3]
    frame = frame[frame["system"].isin(systems)].head(300).reset_index(drop=True)
    return score(frame)


def test_a_missing_group_is_an_alarm_of_its_own(tmp_path, small):
    base = write_run(tmp_path / "b", small, run_id="b", group_by=("system",))
    gone = sorted(small["system"].unique())[1]
    cand = write_run(tmp_path / "c", small[small["system"] != gone], run_id="c",
                     group_by=("system",))
    result = run_cli(base, cand, "--output", tmp_path / "out", "--format", "table")
    assert result.exit_code == 1, result.output
    assert "MISSING" in result.stdout and f"system={gone}" in result.stdout
    doc = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert doc["alarm"] and doc["missing"]
    rows = {r["group"]: r for r in doc["rows"]}
    assert rows[f"system={gone}"]["missing"] and rows[f"system={gone}"]["n_paired"] == 0
    assert not any(r["alarm"] for r in doc["rows"])  # no score moved: only examples are gone
    assert rows["all"]["missing"]  # a third of the baseline is missing overall


def test_more_than_max_missing_of_the_examples_alarms(tmp_path, small):
    base = write_run(tmp_path / "b", small, run_id="b")
    cand = write_run(tmp_path / "c", small.iloc[6:], run_id="c")  # 2% of 300 missing
    assert run_cli(base, cand).exit_code == 1
    assert run_cli(base, cand, "--max-missing", "0.05").exit_code == 0
    few = write_run(tmp_path / "few", small.iloc[3:], run_id="few")  # 1%: not more than 1%
    assert run_cli(base, few).exit_code == 0
    assert run_cli(base, cand, "--max-missing", "1.5").exit_code == 2


def test_nan_null_and_values_are_distinct_groups():
    ids = [f"e{i}" for i in range(12)]
    groups = [1.0, float("nan"), None] * 4
    base = pd.DataFrame({"id": ids, "g": pd.Series(groups, dtype=object),
                         "rouge1_fmeasure": np.linspace(0.1, 0.9, 12)})
    cand = base.assign(rouge1_fmeasure=base["rouge1_fmeasure"] + 0.05)
    cmp = compare_examples(base, cand, measures=["rouge1.fmeasure"], group_columns=["g"],
                           n_bootstrap=50)
    assert cmp.rows["group"].tolist() == ["all", "g=1.0", "g=nan", "g=<null>"]
    assert cmp.rows["n_paired"].tolist() == [12, 4, 4, 4]
    assert cmp.rows["baseline_mean"].iloc[2] == pytest.approx(
        np.mean(base["rouge1_fmeasure"].iloc[1::3]))
    # a null candidate group does not pair with a NaN baseline group
    moved = cand.assign(g=pd.Series([1.0, None, float("nan")] * 4, dtype=object))
    cmp = compare_examples(base, moved, measures=["rouge1.fmeasure"], group_columns=["g"],
                           n_bootstrap=50)
    assert cmp.rows["n_paired"].tolist()[0] == 4 and cmp.missing


def test_every_row_reports_the_minimal_detectable_effect(tmp_path, small):
    base = write_run(tmp_path / "b", small, run_id="b")
    same = write_run(tmp_path / "s", small, run_id="s")
    result = run_cli(base, same, "--format", "json", "--metric", "rouge1.fmeasure")
    row = json.loads(result.stdout)["rows"][0]
    assert result.exit_code == 0 and row["mde"] == 0.0  # identical runs: no spread
    noisy = small.assign(rouge1_fmeasure=np.clip(
        small["rouge1_fmeasure"] + np.random.default_rng(1).normal(0, 0.05, len(small)), 0, 1))
    cand = write_run(tmp_path / "n", noisy, run_id="n")
    result = run_cli(base, cand, "--metric", "rouge1.fmeasure", "--band", "0.5")
    assert result.exit_code == 0
    assert "the smallest change it could have seen" in result.stdout
    doc = json.loads(run_cli(base, cand, "--metric", "rouge1.fmeasure", "--band", "0.5",
                             "--format", "json").stdout)
    row = doc["rows"][0]
    # 2.8 standard errors of the mean difference (sd of the differences / sqrt(n))
    d = noisy["rouge1_fmeasure"] - small["rouge1_fmeasure"]
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    assert row["mde"] == pytest.approx(z * d.std() / math.sqrt(len(d)), rel=0.15)


def test_a_failing_plot_never_masks_the_alarm(tmp_path, small):
    base = write_run(tmp_path / "b", small, run_id="b", group_by=("system",))
    gone = sorted(small["system"].unique())[0]
    cand = write_run(tmp_path / "c", small[small["system"] != gone], run_id="c",
                     group_by=("system",))
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--output",
                                       str(tmp_path / "out"), "--plot",
                                       str(tmp_path / "no" / "such" / "dir" / "d.png"),
                                       "--format", "table"])
    assert result.exit_code == 1, result.output
    assert "MISSING" in result.stdout
    assert "warning: the plot was not drawn" in result.stderr
    assert (tmp_path / "out" / "compare.json").exists()


def test_control_characters_in_data_are_escaped(tmp_path, small):
    frame = small.head(40).copy()
    frame["id"] = [f"id\x1b[31m{i}\n" for i in range(40)]
    frame["system"] = "sys\x1b]0;pwned\x07\u202e"
    base = write_run(tmp_path / "b", frame, run_id="b\x1b[2J", group_by=("system",))
    cand_frame = frame.assign(rouge1_fmeasure=frame["rouge1_fmeasure"] * 0.5)
    cand = write_run(tmp_path / "c", cand_frame.iloc[1:], run_id="c", group_by=("system",))
    result = run_cli(base, cand, "--top", "3")
    assert result.exit_code == 1
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in result.output
    assert "\\x1b[31m" in result.stdout and "\\u202e" in result.stdout


def _ratio(sums: np.ndarray) -> np.ndarray:
    return 100.0 * sums[:, 0] / sums[:, 1]


TOY = MetricSpec(name="toy_f1", family="toy", measures=("score",), primary="score",
                 statistics=(("hits", "int64"), ("total", "int64")), reference_rule="max",
                 corpus=_ratio, scale=100.0)


def test_measure_names_from_the_registry_parse():
    assert measure_column("token_f1.fmeasure") == "token_f1_fmeasure"
    assert measure_column("bleu.score") == "bleu_score"
    corpus = describe("toy_f1.score", [TOY])
    assert corpus.statistic == "corpus" and corpus.columns == ("toy_f1_hits", "toy_f1_total")
    assert describe("rouge1.fmeasure").statistic == "mean"


def test_a_corpus_measure_is_compared_by_its_corpus_score():
    rng = np.random.default_rng(3)
    n = 80
    total = rng.integers(1, 20, n)
    hits_b = rng.integers(0, total + 1)
    hits_c = np.minimum(total, hits_b + rng.integers(0, 3, n))
    ids = [f"x{i}" for i in range(n)]

    def frame(hits: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"id": ids, "toy_f1_hits": hits, "toy_f1_total": total,
                             "toy_f1_score": 100.0 * hits / total})

    cmp = compare_examples(frame(hits_b), frame(hits_c), measures=["toy_f1.score"],
                           specs=[TOY], n_bootstrap=300, seed=6, band=0.0)
    row = cmp.rows.iloc[0]
    assert row["statistic"] == "corpus"
    assert row["baseline_mean"] == 100.0 * hits_b.sum() / total.sum()
    assert row["candidate_mean"] == 100.0 * hits_c.sum() / total.sum()
    assert row["delta"] == pytest.approx(100.0 * (hits_c.sum() - hits_b.sum()) / total.sum())
    from pipeline.compare.pairing import _pair_hashes

    hashes = [int(h) for h in _pair_hashes(frame(hits_b), "id", ())]
    w = plain_weights(hashes, seed=6, count=300, kind="poisson")
    deltas = 100.0 * (w @ hits_c - w @ hits_b) / (w @ total)
    assert row["ci_low"] == pytest.approx(np.quantile(deltas, 0.025), rel=1e-9)
    assert row["ci_high"] == pytest.approx(np.quantile(deltas, 0.975), rel=1e-9)
    kept = plain_weights(hashes, seed=6, count=300, kind="flip")
    swapped_c = hits_b.sum() + kept @ (hits_c - hits_b)
    swapped_b = hits_c.sum() - kept @ (hits_c - hits_b)
    trials = np.abs(100.0 * (swapped_c - swapped_b) / total.sum())
    extreme = (trials >= abs(row["delta"]) * (1 - 1e-9)).sum()
    assert row["p_value"] == pytest.approx((extreme + 1) / 301)
    assert row["alarm"]  # every candidate example gains hits
