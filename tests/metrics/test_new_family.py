"""A new metric family needs its module and one registry line, nothing else.

A toy family (``word_count``: 1 when the prediction has as many words as its closest
reference) is defined here and added to the registry by monkeypatching
:data:`pipeline.metrics.registry.FAMILIES`, as its one registry line would. Scoring, the
aggregate, the summary, the manifest's counts, the signature and ``compare`` then handle it
with no other change: every value below is worked out by hand.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import api
from pipeline.config import ScoreConfig
from pipeline.metrics import registry
from pipeline.metrics.base import DataNote, Family, FamilyScores, MetricSpec
from pipeline.signature import Signature, compared_differences

STATISTICS = (("prediction_words", "int64"), ("reference_words", "int64"))


class WordCount(Family):
    """``word_count``: score 1.0 when some reference has as many words as the prediction."""

    name = "toy"
    names = ("word_count",)
    notes = (DataNote("toy_empty_predictions", "{n} predictions were empty (word_count "
                      "scores them 0)"),)

    def spec(self, metric: str, options: Mapping[str, Any]) -> MetricSpec:
        return MetricSpec(name=metric, family=self.name, measures=("score",),
                          primary="score", statistics=STATISTICS, reference_rule="any",
                          has_reference_index=True)

    def signature_fields(self, options: Mapping[str, Any]) -> dict[str, str]:
        return {"toy-split": "whitespace"}

    def score(self, predictions: Sequence[str | None],
              references: Sequence[Sequence[str | None]], metrics: Sequence[str],
              options: Mapping[str, Any]) -> FamilyScores:
        n = len(predictions)
        stats = np.zeros((n, 2), np.int64)
        score = np.zeros(n)
        index = np.full(n, -1, np.int32)
        for i, (p, refs) in enumerate(zip(predictions, references, strict=True)):
            words = len((p or "").split())
            lengths = [len((r or "").split()) for r in refs]
            stats[i, 0] = words
            if words and words in lengths:
                index[i] = lengths.index(words)
                score[i] = 1.0
            stats[i, 1] = lengths[max(int(index[i]), 0)] if lengths else 0
        empty = sum(1 for p in predictions if not (p or "").strip())
        columns = {"word_count_score": score,
                   **self.statistic_columns("word_count", STATISTICS, stats),
                   "word_count_reference_index": index}
        return FamilyScores(self.columns_of(columns, metrics),
                            counts={"toy_empty_predictions": empty})


TOY = WordCount()
ROWS = [  # id, prediction, references
    ("a", "the cat sat", ["a cat sat", "the cat"]),  # 3 words = reference 0: 1
    ("b", "dogs bark", ["the dogs bark", "dogs bark"]),  # 2 = reference 1: 1
    ("c", "", ["nothing"]),  # empty: 0, counted
    ("d", "one two three four", ["one two"]),  # 4 vs 2: 0
]
CANDIDATE = {"d": "one two"}  # d now matches: 0.5 -> 0.75


@pytest.fixture()
def toy_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "FAMILIES", (*registry.FAMILIES, TOY))


def _write(path: Any, rows: list[tuple[str, str, list[str]]]) -> str:
    pq.write_table(pa.table({"id": [r[0] for r in rows], "prediction": [r[1] for r in rows],
                             "references": [r[2] for r in rows]}), path)
    return str(path)


def _config() -> ScoreConfig:
    return ScoreConfig(metrics=("rouge1", "word_count"), engine="local", num_cpus=1,
                       bootstrap=0)


def test_a_registered_family_is_scored_signed_and_compared_end_to_end(toy_registry, tmp_path):
    base = api.score(_write(tmp_path / "base.parquet", ROWS), output=str(tmp_path / "base"),
                     config=_config(), run_id="base")
    rows = [(i, CANDIDATE.get(i, p), refs) for i, p, refs in ROWS]
    cand = api.score(_write(tmp_path / "cand.parquet", rows), output=str(tmp_path / "cand"),
                     config=_config(), run_id="cand")

    examples = {r["id"]: r for r in pq.read_table(tmp_path / "base" / "examples").to_pylist()}
    assert [examples[i]["word_count_score"] for i in "abcd"] == [1.0, 1.0, 0.0, 0.0]
    assert [examples[i]["word_count_reference_index"] for i in "abcd"] == [0, 1, -1, -1]
    assert [examples[i]["word_count_prediction_words"] for i in "abcd"] == [3, 2, 0, 4]
    # the family's data note: a manifest count, a line of the summary
    assert base.manifest["counts"]["toy_empty_predictions"] == 1
    assert base.manifest["counts"]["zero_token_texts"] == 0  # ROUGE's, counted as before
    from pipeline.cli.score import format_summary

    summary = format_summary(base.manifest, base.aggregate)
    assert "note: 1 predictions were empty (word_count scores them 0)" in summary
    # the aggregate: mean of the primary measure
    agg = {(r["metric"], r["measure"], r["statistic"]): r["mean"]
           for r in base.aggregate.to_pylist() if r["scope"] == "all"}
    assert agg[("word_count", "score", "mean")] == 0.5
    # the signature: the family's field, after ROUGE's
    fields = Signature.parse(base.signature).as_dict()
    assert fields["toy-split"] == "whitespace"
    assert list(fields).index("toy-split") > list(fields).index("ref")

    # in this process: the toy family is registered here only (a Ray worker of the session's
    # local Ray, which `auto` would pick, has the real registry)
    result = api.compare(base.output, cand.output, output=str(tmp_path / "cmp"),
                         n_bootstrap=200, engine="local")
    document = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert document == json.loads(json.dumps(result.to_document()))
    toy = [r for r in result.to_arrow().to_pylist() if r["metric"] == "word_count"]
    assert [(r["measure"], r["statistic"], r["n_paired"]) for r in toy] == [("score", "mean", 4)]
    assert (toy[0]["baseline_mean"], toy[0]["candidate_mean"]) == (0.5, 0.75)
    assert toy[0]["delta"] == pytest.approx(0.25)
    assert any(r["metric"] == "word_count" for r in document["rows"])


def test_a_changed_family_field_refuses_only_its_own_measures(toy_registry):
    sig = "metrics:rouge1+word_count|tok:rouge-score|stem:none|case:lc|ref:max|toy-split:{}|" \
          "nrefs:1|bs:0|ci:0.95|seed:12345|version:0.1.0"
    a, b = Signature.parse(sig.format("whitespace")), Signature.parse(sig.format("chars"))
    assert compared_differences(a, b, metrics=("word_count",)) == (["toy-split"], [])
    assert compared_differences(a, b, metrics=("rouge1",)) == ([], ["toy-split"])
