"""The Python API's arguments under hostile use (issue 25, items 5, 9, 18, 23, 24, 30):
texts where lists belong, dicts, numbers, ids that do not fit, sizes no machine holds, and
what an explanation prints."""

from __future__ import annotations

import pytest

import pipeline
from pipeline import api
from pipeline.errors import ConfigError, InputError
from pipeline.explanation import format_explanation
from tests.support import reference_rouge

# --- item 9: a bare string where a list of references belongs -------------------------------

@pytest.mark.parametrize("fn", [api.score_texts, api.score_corpus])
def test_a_bare_string_as_references_is_refused_never_split_into_letters(fn):
    # score_texts(["a", "b"], "ab") scored "a" against "a" and "b" against "b"
    with pytest.raises(TypeError, match=r"references must be a list .*not a str"):
        fn(["a", "b"], "ab", metrics=["rouge1"])
    with pytest.raises(TypeError, match=r"references must be a list .*not a str"):
        fn(["the cat sat"], "the cat sat down", metrics=["rouge1"])  # not "1 vs 16 lists"


def test_explain_takes_a_bare_string_as_its_one_reference():
    # one example: a string is unambiguously one reference (it was 11 one-letter ones)
    e = api.explain("the cat sat", "the cat sat on the mat", metrics=["rouge1"])
    assert e.references == ["the cat sat on the mat"]
    m = e.metrics["rouge1"]
    want = reference_rouge.statistics("the cat sat", "the cat sat on the mat", "rouge1")
    assert (m.statistics["matches"], m.statistics["prediction_units"],
            m.statistics["reference_units"]) == want == (3, 3, 6)
    assert len(m.pairs) == 1


# --- item 18: a dict given as a reference ----------------------------------------------------

@pytest.mark.parametrize("references", [
    [{"text": "the cat", "source": "wiki"}],  # a dict as one example's references
    [["the cat", {"text": "the cat"}]],  # a dict inside a list of references
    {"a": ["the cat"]},  # a dict as the whole references
    [5],  # a number
])
@pytest.mark.parametrize("fn", [api.score_texts, api.score_corpus])
def test_dicts_and_numbers_as_references_are_refused(fn, references):
    with pytest.raises(TypeError, match=r"references"):
        fn(["the cat"], references, metrics=["rouge1"])


def test_explain_refuses_a_dict_as_references():
    with pytest.raises(TypeError, match="references"):
        api.explain("the cat", {"text": "the cat"})
    with pytest.raises(TypeError, match="references"):
        api.explain("the cat", ["the cat", {"text": "the cat"}])


@pytest.mark.parametrize("predictions", [{"a": "the cat"}, [5], [["the cat"]], b"the cat"])
def test_predictions_other_than_texts_are_refused(predictions):
    with pytest.raises(TypeError, match="predictions"):
        api.score_texts(predictions, [["the cat"]], metrics=["rouge1"])


# --- item 23: explain(5, ...) and explain([...], ...) ---------------------------------------

@pytest.mark.parametrize("prediction", [5, ["the cat"], {"p": "the cat"}, b"the cat"])
def test_explain_refuses_a_prediction_that_is_not_a_text(prediction):
    with pytest.raises(TypeError, match=r"prediction must be a str.*got "):
        api.explain(prediction, ["the cat"])


def test_the_refusals_keep_what_is_right():
    # one text per item is one reference; None is an empty prediction (documented)
    frame = api.score_texts(("the cat", None), ["the cat", ("a", "the cat")],
                            metrics=["rouge1"])
    assert frame["rouge1_fmeasure"].tolist() == [1.0, 0.0]
    assert frame["n_references"].tolist() == [1, 2]
    e = api.explain("", ("the cat",), metrics=["rouge1"])
    assert e.references == ["the cat"] and e.metrics["rouge1"].measures["fmeasure"] == 0.0


# --- item 24: ids that overflow or mix types ------------------------------------------------

@pytest.mark.parametrize(("ids", "fragment"), [
    ([2**70, 1], "int64"), ([1, "x"], "mixed"), ([1.5, 2.5], "float"),
    ([True, False], "bool"), ([-2**63 - 1, 0], "int64"),
])
def test_ids_that_overflow_or_mix_types_are_an_input_error(ids, fragment):
    with pytest.raises(InputError, match=fragment):
        api.score_corpus(["a b", "c d"], ["a b", "c"], ids=ids, metrics=["rouge1"],
                         n_bootstrap=10)


def test_integer_and_string_ids_still_key_the_bootstrap():
    a = api.score_corpus(["a b", "c d", "e"], ["a b", "c", "e f"], ids=[2**62, 7, -3],
                         metrics=["rouge1"], n_bootstrap=50)
    b = api.score_corpus(["a b", "c d", "e"], ["a b", "c", "e f"], ids=["x", "y", "z"],
                         metrics=["rouge1"], n_bootstrap=50)
    assert a["rouge1"].score.value == b["rouge1"].score.value


# --- item 5 (from Python): n_bootstrap beyond memory ----------------------------------------

def test_score_corpus_refuses_resamples_no_machine_holds_before_any_work():
    with pytest.raises(ConfigError, match=r"bootstrap: 1,000,000,000,000 resamples need .*"
                                          r"memory.*at most"):
        api.score_corpus(["a b"], ["a b"], metrics=["rouge1"], n_bootstrap=10**12)


def test_score_corpus_refuses_resamples_beyond_the_maximum_and_the_work_limit():
    from pipeline.config import MAX_BOOTSTRAP, MAX_BOOTSTRAP_WORK, ScoreConfig

    with pytest.raises(ConfigError, match=r"bootstrap: 100,001 resamples is more than the "
                                          r"maximum of 100,000"):
        api.score_corpus(["a b"], ["a b"], metrics=["rouge1"], n_bootstrap=MAX_BOOTSTRAP + 1)
    # rows x resamples: 10^10 is the documented limit (docs/failures.md)
    assert MAX_BOOTSTRAP_WORK == 10**10
    ScoreConfig(bootstrap=5_000).check_bootstrap_work(2_000_000)  # 10^10 exactly
    with pytest.raises(ConfigError, match=r"5,001 resamples over 2,000,000 examples are "
                                          r"1e10 weighted draws, more than the limit of 1e10 "
                                          r".*at most 5,000 resamples"):
        ScoreConfig(bootstrap=5_001).check_bootstrap_work(2_000_000)
    with pytest.raises(ConfigError, match=r"at most 1,000 resamples"):
        ScoreConfig(bootstrap=2_000).check_bootstrap_work(10**8)
    ScoreConfig(bootstrap=1_000).check_bootstrap_work(10**9)  # the default at any size
    ScoreConfig(bootstrap=0).check_bootstrap_work(10**12)


def test_compare_refuses_resamples_no_machine_holds():
    from pipeline.compare.statistics import check_settings

    with pytest.raises(ConfigError, match="n_bootstrap: 10,000,000,000 resamples"):
        check_settings(n_bootstrap=10**10, confidence=0.95)
    check_settings(n_bootstrap=10_000, confidence=0.95)


# --- item 30: what an explanation prints ------------------------------------------------------

def test_an_explanation_prints_as_the_cli_and_has_a_short_repr():
    e = pipeline.explain("the cat sat on the mat " * 200, ["the cat sat", "a dog " * 300],
                         metrics=["rouge1", "rougeL", "bleu"])
    assert str(e) == format_explanation(e)
    assert str(e).startswith("settings: ") and "\nrouge1: " in str(e)
    short = repr(e)
    assert len(short) < 200, short
    assert short.startswith("Explanation(") and "rouge1" in short and "2 references" in short


def test_the_scorer_itself_refuses_dicts_and_non_texts():
    # the one check under score_texts, score_corpus and Scorer.score_batch
    scorer = pipeline.Scorer(metrics=("rouge1",))
    with pytest.raises(TypeError, match=r"references\[0\] must be a reference text"):
        scorer.score_batch(["the cat"], [{"the cat": 1}])
    with pytest.raises(TypeError, match=r"predictions\[1\] must be a str"):
        scorer.score_batch(["the cat", 3], [["the cat"], ["a"]])
    with pytest.raises(TypeError, match="references must be a list"):
        scorer.score_batch(["the cat"], {"a": ["the cat"]})
    assert scorer.score_batch(["the cat"], [None]).table["n_references"].to_pylist() == [0]
