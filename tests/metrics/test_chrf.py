"""chrF and chrF++ against sacrebleu 2.x: sentence and corpus scores, statistics, references."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.metrics.chrf import FAMILY, chrf_statistics, corpus_chrf_score, statistics
from tests.support.mt_data import bundled_realsumm, reference_streams, shared_examples

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import CHRF  # noqa: E402

WORD_ORDER = {"chrf": 0, "chrfpp": 2}


def check(preds, refs, word_order) -> None:
    stats, scores, _ = chrf_statistics(preds, refs, word_order=word_order)
    metric = CHRF(word_order=word_order)
    expected = [metric.sentence_score(p, r).score for p, r in zip(preds, refs, strict=True)]
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-9)
    corpus = corpus_chrf_score(stats.sum(axis=0, dtype=np.float64)[None, :])[0]
    assert corpus == pytest.approx(
        CHRF(word_order=word_order).corpus_score(preds, reference_streams(refs)).score,
        abs=1e-9)


@pytest.mark.parametrize("word_order", [0, 2])
def test_bundled_realsumm_equals_sacrebleu(word_order):
    preds, refs = bundled_realsumm(60)
    check(preds, refs, word_order)


@pytest.mark.parametrize("word_order", [0, 2])
def test_shared_data_sample(shared_dir, word_order):
    for preds, refs in shared_examples(shared_dir).values():
        check(preds[::30], refs[::30], word_order)


@pytest.mark.slow
@pytest.mark.parametrize("word_order", [0, 2])
def test_shared_data_every_example(shared_dir, word_order):
    for preds, refs in shared_examples(shared_dir).values():
        check(preds, refs, word_order)


def test_statistics_and_kept_reference_are_sacrebleus(shared_dir):
    preds, refs = shared_examples(shared_dir)["summeval_multiref11"]
    preds, refs = preds[:20], refs[:20]
    for word_order in (0, 2):
        stats, scores, index = chrf_statistics(preds, refs, word_order=word_order)
        metric = CHRF(word_order=word_order)
        for i, (p, rs) in enumerate(zip(preds, refs, strict=True)):
            per_ref = [metric.sentence_score(p, [r]).score for r in rs]
            assert index[i] == int(np.argmax(per_ref))  # the first best
            assert scores[i] == per_ref[index[i]]
            expected = metric._extract_corpus_statistics([p], [[r] for r in rs])[0]
            assert list(stats[i]) == expected


TEXT = st.lists(st.sampled_from(list("ab cAB.,-!?;:1 2\n\t'\"()$%") + [
    "Σ", "中", "文", "é", "…", "—", "\u3000", "\xa0", "٣", "½", "€", "¿", "\U0001F600"]),
    max_size=30).map(lambda parts: "".join(parts))


@settings(max_examples=150, deadline=None)
@given(pred=TEXT, refs=st.lists(st.one_of(TEXT, st.none()), min_size=1, max_size=4),
       word_order=st.sampled_from([0, 2]))
def test_random_texts_equal_sacrebleu(pred, refs, word_order):
    if all(r is None for r in refs):
        refs = [*refs, ""]
    _, scores, _ = chrf_statistics([pred], [refs], word_order=word_order)
    expected = CHRF(word_order=word_order).sentence_score(pred, refs).score
    assert scores[0] == pytest.approx(expected, abs=1e-9)


def test_family_columns_spec_and_corpus():
    preds, refs = bundled_realsumm(30)
    cols = FAMILY.score(preds, refs, ["chrf", "chrfpp"], {}).columns
    for metric, order in WORD_ORDER.items():
        spec = FAMILY.spec(metric, {})
        assert set(spec.measure_columns) | set(spec.statistic_columns) | {
            f"{metric}_reference_index"} <= set(cols)
        assert len(spec.statistics) == 3 * (6 + order) == len(statistics(metric))
        summed = np.stack([cols[c] for c in spec.statistic_columns], axis=1).sum(axis=0)
        corpus = pickle.loads(pickle.dumps(spec.corpus))
        assert corpus(summed[None, :].astype(np.float64))[0] == pytest.approx(
            sacrebleu.corpus_chrf(preds, reference_streams(refs), word_order=order).score,
            abs=1e-9)
        np.testing.assert_allclose(
            cols[f"{metric}_score"],
            [sacrebleu.sentence_chrf(p, r, word_order=order).score
             for p, r in zip(preds, refs, strict=True)], rtol=0, atol=1e-9)


def test_no_reference_and_none_entries():
    cols = FAMILY.score(["abc", "abc"], [[], [None, "xyz", "abc"]], ["chrf"], {}).columns
    assert cols["chrf_score"][0] == 0.0 and cols["chrf_reference_index"][0] == -1
    assert cols["chrf_score"][1] == 100.0 and cols["chrf_reference_index"][1] == 2
