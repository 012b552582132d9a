"""``pipeline.score_corpus``: the aggregate in memory, as HF evaluate's ``compute()`` and
sacrebleu's ``corpus_score`` return it, from the run's own aggregate code."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import pipeline
from pipeline import api
from pipeline.config import DEFAULT_MAX_TOKENS, ScoreConfig
from pipeline.errors import ConfigError, InputError
from tests.support.mt_data import BUNDLED, bundled_realsumm, reference_streams

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import BLEU, CHRF  # noqa: E402

EXPECTED_ROUGE = (Path(__file__).resolve().parents[1] / "data"
                  / "realsumm_expected_rouge_score.parquet")


def test_corpus_bleu_is_sacrebleus_corpus_score_not_the_mean_of_sentence_bleu():
    # The bundled REALSumm data of issue 18: corpus BLEU 12.01, mean sentence BLEU 11.07.
    preds, refs = bundled_realsumm()
    result = api.score_corpus(preds, refs, metrics=["bleu"], n_bootstrap=0)
    corpus = BLEU().corpus_score(preds, reference_streams(refs))
    sentence = math.fsum(BLEU(effective_order=True).sentence_score(p, r).score
                         for p, r in zip(preds, refs, strict=True)) / len(preds)
    bleu = result["bleu"]
    assert bleu.statistic == "corpus" and bleu.measure == "score"
    assert bleu.score.value == pytest.approx(corpus.score, rel=1e-12)
    assert bleu.means["score"].value == pytest.approx(sentence, rel=1e-12)
    assert (round(bleu.score.value, 2), round(bleu.means["score"].value, 2)) == (12.01, 11.07)
    assert bleu.breakdown["bp"] == pytest.approx(corpus.bp, rel=1e-12)
    assert [bleu.breakdown[f"precision_{n}"] for n in range(1, 5)] == \
        pytest.approx(corpus.precisions, rel=1e-12)
    assert (bleu.breakdown["sys_len"], bleu.breakdown["ref_len"]) == (corpus.sys_len,
                                                                      corpus.ref_len)
    assert f"BLEU = {bleu.score.value:.2f} {bleu.breakdown_text}" == str(corpus)


def test_corpus_chrf_is_sacrebleus():
    preds, refs = bundled_realsumm(100)
    result = api.score_corpus(preds, refs, metrics=["chrf"], n_bootstrap=0)
    want = CHRF().corpus_score(preds, reference_streams(refs)).score
    assert result["chrf"].statistic == "corpus"
    assert result["chrf"].score.value == pytest.approx(want, rel=1e-12)


def test_rouge_means_are_rouge_scores():
    expected = pq.read_table(EXPECTED_ROUGE).to_pandas()
    expected = expected[expected["stemmer"] == "none"]
    preds, refs = bundled_realsumm()
    result = api.score_corpus(preds, refs, metrics=["rouge1", "rougeL"], n_bootstrap=200)
    for metric in ("rouge1", "rougeL"):
        rows = expected[expected["metric"] == metric]
        assert len(rows) == len(preds)
        agg = result[metric]
        assert agg.statistic == "mean" and agg.measure == "fmeasure"
        for measure in ("precision", "recall", "fmeasure"):
            want = math.fsum(rows[measure]) / len(rows)
            assert agg.means[measure].value == want  # fsum / n, bit for bit
            assert agg.means[measure].ci_low < want < agg.means[measure].ci_high
        assert agg.score == agg.means["fmeasure"]


def test_the_table_is_the_runs_aggregate_with_the_same_ids(tmp_path):
    preds = pq.read_table(BUNDLED / "predictions").slice(0, 400)
    refs = pq.read_table(BUNDLED / "references.parquet")
    by_id = dict(zip(refs["id"].to_pylist(), refs["reference"].to_pylist(), strict=True))
    ids = preds["id"].to_pylist()
    cfg = ScoreConfig(metrics=("rouge1", "bleu"), bootstrap=100, engine="local")
    pq.write_table(preds, tmp_path / "preds.parquet")
    pq.write_table(refs.filter(pc.is_in(refs["id"], preds["id"])),
                   tmp_path / "refs.parquet")
    run = api.score(str(tmp_path / "preds.parquet"), output=str(tmp_path / "run"),
                    references=str(tmp_path / "refs.parquet"), config=cfg)
    result = api.score_corpus(preds["prediction"].to_pylist(), [by_id[i] for i in ids],
                              metrics=["rouge1", "bleu"], ids=ids, n_bootstrap=100,
                              max_tokens=DEFAULT_MAX_TOKENS)  # the CLI's default cut
    assert result.table.equals(run.aggregate)
    assert result.signature == run.signature
    assert result.n_examples == 400 and list(result) == ["rouge1", "bleu"]


def test_to_dict_is_json_ready():
    preds, refs = bundled_realsumm(30)
    doc = api.score_corpus(preds, refs, metrics=["rouge2", "bleu"], n_bootstrap=50).to_dict()
    assert set(doc) == {"signature", "n_examples", "rouge2", "bleu"}
    assert set(doc["bleu"]) >= {"score", "ci_low", "ci_high", "statistic", "means", "bp",
                                "ratio", "sys_len", "ref_len", "precision_1"}
    assert doc["rouge2"]["means"]["recall"]["ci_low"] <= doc["rouge2"]["means"]["recall"]["value"]
    assert pipeline.score_corpus is api.score_corpus


def test_score_texts_still_returns_the_per_example_frame():
    frame = pipeline.score_texts(["the cat sat"], ["the cat sat down"], metrics=["rouge1"])
    assert list(frame.columns[:2]) == ["n_references", "rouge1_precision"]


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"ids": ["a"]}, InputError), ({"ids": ["a", None]}, InputError),
    ({"n_bootstrap": -1}, ConfigError), ({"confidence": 1.5}, ConfigError),
    ({"metrics": ["bleu4"]}, ConfigError),
])
def test_bad_arguments(kwargs, error):
    with pytest.raises(error):
        api.score_corpus(["a b", "c d"], ["a b", "c"], **kwargs)


def test_one_reference_string_or_lists_and_var_references_in_the_signature():
    result = api.score_corpus(["a b c", "c d"], [["a b c", "a"], "c"], metrics=["rouge1"],
                              n_bootstrap=0)
    assert "nrefs:var" in result.signature or "ref:var" in result.signature
    assert result["rouge1"].score.ci_low is None
    assert isinstance(result.table, pa.Table)
