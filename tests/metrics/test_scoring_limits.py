"""Pathological inputs for the scoring core: huge texts, the max_tokens guard."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline import Scorer, score_texts
from pipeline.errors import ConfigError
from tests.support import reference_rouge


def test_max_tokens_cuts_texts_and_flags_their_examples():
    scorer = Scorer(metrics=("rouge1", "rougeLsum"), max_tokens=3)
    out = scorer.score_batch(["a b c d e", "a b", "x"], [["a b c"], ["a b c d\ne f"], ["x"]])
    assert out.truncated.tolist() == [True, True, False]
    rows = out.table.to_pylist()
    # "a b c d e" -> "a b c" against "a b c": all match
    assert (rows[0]["rouge1_matches"], rows[0]["rouge1_prediction_units"]) == (3, 3)
    # reference "a b c d\ne f" -> "a b c" (the cut keeps the first 3 tokens, across lines)
    assert (rows[1]["rougeLsum_matches"], rows[1]["rougeLsum_reference_units"]) == (2, 3)
    want = reference_rouge.statistics("a b", "a b c", "rougeLsum")
    assert (rows[1]["rougeLsum_matches"], rows[1]["rougeLsum_prediction_units"],
            rows[1]["rougeLsum_reference_units"]) == want
    assert scorer.settings.signature_fields()["maxtok"] == "3"
    assert Scorer().score_batch(["a"], [["a"]]).truncated is None


def test_score_texts_flags_truncated_rows():
    frame = score_texts(["a b c d", "a"], ["a b", "a"], metrics=["rouge1"], max_tokens=2)
    assert frame["truncated"].tolist() == [True, False]
    assert frame["rouge1_precision"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("bad", [0, -5, 2.5, True, "100"])
def test_max_tokens_must_be_a_positive_whole_number(bad):
    with pytest.raises(ConfigError, match="max_tokens"):
        Scorer(max_tokens=bad)


def test_a_million_token_text_is_cut_quickly_not_a_memory_blow_up():
    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(5000)])
    huge = " ".join(rng.choice(words, 1_000_000))  # ~5.9 MB, one line
    scorer = Scorer(max_tokens=20_000)
    out = scorer.score_batch([huge, "w1 w2"], [["w1 w2 w3"], [huge]])
    assert out.truncated.tolist() == [True, True]
    row = out.table.to_pylist()[0]
    assert row["rougeL_prediction_units"] == 20_000 and row["rouge1_reference_units"] == 3
    assert all(np.isfinite(v) for v in row.values())


def _known_lcs_pair(n_tokens, *, seed):
    """A text of n_tokens words and a copy with 1% of its words deleted and 1% new words
    inserted: their LCS is exactly the words kept (new words match nothing)."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(20_000)])
    a = rng.choice(words, n_tokens)
    keep = rng.random(n_tokens) > 0.01
    b = list(a[keep])
    for k, pos in enumerate(sorted(rng.integers(0, len(b), n_tokens // 100), reverse=True)):
        b.insert(int(pos), f"new{k}")
    return " ".join(a), b, int(keep.sum())


@pytest.mark.slow
@pytest.mark.parametrize("n_lines", [1, 3])
def test_100k_token_texts_take_the_linear_memory_bit_kernels(n_lines):
    """Past ~52,000 tokens whole match masks no longer fit; the long kernels give the LCS
    built into the pair (one line, and a reference cut into lines for rougeLsum's union)."""
    prediction, reference_words, want = _known_lcs_pair(100_000, seed=n_lines)
    reference = "\n".join(" ".join(chunk) for chunk in
                          np.array_split(np.array(reference_words), n_lines))
    row = Scorer(metrics=("rougeL", "rougeLsum")).score_batch(
        [prediction, "w1 w2"], [[reference], ["w2 w1"]]).table.to_pylist()[0]
    assert row["rougeL_matches"] == want and row["rougeLsum_matches"] == want
    assert row["rougeL_prediction_units"] == 100_000
