"""`overlap compare` on runs written by the real `overlap score --engine local`.

Inputs are the bundled REALSumm data laid out as a user has it (predictions with a `system`
column, references one row per reference, keyed by id); the expected deltas come from
google-research rouge-score itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from tests.compare.test_compare_fixtures import METRICS, realsumm, truncate_half

pytest.importorskip("pipeline.cli.score")


def overlap(*args) -> object:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result


def score_run(predictions: Path, references: Path, output: Path, *extra: str) -> Path:
    result = overlap("score", predictions, "--references", references, "--output", output,
                     "--engine", "local", *extra)
    assert result.exit_code == 0, result.output
    return output


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Bundled REALSumm inputs, and a copy with 10% of predictions cut to half."""
    root = tmp_path_factory.mktemp("score")
    frame = realsumm()
    frame[["id", "reference"]].to_parquet(root / "references.parquet")
    good = root / "good"
    good.mkdir()
    shuffled = frame[["id", "system", "prediction"]].sample(frac=1.0, random_state=4)
    for k, rows in enumerate(np.array_split(np.arange(len(shuffled)), 3)):
        shuffled.iloc[rows].to_parquet(good / f"part-{k}.parquet")
    rng = np.random.default_rng(21)
    cut = np.sort(rng.choice(len(frame), size=len(frame) // 10, replace=False))
    bad = frame[["id", "system", "prediction"]].copy()
    bad.loc[cut, "prediction"] = [truncate_half(t) for t in bad.loc[cut, "prediction"]]
    bad.to_parquet(root / "truncated.parquet")
    return root, frame, set(frame.loc[cut, "id"])


def test_real_runs_truncation_alarms_grouped_by_system(data, tmp_path):
    root, frame, cut_ids = data
    refs = root / "references.parquet"
    base = score_run(root / "good", refs, tmp_path / "base", "--group-by", "system",
                     "--run-id", "base")
    cand = score_run(root / "truncated.parquet", refs, tmp_path / "cand", "--group-by",
                     "system", "--run-id", "cand", "--keep-text")
    same = overlap("compare", base, base, "--band", "0")
    assert same.exit_code == 0, same.output
    result = overlap("compare", base, cand, "--band", "0.002", "--format", "json",
                     "--metric", "rouge1.fmeasure,rougeL.fmeasure")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["pairing"]["group_columns"] == ["system"]
    assert doc["pairing"]["n_paired"] == 2500
    overall = [r for r in doc["rows"] if r["group"] == "all"]
    assert all(r["delta"] < 0 and r["alarm"] for r in overall)
    assert len({r["group"] for r in doc["rows"]}) == 1 + frame["system"].nunique()
    assert {t["id"] for t in doc["top"]} <= cut_ids
    # texts: the baseline from its (still readable) inputs, the candidate kept them
    by_id = frame.set_index("id")["prediction"]
    for t in doc["top"]:
        assert t["baseline_prediction"] == by_id[t["id"]]
        assert t["candidate_prediction"] == truncate_half(by_id[t["id"]])


def test_real_runs_two_systems_match_rouge_score(data, tmp_path):
    root, frame, _ = data
    abs_docs = frame[frame["source"] == "abs"].assign(id=lambda f: f["doc"])
    abs_docs.drop_duplicates("id")[["id", "reference"]].to_parquet(tmp_path / "refs.parquet")
    runs = {}
    for system in ("presumm_out_abs", "bart_out"):
        part = abs_docs[abs_docs["system"] == system]
        part[["id", "system", "prediction"]].to_parquet(tmp_path / f"{system}.parquet")
        runs[system] = score_run(tmp_path / f"{system}.parquet", tmp_path / "refs.parquet",
                                 tmp_path / system, "--run-id", system)
    result = overlap("compare", runs["presumm_out_abs"], runs["bart_out"], "--format", "json")
    doc = json.loads(result.stdout)
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(list(METRICS))

    def means(system: str) -> pd.Series:
        part = abs_docs[abs_docs["system"] == system]
        rows = [{m: s.fmeasure for m, s in scorer.score(r, p).items()}
                for p, r in zip(part["prediction"], part["reference"], strict=True)]
        return pd.DataFrame(rows).mean()

    want = means("bart_out") - means("presumm_out_abs")
    for row in doc["rows"]:
        assert row["delta"] == pytest.approx(want[row["metric"]], abs=1e-12)
    assert result.exit_code == 1 and doc["alarm"]


def test_texts_are_not_shown_when_inputs_changed_since_the_run(data, tmp_path):
    root, frame, _ = data
    inputs = tmp_path / "preds.parquet"
    frame[["id", "prediction"]].head(200).to_parquet(inputs)
    refs = root / "references.parquet"
    subset = tmp_path / "refs.parquet"
    pd.read_parquet(refs).head(200).to_parquet(subset)
    base = score_run(inputs, subset, tmp_path / "base")
    changed = frame[["id", "prediction"]].head(200).copy()
    changed.loc[:19, "prediction"] = [truncate_half(t) for t in changed.loc[:19, "prediction"]]
    changed.to_parquet(inputs)                   # tonight overwrites the same input path
    cand = score_run(inputs, subset, tmp_path / "cand")
    result = overlap("compare", base, cand, "--format", "json", "--top", "3")
    doc = json.loads(result.stdout)
    assert all(t["baseline_prediction"] is None for t in doc["top"])
    assert all(t["candidate_prediction"] is not None for t in doc["top"])
    assert "changed since the run" in result.stderr


@pytest.mark.parametrize("option, field", [(("--stemmer", "porter"), "stem: none vs porter"),
                                           (("--sentence-split", "punctuation"),
                                            "split: (absent) vs punct")])
def test_real_runs_with_other_scoring_settings_are_refused(data, tmp_path, option, field):
    root, frame, _ = data
    inputs = tmp_path / "preds.parquet"
    frame[["id", "prediction"]].head(50).to_parquet(inputs)
    refs = tmp_path / "refs.parquet"
    frame[["id", "reference"]].head(50).to_parquet(refs)
    base = score_run(inputs, refs, tmp_path / "base")
    other = score_run(inputs, refs, tmp_path / "other", *option)
    refused = overlap("compare", base, other)
    assert refused.exit_code == 2 and field in refused.output
    assert overlap("compare", base, other, "--allow-signature-mismatch", "--band", "1"
                   ).exit_code == 0
