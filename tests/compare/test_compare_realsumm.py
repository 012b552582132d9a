"""Real data: two REALSumm systems compared as baseline and candidate, checked against rouge-score.

The bundled REALSumm ids are ``realsumm-{source}-{doc}-{system}``; the two systems'
summaries of the same document are paired by giving both the id ``{source}-{doc}``. The
expected per-document scores come from google-research rouge-score 0.1.2 itself.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from tests.compare.test_compare_fixtures import METRICS, realsumm, score, write_run

BASELINE, CANDIDATE = "presumm_out_abs", "bart_out"


@pytest.fixture(scope="module")
def systems(tmp_path_factory):
    root = tmp_path_factory.mktemp("realsumm")
    frame = realsumm()
    frame = frame[frame["source"] == "abs"].assign(id=lambda f: f["doc"])
    out = {}
    for role, system in (("baseline", BASELINE), ("candidate", CANDIDATE)):
        part = frame[frame["system"] == system].reset_index(drop=True)
        inputs = root / f"{system}.parquet"
        part[["id", "system", "prediction"]].to_parquet(inputs)
        run = write_run(root / role, score(part), run_id=f"{role}-{system}",
                        ride_along=["system"], predictions_path=str(inputs))
        out[role] = (run, part)
    return out


def rouge_score_f(part: pd.DataFrame) -> pd.DataFrame:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(list(METRICS), use_stemmer=False)
    rows = [{m: s.fmeasure for m, s in scorer.score(ref, pred).items()}
            for pred, ref in zip(part["prediction"], part["reference"], strict=True)]
    return pd.DataFrame(rows, index=part["id"])


def test_two_realsumm_systems(systems, tmp_path):
    (b_run, b_part), (c_run, c_part) = systems["baseline"], systems["candidate"]
    expected = rouge_score_f(c_part) - rouge_score_f(b_part).loc[c_part["id"]].values
    png = tmp_path / "realsumm.png"
    result = CliRunner().invoke(main, ["compare", str(b_run), str(c_run), "--output",
                                       str(tmp_path / "out"), "--plot", str(png)])
    print(result.stdout)
    doc = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert result.exit_code == (1 if doc["alarm"] else 0)
    assert doc["pairing"] == {**doc["pairing"], "n_paired": 100, "n_baseline_only": 0,
                              "n_candidate_only": 0}
    for row in doc["rows"]:
        want = expected[row["metric"]].mean()
        assert row["delta"] == pytest.approx(want, abs=1e-12)
        assert row["ci_low"] <= row["delta"] <= row["ci_high"]
    # bart_out is the stronger system: the improvement is an alarm too (either direction)
    rouge1 = next(r for r in doc["rows"] if r["metric"] == "rouge1")
    assert rouge1["delta"] > 0.01 and rouge1["ci_low"] > 0 and rouge1["alarm"]
    assert result.exit_code == 1
    top = doc["top"]
    assert len(top) == 10
    order = expected["rouge1"].abs().sort_values(ascending=False, kind="stable")
    assert np.allclose([abs(t["delta"]) for t in top], order.head(10).values, atol=1e-12)
    texts = b_part.set_index("id")["prediction"]
    assert all(t["baseline_prediction"] == texts[t["id"]] for t in top)
    assert png.stat().st_size > 20_000


def test_realsumm_system_against_itself_does_not_alarm(systems):
    run, _ = systems["candidate"]
    result = CliRunner().invoke(main, ["compare", str(run), str(run), "--band", "0"])
    assert result.exit_code == 0, result.output
