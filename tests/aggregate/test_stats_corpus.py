"""Corpus metrics through the aggregate and compare, against sacrebleu (real specs).

The corpus rows must equal sacrebleu's ``corpus_bleu`` / ``corpus_chrf`` of the same texts,
and the paired bootstrap must recompute both runs' corpus scores from resampled summed
statistics (sacrebleu's ``--paired-bs``), here checked against sacrebleu's ``corpus_bleu``
of the resampled examples themselves, repeated as the weights say.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pipeline.aggregate import aggregate
from pipeline.api import score_texts
from pipeline.compare import compare_examples
from pipeline.compare.pairing import _pair_hashes
from pipeline.metrics.registry import specs
from tests.compare.test_compare_fixtures import realsumm, truncate_half
from tests.support.plain_bootstrap import plain_weights

sacrebleu = pytest.importorskip("sacrebleu")


@pytest.fixture(scope="module")
def texts():
    frame = realsumm().head(60).reset_index(drop=True)
    return frame["id"].tolist(), frame["prediction"].tolist(), frame["reference"].tolist()


def test_corpus_rows_equal_sacrebleu(texts):
    ids, predictions, references = texts
    scored = score_texts(predictions, references, metrics=["bleu", "chrf"])
    table = pa.Table.from_pandas(scored.assign(id=ids), preserve_index=False)
    agg = aggregate(table, metrics=("bleu", "chrf"), n_bootstrap=100, id_column="id").to_pylist()
    corpus = {r["metric"]: r for r in agg if r["statistic"] == "corpus"}
    assert corpus["bleu"]["measure"] == "score"
    want_bleu = sacrebleu.corpus_bleu(predictions, [references]).score
    want_chrf = sacrebleu.corpus_chrf(predictions, [references]).score
    assert corpus["bleu"]["mean"] == pytest.approx(want_bleu, abs=1e-9)
    assert corpus["chrf"]["mean"] == pytest.approx(want_chrf, abs=1e-9)
    for r in corpus.values():
        assert r["ci_low"] < r["mean"] < r["ci_high"]
    means = {r["metric"]: r["mean"] for r in agg if r["statistic"] == "mean"}
    assert means["bleu"] == pytest.approx(np.mean(
        [sacrebleu.sentence_bleu(p, [r]).score for p, r in zip(predictions, references,
                                                               strict=True)]), abs=1e-9)


def test_paired_bootstrap_recomputes_corpus_bleu_of_each_resample(texts):
    ids, predictions, references = texts
    cut = [truncate_half(p) if i % 3 == 0 else p for i, p in enumerate(predictions)]
    base = score_texts(predictions, references, metrics=["bleu"]).assign(id=ids)
    cand = score_texts(cut, references, metrics=["bleu"]).assign(id=ids)
    cmp = compare_examples(base, cand, measures=["bleu.score"], specs=specs(["bleu"], {}),
                           n_bootstrap=8, seed=5, band=0.0)
    row = cmp.rows.iloc[0]
    assert row["statistic"] == "corpus"
    assert row["baseline_mean"] == pytest.approx(
        sacrebleu.corpus_bleu(predictions, [references]).score, abs=1e-9)
    assert row["candidate_mean"] == pytest.approx(
        sacrebleu.corpus_bleu(cut, [references]).score, abs=1e-9)
    # each resample: sacrebleu on the examples repeated as often as their weight
    w = plain_weights([int(h) for h in _pair_hashes(base, "id", ())], seed=5, count=8,
                      kind="poisson").astype(int)
    deltas = []
    for weights in w:
        pick = np.repeat(np.arange(len(ids)), weights)
        refs = [[references[i] for i in pick]]
        deltas.append(sacrebleu.corpus_bleu([cut[i] for i in pick], refs).score
                      - sacrebleu.corpus_bleu([predictions[i] for i in pick], refs).score)
    low, high = np.quantile(deltas, [0.025, 0.975])
    assert row["ci_low"] == pytest.approx(low, abs=1e-6)
    assert row["ci_high"] == pytest.approx(high, abs=1e-6)


@pytest.mark.parametrize("smooth", ["exp", "floor", "add-k"])
def test_a_one_example_group_has_the_interval_of_its_one_value(smooth):
    """Issue 25, item 28: a one-example group's BLEU interval read ``9.3466 [4.6733,
    9.3466]`` beside ROUGE's ``[x, x]``: Poisson weights of 2, 3, 4 counted the example as
    a corpus of 2, 3, 4 copies, which sacrebleu's smoothing scores lower. Every resample of
    one example is that example (the multinomial bootstrap's), so the interval is
    sacrebleu's corpus BLEU of it, at both ends; a bigger group's resamples keep its size."""
    predictions = ["the cat sat on a mat today", "a dog ran in the park now",
                   "the quick brown fox jumps over the dog"]
    references = ["the cat sat on the mat", "the dog ran in a park",
                  "a quick brown fox jumped over the lazy dog"]
    options = {"bleu_smooth": smooth}
    scored = score_texts(predictions, references, metrics=["bleu", "rouge1"], **options)
    table = pa.Table.from_pandas(scored.assign(id=["a", "b", "c"], system=["x", "x", "y"]),
                                 preserve_index=False)
    agg = aggregate(table, metrics=("bleu", "rouge1"), group_by=("system",), n_bootstrap=400,
                    id_column="id", options=options).to_pylist()
    one = {(r["metric"], r["statistic"]): r for r in agg if r["system"] == "y"}
    want = sacrebleu.corpus_bleu(predictions[2:], [references[2:]],
                                 smooth_method=smooth).score
    bleu = one[("bleu", "corpus")]
    assert bleu["n_examples"] == 1
    assert (bleu["ci_low"], bleu["mean"], bleu["ci_high"]) == pytest.approx((want,) * 3,
                                                                            abs=1e-9)
    rouge = one[("rouge1", "mean")]
    assert (rouge["ci_low"], rouge["ci_high"]) == pytest.approx((rouge["mean"],) * 2,
                                                                rel=1e-12)  # on the grid
    # two examples: a resample is one of them twice or both, never a corpus of four
    two = next(r for r in agg if r["system"] == "x" and r["statistic"] == "corpus")
    ends = [sacrebleu.corpus_bleu([predictions[i]] * 2, [[references[i]] * 2],
                                  smooth_method=smooth).score for i in (0, 1)]
    both = sacrebleu.corpus_bleu(predictions[:2], [references[:2]], smooth_method=smooth).score
    assert min(ends + [both]) - 1e-9 <= two["ci_low"] <= two["ci_high"] <= \
        max(ends + [both]) + 1e-9
