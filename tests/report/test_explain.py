"""`pipeline.explain`: its counts equal the scorer's statistics; hand-checked examples; CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import Scorer, explain
from pipeline.cli import main

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


def assert_equals_the_scorer(prediction, references, metrics, config):
    """Every measure, statistic and reference index of the explanation is the scorer's."""
    from pipeline.metrics import registry

    scorer = Scorer(metrics=metrics, **config)
    row = scorer.score_batch([prediction], [references]).table.to_pylist()[0]
    e = explain(prediction, references, metrics=metrics, **config)
    assert list(e.metrics) == list(metrics)
    for spec in registry.specs(metrics, config):
        got = e.metrics[spec.name]
        assert got.family == spec.family or spec.family == "rouge"
        assert list(got.statistics) == [s for s, _ in spec.statistics], spec.name
        for s in got.statistics:
            assert got.statistics[s] == row[f"{spec.name}_{s}"], (spec.name, s)
        assert list(got.measures) == list(spec.measures), spec.name
        for x in spec.measures:
            assert got.measures[x] == row[f"{spec.name}_{x}"], (spec.name, x)
        if spec.has_reference_index:
            assert got.reference_index == row[f"{spec.name}_reference_index"], spec.name
        else:
            assert got.reference_index == -1
        for pair in got.pairs:  # the units listed add up to the pair's matches
            d = pair.detail
            if "ngrams" in d:
                assert sum(g["matches"] for g in d["ngrams"]) == pair.statistics["matches"]
            if "alignment" in d:
                assert len(d["alignment"]) == pair.statistics["matches"]
            if "sentences" in d and spec.name != "rougeWsum":
                assert sum(len(s["hits"]) for s in d["sentences"]) == pair.statistics["matches"]
            if "sentences" in d and spec.name == "rougeWsum":
                assert sum(r["weight"] for s in d["sentences"] for r in s["runs"]) \
                    == pytest.approx(pair.statistics["matches"])
            if "skip_bigrams" in d:
                assert sum(g["matches"] for g in d["skip_bigrams"]) + sum(
                    g["matches"] for g in d.get("unigrams", [])) == pair.statistics["matches"]
            if "orders" in d:  # chrF: per order, as the statistics name them
                for o in d["orders"]:
                    kind, n = o["order"].split()
                    assert sum(g["matches"] for g in o["ngrams"]) \
                        == pair.statistics[f"{kind}_{n}_matches"]
            if "shared" in d:
                assert sum(g["matches"] for g in d["shared"]) == pair.statistics["matches"]
    return e


@pytest.mark.filterwarnings("ignore::UserWarning")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prediction=text, references=st.lists(text, min_size=1, max_size=3), config=settings_)
def test_explanation_counts_equal_the_scorer_statistics(prediction, references, config):
    assert_equals_the_scorer(prediction, references, METRICS, config)


ROUGE155_METRICS = ("rouge1", "rouge2", "rougeLsum", "rougeWsum", "rougeS4", "rougeSU4",
                    "rougeS", "rougeSU", "rougeS0")
rouge155_settings = st.fixed_dictionaries({
    "tokenizer": st.just("rouge155"),
    "stemmer": st.sampled_from(["none", "porter-rouge155"]),
    "stopwords": st.sampled_from(["none", "smart"]),
    "multi_reference": st.sampled_from(["pooled", "best-recall", "max", "mean"]),
    "wlcs_weight": st.sampled_from([1.2, 1.0, 2.5]),
    "alpha": st.sampled_from([0.5, 0.2]),
    "limits": st.sampled_from([(0, 0), (6, 0), (0, 17)]),
}).map(lambda d: {**{k: v for k, v in d.items() if k != "limits"},
                  "limit_words": d["limits"][0], "limit_bytes": d["limits"][1]})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prediction=text, references=st.lists(text, min_size=1, max_size=3),
       config=rouge155_settings)
def test_rouge155_explanation_equals_the_scorer(prediction, references, config):
    assert_equals_the_scorer(prediction, references, ROUGE155_METRICS, config)


mt_text = st.lists(st.sampled_from(WORDS + [".", ",", "!", "-", "&amp;", "don't", "猫", "é"]),
                   max_size=20).map(" ".join)
bleu_settings = st.fixed_dictionaries({
    "bleu_tokenize": st.sampled_from(["13a", "intl", "zh", "char", "none"]),
    "bleu_smooth": st.sampled_from(["exp", "floor", "add-k", "none"]),
    "bleu_lowercase": st.booleans(),
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prediction=mt_text, references=st.lists(mt_text, min_size=1, max_size=3),
       config=bleu_settings)
def test_bleu_explanation_equals_the_scorer_and_sacrebleu(prediction, references, config):
    from sacrebleu.metrics import BLEU

    e = assert_equals_the_scorer(prediction, references, ("bleu",), config)
    metric = BLEU(tokenize=config["bleu_tokenize"], smooth_method=config["bleu_smooth"],
                  lowercase=config["bleu_lowercase"], effective_order=True)
    # sacrebleu's sentence statistics (its BLEUScore.counts are the smoothed ones)
    sentence = metric._extract_corpus_statistics([prediction], [[r] for r in references])[0]
    truth = metric.sentence_score(prediction, references)
    got = e.metrics["bleu"]
    assert list(got.statistics.values()) == list(sentence)
    assert got.detail["brevity_penalty"] == pytest.approx(truth.bp)
    assert [o["precision"] for o in got.detail["orders"]] == pytest.approx(truth.precisions)
    assert got.measures["score"] == pytest.approx(truth.score, abs=1e-9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prediction=mt_text, references=st.lists(st.one_of(mt_text, st.none()), min_size=1,
                                               max_size=3))
def test_chrf_and_squad_explanations_equal_the_scorer(prediction, references):
    assert_equals_the_scorer(prediction, references,
                             ("chrf", "chrfpp", "token_f1", "exact_match"), {})


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

    from pipeline.metrics.rouge.explain import lcs_pairs

    got = lcs_pairs(ref, can)
    assert got == _rouge_score_walk(ref, can)
    assert [r for r, _ in got] == _backtrack_norec(_lcs_table(ref, can), ref, can)


@settings(max_examples=100, deadline=None)
@given(ref=st.lists(tokens(30), min_size=1, max_size=4), pred=st.lists(tokens(30), max_size=4))
def test_the_compiled_union_walk_is_rouge_scores(ref, pred):
    from pipeline.metrics.rouge.explain import union_pairs

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
    assert union_pairs(flat_ref, bounds(ref), flat_pred, bounds(pred)) == want


def test_hand_checked_example():
    # rouge-score's README example: "The quick brown fox jumps over the lazy dog" vs
    # "The quick brown dog jumps on the log.": rouge1 P = R = 6/8? by hand:
    # prediction tokens: the quick brown dog jumps on the log (8)
    # reference tokens:  the quick brown fox jumps over the lazy dog (9)
    # unigrams in both, clipped: the x2, quick, brown, dog, jumps -> 6
    e = explain("The quick brown dog jumps on the log.",
                ["The quick brown fox jumps over the lazy dog"], metrics=("rouge1", "rougeL"))
    r1 = e.metrics["rouge1"]
    assert r1.statistics == {"matches": 6, "prediction_units": 8, "reference_units": 9}
    grams = {" ".join(g["ngram"]): g["matches"] for g in r1.pairs[0].detail["ngrams"]}
    assert grams == {"the": 2, "quick": 1, "brown": 1, "dog": 1, "jumps": 1}
    # LCS: the quick brown jumps the (5): pairs (pred, ref) by hand
    assert e.metrics["rougeL"].pairs[0].detail["alignment"] == [[0, 0], [1, 1], [2, 2],
                                                                [4, 4], [6, 6]]
    assert e.metrics["rougeL"].measures["fmeasure"] == pytest.approx(
        2 * (5 / 8) * (5 / 9) / (5 / 8 + 5 / 9))


def test_rougelsum_union_hits_per_sentence():
    # Lin 2004 §3.2's example: r = w1 w2 w3 w4 w5; c1 = w1 w2 w6 w7 w8, c2 = w1 w3 w8 w9 w5:
    # LCS(r, c1) = w1 w2, LCS(r, c2) = w1 w3 w5; union = w1 w2 w3 w5: 4 hits.
    e = explain("w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", ["w1 w2 w3 w4 w5"], metrics=("rougeLsum",))
    pair = e.metrics["rougeLsum"].pairs[0]
    assert pair.detail["sentences"] == [{"sentence": 0, "start": 0, "end": 5,
                                         "union": [0, 1, 2, 4], "hits": [0, 1, 2, 4]}]
    assert pair.statistics["matches"] == 4


def test_multi_reference_winner_and_pooled():
    e = explain("the cat sat", ["a dog ran", "the cat sat down"], metrics=("rouge1",))
    assert e.metrics["rouge1"].reference_index == 1
    e = explain("the cat sat", ["a dog ran", "the cat sat down"], metrics=("rouge1",),
                multi_reference="pooled")
    assert e.metrics["rouge1"].reference_index == -1
    assert e.metrics["rouge1"].statistics["matches"] == 3
    assert e.metrics["rouge1"].statistics["reference_units"] == 7


def test_token_spans_point_at_the_words():
    e = explain("The Cat, sat.", ["cat"], metrics=("rouge1",), stemmer="porter")
    m = e.metrics["rouge1"]
    assert [m.prediction.text[a:b] for a, b in m.prediction.spans] == ["The", "Cat", "sat"]
    assert m.pairs[0].prediction_positions == [1]


def overlap(*args) -> object:
    return CliRunner().invoke(main, ["explain", *map(str, args)], catch_exceptions=False)


def test_cli_explain_text_and_json():
    result = overlap("--prediction", "the cat sat on the mat", "--reference", "a cat sat",
                     "--reference", "the cat was on the mat", "--metrics", "rouge1,rougeL")
    assert result.exit_code == 0, result.output
    assert "rouge1: P" in result.output and "reference 1 won" in result.output
    doc = json.loads(overlap("--prediction", "the cat sat", "--reference", "the cat",
                             "--format", "json").output)
    assert set(doc) == {"settings", "prediction", "references", "tokens", "metrics"}
    assert doc["tokens"]["rouge"]["prediction"]["tokens"] == ["the", "cat", "sat"]
    assert doc["metrics"]["rouge1"]["statistics"]["matches"] == 2
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


# --- a run's example is explained with exactly the run's metrics and settings -------------

def _run(root, *flags: str):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "prediction": ["The cat sat on the mat.\nIt was happy, it said.",
                       "a dog ran home"],
        "references": [["The cat was sitting on the mat.\nIt looked happy.",
                        "A cat sat on a mat"], ["the dog ran to its home"]]}),
        root / "p.parquet")
    result = CliRunner().invoke(main, ["score", str(root / "p.parquet"), "--output",
                                       str(root / "run"), "--engine", "local",
                                       "--bootstrap", "0", *flags])
    assert result.exit_code == 0, result.output
    return root / "run"


def _explained_equals_the_run(run, metrics):
    import pyarrow.parquet as pq

    row = pq.read_table(run / "examples").to_pandas().set_index("id").loc[1]
    result = overlap(run, "--id", "1", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert list(doc["metrics"]) == list(metrics)
    for metric, m in doc["metrics"].items():
        for key, value in {**m["statistics"], **m["measures"]}.items():
            assert value == row[f"{metric}_{key}"], (metric, key)
    return doc


def test_a_bleu_run_is_explained_as_bleu(tmp_path):
    # before: the ROUGE default metrics were explained for a run that never computed them
    run = _run(tmp_path, "--metrics", "bleu,chrfpp,token_f1", "--bleu-tokenize", "intl")
    doc = _explained_equals_the_run(run, ("bleu", "chrfpp", "token_f1"))
    assert doc["settings"]["bleu_tokenize"] == "intl"
    text = overlap(run, "--id", "1").output
    assert "bleu: score" in text and "brevity penalty" in text and "rouge" not in text


def test_a_rouge155_run_is_explained(tmp_path):
    # before: "unknown tokenizer 'rouge155'", exit 2
    run = _run(tmp_path, "--rouge155", "-n 2 -w 1.2 -2 4 -U -m -f B")
    doc = _explained_equals_the_run(run, ("rouge1", "rouge2", "rougeLsum", "rougeWsum",
                                          "rougeS4", "rougeSU4"))
    assert doc["settings"]["tokenizer"] == "rouge155"
    assert doc["settings"]["multi_reference"] == "best-recall"


def test_bleu_against_sacrebleus_breakdown_by_hand():
    # sacrebleu 2.x: BLEU(effective_order=True).sentence_score(
    #   "the cat sat on the mat", ["the cat is on the mat"]): counts [5, 3, 1, 0],
    #   totals [6, 5, 4, 3], bp 1.0, sys_len 6, ref_len 6; smoothing exp: the 4-gram
    #   precision 100 / (2 * 3)
    e = explain("the cat sat on the mat", ["the cat is on the mat"], metrics=("bleu",))
    m = e.metrics["bleu"]
    assert [m.statistics[f"matches_{n}"] for n in range(1, 5)] == [5, 3, 1, 0]
    assert [o["precision"] for o in m.detail["orders"]] == pytest.approx(
        [500 / 6, 60.0, 25.0, 100 / 6])
    unigrams = {g["ngram"][0]: g["matches"] for g in m.detail["orders"][0]["ngrams"]}
    assert unigrams == {"the": 2, "cat": 1, "on": 1, "mat": 1}


def test_squad_shared_multiset_by_hand():
    # SQuAD v1.1: "The Cat sat, the cat!" -> [cat, sat, cat]; "a cat" -> [cat]: shared {cat: 1}
    e = explain("The Cat sat, the cat!", ["a cat", "cat sat cat"],
                metrics=("token_f1", "exact_match"))
    f1 = e.metrics["token_f1"]
    assert f1.prediction.tokens == ["cat", "sat", "cat"]
    assert f1.pairs[0].detail["shared"] == [{"token": "cat", "prediction_count": 2,
                                             "reference_count": 1, "matches": 1}]
    assert f1.reference_index == 1 and f1.measures["fmeasure"] == 1.0
    assert e.metrics["exact_match"].measures["score"] == 1.0
    spans = f1.prediction.spans
    assert [f1.prediction.text[a:b] for a, b in spans] == ["Cat", "sat", "cat"]


def test_rouge155_skip_bigrams_by_hand():
    # Lin 2004 §5: "police killed the gunman" vs "police kill the gunman": skip bigrams of
    # the prediction: 6, shared: (police, the), (police, gunman), (the, gunman) = 3
    e = explain("police kill the gunman", ["police killed the gunman"],
                metrics=("rougeS",), rouge155="-2 -1 -x")
    m = e.metrics["rougeS"]
    assert m.statistics == {"matches": 3, "prediction_units": 6, "reference_units": 6}
    assert sorted(tuple(g["ngram"]) for g in m.pairs[0].detail["skip_bigrams"]) == [
        ("police", "gunman"), ("police", "the"), ("the", "gunman")]


@pytest.mark.slow
def test_the_examples_of_docs_explain_are_what_the_code_prints():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "scripts/explain_examples.py", "--check"],
                            cwd=root, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, ("docs/explain.md is stale: run "
                                    "scripts/explain_examples.py", result.stderr)
