"""`pipeline.explain`: its counts equal the scorer's statistics; hand-checked examples; CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import Scorer, explain
from pipeline.cli import main
from pipeline.metrics.rouge.family import MEASURES

STATISTICS = ("matches", "prediction_units", "reference_units")

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "runs", "running", "ran", "Cat", "x1"]
text = st.lists(st.sampled_from(WORDS + ["\n", ".", ",", "!"]), max_size=25).map(
    lambda ws: " ".join(ws).replace(" \n ", "\n"))
settings_ = st.fixed_dictionaries({
    "stemmer": st.sampled_from(["none", "porter"]),
    "tokenizer": st.sampled_from(["rouge-score", "whitespace", "unicode"]),
    "case_sensitive": st.booleans(),
    "multi_reference": st.sampled_from(["max", "mean", "pooled", "best-recall"]),
    "sentence_split": st.sampled_from(["newline", "punctuation"]),
    "max_tokens": st.sampled_from([None, 5, 100]),
})
METRICS = ("rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum")


@pytest.mark.filterwarnings("ignore::UserWarning")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prediction=text, references=st.lists(text, min_size=1, max_size=3), config=settings_)
def test_explanation_counts_equal_the_scorer_statistics(prediction, references, config):
    scored = Scorer(metrics=METRICS, **config).score_batch([prediction], [references]).table
    row = scored.to_pylist()[0]
    e = explain(prediction, references, metrics=METRICS, **config)
    for m in METRICS:
        got = e.metrics[m]
        for s in STATISTICS:
            assert getattr(got, s) == row[f"{m}_{s}"], (m, s)
        for x in MEASURES:
            assert getattr(got, x) == row[f"{m}_{x}"], (m, x)
        assert got.reference_index == row[f"{m}_reference_index"]
        for pair in got.pairs:  # the units listed add up to the pair's matches
            if pair.ngrams is not None:
                assert sum(g["matches"] for g in pair.ngrams) == pair.matches
            if pair.alignment is not None:
                assert len(pair.alignment) == pair.matches
            if pair.sentences is not None:
                assert sum(len(s["hits"]) for s in pair.sentences) == pair.matches


def _rouge_score_walk(ref: list[str], can: list[str]) -> list[tuple[int, int]]:
    """rouge-score 0.1.2's ``_backtrack_norec`` on its ``_lcs_table``, both positions kept."""
    from rouge_score.rouge_scorer import _lcs_table

    t = _lcs_table(ref, can)
    i, j, out = len(ref), len(can), []
    while i > 0 and j > 0:
        if ref[i - 1] == can[j - 1]:
            out.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif t[i][j - 1] > t[i - 1][j]:
            j -= 1
        else:
            i -= 1
    return out[::-1]


def tokens(longest: int) -> st.SearchStrategy[list[str]]:
    """Token lists of up to ``longest`` tokens over 1 to 7 distinct words."""
    return st.integers(0, longest).flatmap(lambda n: st.lists(
        st.sampled_from("abcdefg"[:1 + n % 7]), min_size=n, max_size=n))


# over 64 tokens the bit rows span several words; over ~100 the checkpoints cut blocks
@settings(max_examples=100, deadline=None)
@given(ref=tokens(150), can=tokens(150))
def test_the_compiled_lcs_walk_is_rouge_scores(ref, can):
    from rouge_score.rouge_scorer import _backtrack_norec, _lcs_table

    from pipeline.explanation import lcs_pairs

    got = lcs_pairs(ref, can)
    assert got == _rouge_score_walk(ref, can)
    assert [r for r, _ in got] == _backtrack_norec(_lcs_table(ref, can), ref, can)


@settings(max_examples=100, deadline=None)
@given(ref=st.lists(tokens(30), min_size=1, max_size=4), pred=st.lists(tokens(30), max_size=4))
def test_the_compiled_union_walk_is_rouge_scores(ref, pred):
    from pipeline.explanation import _union_pairs

    def bounds(lines):
        out, at = [], 0
        for line in lines:
            out.append((at, at + len(line)))
            at += len(line)
        return out

    flat_ref, flat_pred = [t for s in ref for t in s], [t for s in pred for t in s]
    want = [-1] * len(flat_ref)
    for rs, re_ in bounds(ref):
        for ps, pe in bounds(pred):
            for r, c in _rouge_score_walk(flat_ref[rs:re_], flat_pred[ps:pe]):
                if want[rs + r] < 0:
                    want[rs + r] = ps + c
    assert _union_pairs(flat_ref, bounds(ref), flat_pred, bounds(pred)) == want


def test_hand_checked_example():
    # rouge-score's README example: "The quick brown fox jumps over the lazy dog" vs
    # "The quick brown dog jumps on the log.": rouge1 P = R = 6/8? by hand:
    # prediction tokens: the quick brown dog jumps on the log (8)
    # reference tokens:  the quick brown fox jumps over the lazy dog (9)
    # unigrams in both, clipped: the x2, quick, brown, dog, jumps -> 6
    e = explain("The quick brown dog jumps on the log.",
                ["The quick brown fox jumps over the lazy dog"], metrics=("rouge1", "rougeL"))
    r1 = e.metrics["rouge1"]
    assert (r1.matches, r1.prediction_units, r1.reference_units) == (6, 8, 9)
    grams = {" ".join(g["ngram"]): g["matches"] for g in r1.pairs[0].ngrams}
    assert grams == {"the": 2, "quick": 1, "brown": 1, "dog": 1, "jumps": 1}
    # LCS: the quick brown jumps the (5): pairs (pred, ref) by hand
    assert e.metrics["rougeL"].pairs[0].alignment == [(0, 0), (1, 1), (2, 2), (4, 4), (6, 6)]
    assert e.metrics["rougeL"].fmeasure == pytest.approx(2 * (5 / 8) * (5 / 9) / (5 / 8 + 5 / 9))


def test_rougelsum_union_hits_per_sentence():
    # Lin 2004 §3.2's example: r = w1 w2 w3 w4 w5; c1 = w1 w2 w6 w7 w8, c2 = w1 w3 w8 w9 w5:
    # LCS(r, c1) = w1 w2, LCS(r, c2) = w1 w3 w5; union = w1 w2 w3 w5: 4 hits.
    e = explain("w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", ["w1 w2 w3 w4 w5"], metrics=("rougeLsum",))
    pair = e.metrics["rougeLsum"].pairs[0]
    assert pair.sentences == [{"sentence": 0, "start": 0, "end": 5, "union": [0, 1, 2, 4],
                               "hits": [0, 1, 2, 4]}]
    assert pair.matches == 4


def test_multi_reference_winner_and_pooled():
    e = explain("the cat sat", ["a dog ran", "the cat sat down"], metrics=("rouge1",))
    assert e.metrics["rouge1"].reference_index == 1
    e = explain("the cat sat", ["a dog ran", "the cat sat down"], metrics=("rouge1",),
                multi_reference="pooled")
    assert e.metrics["rouge1"].reference_index == -1
    assert e.metrics["rouge1"].matches == 3 and e.metrics["rouge1"].reference_units == 7


def test_token_spans_point_at_the_words():
    e = explain("The Cat, sat.", ["cat"], metrics=("rouge1",), stemmer="porter")
    spans = e.prediction.spans
    assert [e.prediction.text[a:b] for a, b in spans] == ["The", "Cat", "sat"]
    assert e.metrics["rouge1"].pairs[0].prediction_positions == [1]


def overlap(*args) -> object:
    return CliRunner().invoke(main, ["explain", *map(str, args)], catch_exceptions=False)


def test_cli_explain_text_and_json():
    result = overlap("--prediction", "the cat sat on the mat", "--reference", "a cat sat",
                     "--reference", "the cat was on the mat", "--metrics", "rouge1,rougeL")
    assert result.exit_code == 0, result.output
    assert "rouge1: P" in result.output and "reference 1 won" in result.output
    doc = json.loads(overlap("--prediction", "the cat sat", "--reference", "the cat",
                             "--format", "json").output)
    assert set(doc) == {"settings", "prediction", "references", "metrics"}
    assert doc["metrics"]["rouge1"]["matches"] == 2
    assert doc["metrics"]["rougeL"]["references"][0]["alignment"] == [[0, 0], [1, 1]]
    assert overlap("--prediction", "x").exit_code == 2  # no reference
    assert overlap("--prediction", "x", "--reference", "y", "--metrics", "rouge0"
                   ).exit_code == 2


def test_new_modules_import_in_the_house_direction():
    from tests.house.test_imports import MODULES, _within

    upward = ("pipeline.api", "pipeline.cli")
    core_forbidden = (*upward, "pipeline.io", "pipeline.engine", "pipeline.config", "ray",
                      "fsspec", "click")
    bad = [f"{m} imports {i}" for m, imported in MODULES.items() for i in imported
           if (_within(m, "pipeline.explanation") and any(_within(i, f) for f in core_forbidden))
           or ((_within(m, "pipeline.warehouse") or _within(m, "pipeline.report"))
               and any(_within(i, f) for f in upward))]
    assert not bad, bad
