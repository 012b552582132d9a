"""Pathological inputs for the scoring core: huge texts, the max_tokens guard."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline import Scorer, score_texts
from pipeline.errors import ConfigError

from . import reference_rouge


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
