"""BLEU against sacrebleu 2.x: sentence_bleu and corpus_bleu, every tokenizer and smoothing."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import ConfigError
from pipeline.metrics.bleu import (
    FAMILY,
    STATISTICS,
    bleu_statistics,
    corpus_bleu_score,
    sentence_bleu_scores,
)
from tests.support.mt_data import bundled_realsumm, reference_streams, shared_examples

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import BLEU  # noqa: E402

TOKENIZERS = ("13a", "intl", "zh", "char", "none")
SMOOTHS = ("exp", "floor", "add-k", "none")


def sacre_sentence(preds, refs, **kw) -> np.ndarray:
    metric = BLEU(effective_order=True, **kw)
    return np.array([metric.sentence_score(p, r).score for p, r in zip(preds, refs, strict=True)])


def sacre_corpus(preds, refs, **kw) -> float:
    return BLEU(**kw).corpus_score(preds, reference_streams(refs)).score


def check(preds, refs, *, tokenize="13a", smooth="exp", lowercase=False) -> None:
    kw = {"tokenize": tokenize, "smooth_method": smooth, "lowercase": lowercase}
    stats = bleu_statistics(preds, refs, tokenize=tokenize, lowercase=lowercase)
    ours = sentence_bleu_scores(preds, refs, tokenize=tokenize, smooth=smooth,
                                lowercase=lowercase)
    np.testing.assert_allclose(ours, sacre_sentence(preds, refs, **kw), rtol=0, atol=1e-9)
    corpus = corpus_bleu_score(stats.sum(axis=0, dtype=np.float64)[None, :], smooth=smooth)
    assert corpus[0] == pytest.approx(sacre_corpus(preds, refs, **kw), abs=1e-9)


def test_bundled_realsumm_equals_sacrebleu():
    preds, refs = bundled_realsumm(200)
    check(preds, refs)


def test_statistics_are_sacrebleus():
    preds, refs = bundled_realsumm(50)
    ours = bleu_statistics(preds, refs)
    metric = BLEU()
    for i, (p, r) in enumerate(zip(preds, refs, strict=True)):
        s = metric.sentence_score(p, r)
        assert list(ours[i]) == [s.sys_len, s.ref_len, *s.counts, *s.totals]


def test_shared_data_default_options_sample(shared_dir):
    for preds, refs in shared_examples(shared_dir).values():
        check(preds[::10], refs[::10])


@pytest.mark.parametrize("tokenize", TOKENIZERS)
def test_shared_data_each_tokenizer_sample(shared_dir, tokenize):
    for preds, refs in shared_examples(shared_dir).values():
        check(preds[::50], refs[::50], tokenize=tokenize)


@pytest.mark.parametrize("smooth", SMOOTHS)
@pytest.mark.parametrize("lowercase", [False, True])
def test_shared_data_each_smoothing_sample(shared_dir, smooth, lowercase):
    for preds, refs in shared_examples(shared_dir).values():
        check(preds[::50], refs[::50], smooth=smooth, lowercase=lowercase)


@pytest.mark.slow
@pytest.mark.parametrize(("tokenize", "smooth", "lowercase"),
                         [(t, "exp", False) for t in TOKENIZERS]
                         + [("13a", s, False) for s in SMOOTHS[1:]] + [("13a", "exp", True)])
def test_shared_data_every_option(shared_dir, tokenize, smooth, lowercase):
    for preds, refs in shared_examples(shared_dir).values():
        check(preds, refs, tokenize=tokenize, smooth=smooth, lowercase=lowercase)


TEXT = st.lists(st.sampled_from(list("ab cAB.,-&;1 2\n\t'\"()$%")
                               + ["&amp;", "&quot;", "<skipped>", "-\n", "Σ", "中", "文",
                                  "é", "…", "—", "\u3000", "\xa0", "٣", "½", "€", "¿"]),
               max_size=40).map(lambda parts: "".join(parts))


@settings(max_examples=150, deadline=None)
@given(pred=TEXT, refs=st.lists(st.one_of(TEXT, st.none()), min_size=1, max_size=4),
       tokenize=st.sampled_from(TOKENIZERS), smooth=st.sampled_from(SMOOTHS),
       lowercase=st.booleans())
def test_random_texts_equal_sacrebleu(pred, refs, tokenize, smooth, lowercase):
    if all(r is None for r in refs):
        refs = [*refs, ""]
    kw = {"tokenize": tokenize, "smooth_method": smooth, "lowercase": lowercase}
    ours = sentence_bleu_scores([pred], [refs], tokenize=tokenize, smooth=smooth,
                                lowercase=lowercase)
    assert ours[0] == pytest.approx(sacre_sentence([pred], [refs], **kw)[0], abs=1e-9)


def test_family_columns_and_spec():
    preds, refs = bundled_realsumm(20)
    options = {"bleu_tokenize": "intl", "bleu_smooth": "floor"}
    cols = FAMILY.score(preds, refs, ["bleu"], options).columns
    assert set(cols) == {"bleu_score", *(f"bleu_{s}" for s, _ in STATISTICS)}
    np.testing.assert_allclose(
        cols["bleu_score"], sacre_sentence(preds, refs, tokenize="intl", smooth_method="floor"),
        rtol=0, atol=1e-9)
    spec = FAMILY.spec("bleu", options)
    assert spec.statistic_columns == tuple(f"bleu_{s}" for s, _ in STATISTICS)
    corpus = pickle.loads(pickle.dumps(spec.corpus))
    summed = np.stack([cols[c] for c in spec.statistic_columns], axis=1).sum(axis=0)
    assert corpus(summed[None, :].astype(np.float64))[0] == pytest.approx(
        sacre_corpus(preds, refs, tokenize="intl", smooth_method="floor"), abs=1e-9)
    assert FAMILY.signature_fields(options) == {
        "bleu-tok": "intl", "bleu-smooth": "floor[0.10]", "bleu-case": "mixed"}


def test_no_reference_scores_zero():
    cols = FAMILY.score(["a b c"], [[]], ["bleu"], {}).columns
    assert cols["bleu_score"][0] == 0.0 and cols["bleu_reference_tokens"][0] == 0


@pytest.mark.parametrize(("key", "value"), [("bleu_tokenize", "13b"), ("bleu_smooth", "expo")])
def test_bad_options_are_config_errors(key, value):
    with pytest.raises(ConfigError, match="did you mean"):
        FAMILY.spec("bleu", {key: value})
