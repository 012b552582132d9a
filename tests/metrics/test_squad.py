"""Token F1 and exact match against the official SQuAD v1.1 definitions and expected values."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.metrics.squad import FAMILY, squad_scores
from tests.support.squad_official import official_em, official_f1, official_max


def test_squad2_dev_sample_equals_expected_exactly(shared_dir):
    folder = shared_dir / "data" / "squad2_dev_sample"
    ex = pq.read_table(folder / "examples.parquet").to_pydict()
    expected = pq.read_table(folder / "expected_squad.parquet").to_pydict()
    by_id = {i: (em, f1) for i, em, f1 in
             zip(expected["id"], expected["exact_match"], expected["f1"], strict=True)}
    cols = squad_scores(ex["prediction"], ex["references"])
    assert len(ex["id"]) == 705
    for k, i in enumerate(ex["id"]):
        em, f1 = by_id[i]
        assert cols["exact_match_score"][k] == em
        assert cols["token_f1_fmeasure"][k] == f1
    assert round(float(np.mean(cols["exact_match_score"])), 4) == 0.8553
    assert round(float(np.mean(cols["token_f1_fmeasure"])), 4) == 0.9395


def test_bundled_realsumm_equals_official():
    from tests.support.mt_data import bundled_realsumm

    preds, refs = bundled_realsumm(100)
    cols = squad_scores(preds, refs)
    assert list(cols["token_f1_fmeasure"]) == [official_f1(p, r[0]) for p, r in
                                               zip(preds, refs, strict=True)]


WORDS = st.sampled_from(["a", "an", "the", "The", "AN", "cat", "Cat.", "dog,", "théa", "l'an",
                         "—", "...", "!!", "", " ", "\n", "ÉTÉ", "ß", "İ", "2", "the-end",
                         "a.b", "_an_", "ǅ", "東京"])
TEXT = st.lists(WORDS, max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(pred=TEXT, refs=st.lists(TEXT, min_size=1, max_size=4))
def test_random_answers_equal_official(pred, refs):
    cols = squad_scores([pred], [refs])
    f1 = official_max(official_f1, pred, refs)
    em = official_max(official_em, pred, refs)
    assert cols["token_f1_fmeasure"][0] == f1
    assert cols["exact_match_score"][0] == float(em)
    j = cols["token_f1_reference_index"][0]
    assert official_f1(pred, refs[j]) == f1
    assert all(official_f1(pred, r) < f1 for r in refs[:j])
    if cols["token_f1_matches"][0]:
        p, r = cols["token_f1_precision"][0], cols["token_f1_recall"][0]
        assert p == cols["token_f1_matches"][0] / cols["token_f1_prediction_tokens"][0]
        assert r == cols["token_f1_matches"][0] / cols["token_f1_reference_tokens"][0]


def test_family_columns_and_specs():
    cols = FAMILY.score(["The cat!", None], [["a cat", "cat"], []],
                        ["token_f1", "exact_match"], {}).columns
    for metric in ("token_f1", "exact_match"):
        spec = FAMILY.spec(metric, {})
        assert spec.corpus is None
        assert set(spec.measure_columns) | set(spec.statistic_columns) | {
            f"{metric}_reference_index"} <= set(cols)
    assert list(cols["exact_match_score"]) == [1.0, 0.0]
    assert list(cols["exact_match_reference_index"]) == [0, -1]
    assert list(cols["token_f1_fmeasure"]) == [1.0, 0.0]
    assert list(cols["token_f1_reference_index"]) == [0, -1]
