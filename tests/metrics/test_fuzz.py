"""Fuzzing the pipeline's scoring path: arbitrary text never raises or yields NaN, and the
default tokenizer equals rouge-score 0.1.2 float for float.

Unlike test_properties.py (the scoring core), these go through the pipeline:
:func:`pipeline.api.score` with the in-process engine reads a Parquet file, joins, scores with
the run's settings (``max_tokens`` guard included) in the same task functions Ray workers run,
and writes the examples, which are read back.
"""

from __future__ import annotations

import itertools
import math
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from pipeline.api import score
from pipeline.config import ScoreConfig
from pipeline.metrics.rouge.family import MEASURES, MULTI_REFERENCE_RULES
from pipeline.tokenizers.rouge_score import TOKENIZERS

METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")
_ROUGE_SCORE = rouge_scorer.RougeScorer(list(METRICS))
_COUNTER = itertools.count()

# Tokens past 8 bytes take another path in the tokenizer (short ones are keyed by their
# bytes); these share long prefixes so that only late bytes tell them apart.
LONG_TOKENS = ["abcdefgh", "abcdefghi", "abcdefghij", "abcdefghik", "x" * 64, "x" * 65,
               "internationalization", "internationalizations", "0123456789" * 30,
               "caféteriaaaaaaa", "naïvetéééééé"]
SPACES = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000"

unicode_text = st.text(max_size=80)
whitespace_runs = st.lists(
    st.one_of(st.sampled_from(["the", "cat", "sat", "Mat", "3.5", "I"]),
              st.text(alphabet=SPACES, min_size=1, max_size=8)),
    max_size=30).map("".join)
long_tokens = st.lists(
    st.one_of(st.sampled_from(LONG_TOKENS),
              st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=9, max_size=300),
              st.sampled_from(["a", "cat", "x1"])),
    max_size=12).flatmap(lambda words: st.sampled_from([" ", "\n", ", "]).map(
        lambda sep: sep.join(words)))
repeated_words = st.builds(lambda word, n, sep: sep.join([word] * n),
                           st.sampled_from(["the", "a", "x1", "abcdefghijk", "café"]),
                           st.integers(0, 300), st.sampled_from([" ", "\n", " . ", "  \n "]))
any_text = st.one_of(unicode_text, whitespace_runs, long_tokens, repeated_words, st.just(""))


def run_task(tmp: Path, predictions: list[str | None], references: list[list[str]],
             config: ScoreConfig | None = None) -> dict[str, list]:
    """Score a small Parquet input as ``overlap score --engine local`` does; return the
    examples' columns in input order."""
    cfg = config or ScoreConfig(engine="local", bootstrap=0, metrics=METRICS)
    n = len(predictions)
    name = f"case-{next(_COUNTER):05d}"
    pq.write_table(pa.table({
        "id": [f"e{i}" for i in range(n)],
        "prediction": pa.array(predictions, pa.large_string()),
        "references": pa.array(references, pa.large_list(pa.large_string()))}),
        tmp / f"{name}.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = score(str(tmp / f"{name}.parquet"), output=str(tmp / name), config=cfg)
    assert run.n_examples == n
    files = sorted((tmp / name / "examples").glob("part-*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files]).to_pydict()


def assert_finite_scores(columns: dict[str, list], metrics: tuple[str, ...]) -> None:
    for m in metrics:
        for x in MEASURES:
            values = columns[f"{m}_{x}"]
            assert all(v is not None and math.isfinite(v) and 0.0 <= v <= 1.0 for v in values), \
                (m, x, values)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@pytest.mark.slow
@given(pairs=st.lists(st.tuples(any_text, any_text), min_size=1, max_size=5))
def test_pipeline_task_equals_rouge_score(tmp, pairs):
    columns = run_task(tmp, [p for p, _ in pairs], [[r] for _, r in pairs])
    assert_finite_scores(columns, METRICS)
    assert not any(columns["truncated"])
    for i, (prediction, reference) in enumerate(pairs):
        want = _ROUGE_SCORE.score(reference, prediction)
        for m in METRICS:
            got = tuple(columns[f"{m}_{x}"][i] for x in MEASURES)
            assert got == tuple(want[m]), (m, prediction, reference)


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(examples=st.lists(st.tuples(st.one_of(any_text, st.none()),
                                   st.lists(any_text, min_size=1, max_size=3)),
                         min_size=1, max_size=4),
       tokenizer=st.sampled_from(TOKENIZERS), case_sensitive=st.booleans(),
       stemmer=st.sampled_from(["none", "porter"]),
       rule=st.sampled_from(MULTI_REFERENCE_RULES),
       split=st.sampled_from(["newline", "punctuation"]), max_tokens=st.sampled_from([5, 100_000]))
def test_pipeline_task_never_raises_or_yields_nan(tmp, examples, tokenizer, case_sensitive,
                                                 stemmer, rule, split, max_tokens):
    cfg = ScoreConfig(engine="local", bootstrap=0,
                      metrics=("rouge1", "rouge3", "rougeL", "rougeLsum"),
                      tokenizer=tokenizer, case_sensitive=case_sensitive, stemmer=stemmer,
                      multi_reference=rule, sentence_split=split, max_tokens=max_tokens)
    columns = run_task(tmp, [p for p, _ in examples], [r for _, r in examples], cfg)
    assert_finite_scores(columns, cfg.metrics)
    for m in cfg.metrics:
        for matches, p_units, r_units in zip(columns[f"{m}_matches"],
                                             columns[f"{m}_prediction_units"],
                                             columns[f"{m}_reference_units"], strict=True):
            assert 0 <= matches and 0 <= p_units and 0 <= r_units
            if max_tokens == 5 and rule in ("max", "best-recall"):
                assert p_units <= 5 and r_units <= 5


def test_ten_thousand_repeated_words(tmp):
    """rougeL of w*10000 against w*5000 is an LCS of 5000; rouge-score itself would need a
    50M-cell Python table, so rougeL/Lsum are checked against the closed form."""
    prediction = " ".join(["word"] * 10_000)
    reference = " ".join(["word"] * 5_000)
    columns = run_task(tmp, [prediction, reference], [[reference], [prediction]])
    want = rouge_scorer.RougeScorer(["rouge1", "rouge2"]).score(reference, prediction)
    for m in ("rouge1", "rouge2"):
        assert (columns[f"{m}_precision"][0], columns[f"{m}_recall"][0],
                columns[f"{m}_fmeasure"][0]) == tuple(want[m])
    p, r = 5_000 / 10_000, 1.0
    for m in ("rougeL", "rougeLsum"):
        assert columns[f"{m}_matches"] == [5_000, 5_000]
        assert (columns[f"{m}_precision"][0], columns[f"{m}_recall"][0],
                columns[f"{m}_fmeasure"][0]) == (p, r, 2 * p * r / (p + r))
        assert (columns[f"{m}_precision"][1], columns[f"{m}_recall"][1]) == (r, p)


def test_long_tokens_equal_rouge_score(tmp):
    """Deterministic companion of the property above: tokens of 8, 9, 64, 65, 300 bytes that
    differ only in their last bytes, on one line and on several."""
    tokens = LONG_TOKENS + ["a", "cat"]
    prediction = " ".join(tokens[i % len(tokens)] for i in range(0, 200, 3))
    reference = "\n".join(" ".join(tokens[(i * 7 + j) % len(tokens)] for j in range(9))
                          for i in range(12))
    columns = run_task(tmp, [prediction, reference], [[reference], [prediction]])
    for i, (p, r) in enumerate(((prediction, reference), (reference, prediction))):
        want = _ROUGE_SCORE.score(r, p)
        for m in METRICS:
            assert tuple(columns[f"{m}_{x}"][i] for x in MEASURES) == tuple(want[m]), m
