"""Hypothesis properties: equality with rouge-score on arbitrary text, and LCS invariants."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from pipeline import Scorer, compiled
from pipeline.metrics.rouge.lcs import (
    build_long_masks,
    build_masks,
    clear_masks,
    lcs_length,
    lcs_length_bits,
    lcs_length_long,
    lcs_mark,
    lcs_mark_bits,
    lcs_mark_bits_ckpt,
    lcs_mark_long,
)
from tests.support import reference_rouge

METRICS = ("rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum")
WORDS = ["the", "cat", "sat", "on", "mat", "Dogs", "bark", "running", "runs", "ran", "3.5",
         "U.S.", "it's", "café", "кот", "我们", "İstanbul", "\u212a", "a", "I", "x1"]

word = st.one_of(st.sampled_from(WORDS), st.text(min_size=1, max_size=8))
separator = st.sampled_from([" ", "  ", "\n", "\n\n", " \n ", "\t", ", ", ". ", "-", "\r\n"])
text = st.lists(st.tuples(word, separator), max_size=25).map(
    lambda parts: "".join(w + s for w, s in parts))
any_text = st.one_of(text, st.text(max_size=60), st.just(""), st.just(" \n "))

_SCORERS = {stem: rouge_scorer.RougeScorer(list(METRICS), use_stemmer=stem)
            for stem in (False, True)}
_OURS = {stem: Scorer(metrics=METRICS, stemmer="porter" if stem else "none")
         for stem in (False, True)}


def _check_against_rouge_score(predictions, references, stem):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = _OURS[stem].score_batch(predictions, references).table.to_pydict()
    for i, (p, refs) in enumerate(zip(predictions, references, strict=True)):
        want = _SCORERS[stem].score_multi(refs, p) if len(refs) > 1 \
            else _SCORERS[stem].score(refs[0], p)
        for m in METRICS:
            got = (table[f"{m}_precision"][i], table[f"{m}_recall"][i],
                   table[f"{m}_fmeasure"][i])
            assert got == tuple(want[m]), (m, p, refs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(any_text, any_text), min_size=1, max_size=6), st.booleans())
def test_equal_to_rouge_score_single_reference(pairs, stem):
    _check_against_rouge_score([p for p, _ in pairs], [[r] for _, r in pairs], stem)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(any_text, st.lists(any_text, min_size=2, max_size=4)),
                min_size=1, max_size=4), st.booleans())
def test_equal_to_rouge_score_multi_reference(examples, stem):
    _check_against_rouge_score([p for p, _ in examples], [r for _, r in examples], stem)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(any_text, st.lists(any_text, min_size=1, max_size=3)),
                min_size=1, max_size=4),
       st.sampled_from(["mean", "pooled", "best-recall"]),
       st.sampled_from(["rouge-score", "whitespace"]))
def test_other_rules_and_tokenizers_match_the_plain_reference(examples, rule, tokenizer):
    scorer = Scorer(metrics=("rouge1", "rouge2", "rougeL", "rougeLsum"), multi_reference=rule,
                    tokenizer=tokenizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = scorer.score_batch([p for p, _ in examples],
                                   [r for _, r in examples]).table.to_pydict()
    for i, (p, refs) in enumerate(examples):
        for m in scorer.metrics:
            want = reference_rouge.score(p, refs, m, rule=rule, tokenizer=tokenizer)
            for key in ("matches", "prediction_units", "reference_units", "reference_index"):
                assert table[f"{m}_{key}"][i] == want[key], (m, key)
            for key in ("precision", "recall", "fmeasure"):
                assert table[f"{m}_{key}"][i] == pytest.approx(want[key], rel=1e-15, abs=0)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="abcdefgh .\n我кा", max_size=30), min_size=2, max_size=2))
def test_unicode_tokenizer_matches_the_plain_reference(texts):
    scorer = Scorer(metrics=("rouge1", "rougeL"), tokenizer="unicode")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = scorer.score_batch([texts[0]], [[texts[1]]]).table.to_pydict()
    for m in scorer.metrics:
        want = reference_rouge.statistics(texts[0], texts[1], m, tokenizer="unicode")
        got = tuple(table[f"{m}_{k}"][0] for k in ("matches", "prediction_units",
                                                   "reference_units"))
        assert got == want


token_ids = st.lists(st.integers(0, 5), max_size=150)


def _arrays(a, b):
    tokens = np.array(a + b, dtype=np.int32)
    return tokens, len(a), len(b)


# The kernels one by one, as numba's JIT build (they are compiled into the scorer's kernel,
# not exported): numba compiles about twenty of them first, 15-20 CPU-s in a fresh tree, so
# these run in the slow tier. The fast tier checks the same walk through the compiled build:
# test_compiled_lcs_invariants below, the scorer against rouge-score above and
# tests/report/test_explain.py::test_the_compiled_lcs_walk_is_rouge_scores.
@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(token_ids, token_ids)
def test_lcs_invariants_and_kernels_agree(a, b):
    tokens, n, m = _arrays(a, b)
    row = np.zeros(m + 1, dtype=np.int32)
    length = lcs_length(tokens, 0, n, n, m, row)
    assert 0 <= length <= min(n, m)
    assert lcs_length(np.array(a + a, dtype=np.int32), 0, n, n, n,
                      np.zeros(n + 1, dtype=np.int32)) == n  # identical sequences
    loc = np.full(6, -1, dtype=np.int32)
    masks = np.zeros((max(m, 1), (m + 63) // 64 + 1), dtype=np.uint64)
    build_masks(tokens, n, m, loc, masks)
    v = np.zeros(masks.shape[1], dtype=np.uint64)
    assert lcs_length_bits(tokens, 0, n, m, loc, masks, v) == length
    # rouge-score's backtrack: full table, checkpointed table, and bit rows pick the same LCS
    want = reference_rouge.lcs_indices([str(t) for t in a], [str(t) for t in b])
    assert len(want) == length
    for tab_cells in (1 << 22, 7):  # 7 cells forces the checkpointed path
        mark = np.zeros(max(n, 1), dtype=np.bool_)
        lcs_mark(tokens, 0, n, n, m, mark, np.zeros(tab_cells, dtype=np.int32))
        assert list(np.flatnonzero(mark[:n])) == want
    rows = np.zeros((n + 1) * masks.shape[1], dtype=np.uint64)
    mark = np.zeros(max(n, 1), dtype=np.bool_)
    lcs_mark_bits(tokens, 0, n, n, m, loc, masks, rows, mark)
    assert list(np.flatnonzero(mark[:n])) == want
    mark = np.zeros(max(n, 1), dtype=np.bool_)
    lcs_mark_bits_ckpt(tokens, 0, n, n, m, loc, masks, mark)
    assert list(np.flatnonzero(mark[:n])) == want
    clear_masks(tokens, n, m, loc)
    assert (loc == -1).all()
    # linear-memory masks (some tokens whole masks, the others position lists)
    long_masks = build_long_masks(tokens, n, m, loc)
    assert lcs_length_long(tokens, 0, n, m, loc, long_masks) == length
    mark = np.zeros(max(n, 1), dtype=np.bool_)
    lcs_mark_long(tokens, 0, n, n, m, loc, long_masks, mark)
    assert list(np.flatnonzero(mark[:n])) == want
    clear_masks(tokens, n, m, loc)
    assert (loc == -1).all()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 9), min_size=0, max_size=40), min_size=1, max_size=5),
       st.lists(st.lists(st.integers(0, 9), min_size=0, max_size=40), min_size=1, max_size=5))
def test_union_lcs_of_long_multi_line_texts_matches_the_reference(pred_lines, ref_lines):
    """Predictions of up to 200 tokens over several lines: one-word, two-word and
    line-by-line kernel paths against the plain reference."""
    pred = "\n".join(" ".join(f"w{t}" for t in line) for line in pred_lines)
    ref = "\n".join(" ".join(f"w{t}" for t in line) for line in ref_lines)
    table = Scorer(metrics=("rougeL", "rougeLsum")).score_batch([pred, ref],
                                                                 [[ref], [pred]]).table
    for i, (p, r) in enumerate(((pred, ref), (ref, pred))):
        for m in ("rougeL", "rougeLsum"):
            assert table.column(f"{m}_matches")[i].as_py() == \
                reference_rouge.statistics(p, r, m)[0], m


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=200), st.lists(st.integers(0, 30), max_size=200),
       st.sampled_from([("rouge1", "rougeL"), ("rougeL", "rouge2", "rouge1"),
                        ("rouge2", "rougeL")]))
def test_rouge1_and_rouge2_taken_in_rougel_pass_match_the_reference(pred_ids, ref_ids,
                                                                      metrics):
    """rouge1 and rouge2 asked with rougeL (one pass over the reference for predictions of
    up to 128 tokens, separate passes above) against the plain reference, 0-200 tokens."""
    _assert_statistics_equal_the_reference(" ".join(f"w{t}" for t in pred_ids),
                                           " ".join(f"w{t}" for t in ref_ids), metrics)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 12), max_size=70), min_size=1, max_size=4),
       st.lists(st.lists(st.integers(0, 12), max_size=70), min_size=1, max_size=4),
       st.sampled_from([("rougeL", "rougeLsum"), ("rougeLsum", "rouge2", "rougeL", "rouge1"),
                        ("rouge1", "rougeLsum", "rougeL")]))
def test_rougelsum_taken_in_rougel_pass_matches_the_reference(pred_lines, ref_lines, metrics):
    """rougeLsum asked with rougeL (its lanes in rougeL's pass over the reference for
    predictions of up to 128 tokens, with rouge1's and rouge2's counts) against the plain
    reference, several lines of 0-70 tokens, empty lines among them."""
    _assert_statistics_equal_the_reference(
        "\n".join(" ".join(f"w{t}" for t in line) for line in pred_lines),
        "\n".join(" ".join(f"w{t}" for t in line) for line in ref_lines), metrics)


def _assert_statistics_equal_the_reference(pred, ref, metrics):
    """Both ways round, each metric's statistics from the scorer equal the plain reference's."""
    table = Scorer(metrics=metrics).score_batch([pred, ref], [[ref], [pred]]).table
    for i, (p, r) in enumerate(((pred, ref), (ref, pred))):
        for m in metrics:
            got = tuple(table.column(f"{m}_{k}")[i].as_py()
                        for k in ("matches", "prediction_units", "reference_units"))
            assert got == reference_rouge.statistics(p, r, m), m


@settings(max_examples=200, deadline=None)
@given(token_ids, token_ids)
def test_compiled_lcs_invariants(a, b):
    """0 <= LCS <= min(n, m), identical sequences have LCS n, and the compiled walk (the
    long-mask path with checkpoints) is rouge-score's backtrack."""
    align = compiled.kernel("lcs_alignment")
    tokens, n, m = _arrays(a, b)
    pairs = align(tokens, 0, n, n, m, 6)
    assert 0 <= len(pairs) <= min(n, m)
    assert all(a[i] == b[j] for i, j in pairs.tolist())
    assert pairs[:, 0].tolist() == reference_rouge.lcs_indices([str(t) for t in a],
                                                               [str(t) for t in b])
    assert len(align(np.array(a + a, dtype=np.int32), 0, n, n, n, 6)) == n


@pytest.mark.slow  # numba's JIT build of three kernels (see above)
@pytest.mark.parametrize("length", [700, 2500])
def test_checkpointed_bit_rows_walk_the_same_lcs_as_the_whole_table(length):
    rng = np.random.default_rng(length)
    a = rng.integers(0, 30, length).tolist()
    b = rng.integers(0, 30, length + 37).tolist()
    tokens, n, m = _arrays(a, b)
    want = np.zeros(n, dtype=np.bool_)
    lcs_mark(tokens, 0, n, n, m, want, np.zeros((n + 1) * (m + 1), dtype=np.int32))
    loc = np.full(30, -1, dtype=np.int32)
    masks = np.zeros((30, (m + 63) // 64), dtype=np.uint64)
    build_masks(tokens, n, m, loc, masks)
    got = np.zeros(n, dtype=np.bool_)
    lcs_mark_bits_ckpt(tokens, 0, n, n, m, loc, masks, got)
    assert want.sum() > length // 5 and (got == want).all()


def test_identical_texts_score_one():
    text = "The cat sat on the mat.\nIt purred, loudly!"
    row = Scorer(metrics=METRICS).score_batch([text], [[text]]).table.to_pylist()[0]
    assert all(row[f"{m}_fmeasure"] == 1.0 for m in METRICS)


def test_long_texts_take_every_kernel_path_and_agree():
    """Texts past 64 tokens use multi-word bit rows; compare with the plain reference."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(12)]
    for n_words in (63, 64, 65, 130, 300):
        a = " ".join(rng.choice(words, n_words))
        b = "\n".join(" ".join(rng.choice(words, n_words // 2)) for _ in range(2))
        table = Scorer(metrics=("rouge2", "rougeL", "rougeLsum")).score_batch(
            [a, b], [[b], [a]]).table.to_pydict()
        for i, (p, r) in enumerate(((a, b), (b, a))):
            for m in ("rouge2", "rougeL", "rougeLsum"):
                assert table[f"{m}_matches"][i] == reference_rouge.statistics(p, r, m)[0]
