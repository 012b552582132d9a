"""The hostile matrix of ``overlap explain`` (issue 19, part 3).

Each case ends in a documented outcome: exit 0 with an explanation whose counts equal the
scorer's statistics, or one line on stderr (``Error: ...``) with exit 2 and nothing on
stdout. No case may print a traceback, act on the terminal (control and bidirectional
characters are escaped) or grow without bound in memory.
"""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from pipeline import Scorer, explain
from pipeline.cli import main

HOSTILE = "the \u202ecat\u202c sat \x1b[31mred\x1b[0m \x85on\u2066 the mat"


def overlap(*args: str) -> Result:
    return CliRunner().invoke(main, ["explain", *args])


def assert_usage_error(result: Result, *fragments: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert result.stdout == ""
    return lines[0]


def assert_inert(text: str) -> None:
    """No control or bidirectional-format character reaches the terminal."""
    assert not any(ch in text for ch in "\u202e\u202c\u2066\x1b\x85"), text


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run with int64 ids 1..3 and a string-id run, both with kept texts."""
    root = tmp_path_factory.mktemp("explain_runs")
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                             "prediction": ["the cat sat on the mat", HOSTILE, "x"],
                             "references": [["the cat was on the mat"],
                                            ["the cat sat on the mat"], ["y"]]}),
                   root / "p.parquet")
    result = CliRunner().invoke(main, ["score", str(root / "p.parquet"), "--output",
                                       str(root / "run"), "--engine", "local",
                                       "--bootstrap", "0", "--keep-text"])
    assert result.exit_code == 0, result.output
    return root / "run"


# --- ids ----------------------------------------------------------------------------------

@pytest.mark.parametrize("example_id", ["99999999999999999999999", "-99999999999999999999999",
                                        "9223372036854775808"])
def test_an_integer_id_outside_the_id_type_is_not_in_the_run(run, example_id):
    # before: OverflowError traceback, exit 1
    assert_usage_error(overlap(str(run), "--id", example_id), f"no example with id "
                       f"{example_id}", "int64")


@pytest.mark.parametrize("example_id, fragment", [
    ("9223372036854775807", "no example with id"),
    ("4", "no example with id"),
    ("x", "ids are integers"),
    ("1.5", "ids are integers"),
    ("\u202e1", "ids are integers"),
])
def test_ids_the_run_does_not_have(run, example_id, fragment):
    line = assert_usage_error(overlap(str(run), "--id", example_id), fragment)
    assert_inert(line)


def test_an_id_in_the_run_is_explained(run):
    result = overlap(str(run), "--id", "1", "--metrics", "rouge1")
    assert result.exit_code == 0, result.output
    assert "rouge1: P 0.8333  R 0.8333" in result.output  # 5 of 6 unigrams, by hand


# --- usage ------------------------------------------------------------------------------

@pytest.mark.parametrize("args, fragment", [
    (["--reference", "the cat"], "explain needs a prediction"),  # before: exit 0, empty
    (["--prediction", "the cat"], "at least one reference"),
    ([], "explain needs a prediction"),
    (["--id", "1"], "explain needs a prediction"),
    (["--prediction", "x", "--reference", "y", "--metrics", "rouge0"], "rouge0"),
])
def test_usage_errors_are_one_line(args, fragment):
    assert_usage_error(overlap(*args), fragment)


def test_a_run_with_texts_or_without_an_id_is_a_usage_error(run):
    assert_usage_error(overlap(str(run), "--prediction", "x", "--id", "1"), "either texts")
    assert_usage_error(overlap(str(run)), "either texts")


def test_a_path_that_is_not_a_run_is_one_line(tmp_path):
    result = overlap(str(tmp_path / "nothing"), "--id", "1")
    assert result.exit_code in (2, 3) and len(result.stderr.splitlines()) == 1, result.output


def test_an_empty_prediction_is_explained_when_asked_for():
    result = overlap("--prediction", "", "--reference", "the cat", "--metrics", "rouge1")
    assert result.exit_code == 0, result.output
    assert "prediction: 0 tokens" in result.output
    assert "matches 0 / prediction 0 / reference 2" in result.output


# --- what reaches the terminal ----------------------------------------------------------

@pytest.mark.parametrize("source", ["texts", "run"])
def test_json_escapes_control_and_bidi_characters_and_decodes_to_the_text(run, source):
    # before: a raw U+202E (and C1 NEL, U+2066) in the document
    args = (["--prediction", HOSTILE, "--reference", "the cat sat on the mat"]
            if source == "texts" else [str(run), "--id", "2"])
    result = overlap(*args, "--tokenizer", "whitespace", "--format", "json")
    assert result.exit_code == 0, result.output
    assert_inert(result.stdout)
    assert "\\u202e" in result.stdout and "\\u001b" in result.stdout
    doc = json.loads(result.stdout)
    assert doc["prediction"] == HOSTILE
    assert "\u202ecat\u202c" in doc["tokens"]["rouge"]["prediction"]["tokens"]


def test_text_output_escapes_control_and_bidi_characters():
    result = overlap("--prediction", HOSTILE, "--reference", HOSTILE, "--tokenizer",
                     "whitespace", "--metrics", "rouge1,rougeL")
    assert result.exit_code == 0, result.output
    assert_inert(result.stdout)
    assert "\\u202ecat\\u202c x1" in result.stdout


# --- long texts: bounded memory, counts equal the scorer's -----------------------------

def _statistics_equal(prediction: str, references: list[str], metrics: tuple[str, ...]
                      ) -> None:
    row = Scorer(metrics=metrics).score_batch([prediction], [references]).table.to_pylist()[0]
    e = explain(prediction, references, metrics=metrics)
    for m in metrics:
        for s in ("matches", "prediction_units", "reference_units"):
            assert e.metrics[m].statistics[s] == row[f"{m}_{s}"], (m, s)
        pair = e.metrics[m].pairs[0]
        if "alignment" in pair.detail:
            assert len(pair.detail["alignment"]) == pair.statistics["matches"]
        if "sentences" in pair.detail:
            assert sum(len(s["hits"]) for s in pair.detail["sentences"]) \
                == pair.statistics["matches"]


def _text(rng: random.Random, n_tokens: int, *, line_tokens: int, vocabulary: int) -> str:
    words = [rng.choice(range(vocabulary)) for _ in range(n_tokens)]
    return "\n".join(" ".join(f"w{w}" for w in words[i:i + line_tokens])
                     for i in range(0, n_tokens, line_tokens))


@pytest.mark.parametrize("line_tokens", [6000, 1], ids=["one line", "one-word lines"])
def test_a_long_pair_is_explained_in_bounded_memory(line_tokens):
    # before: the LCS table as Python lists, (n + 1) * (m + 1) cells: 200 MB for this pair
    # (1.1 GB and 31 s for 10,000 tokens), and one Python call per pair of lines
    rng = random.Random(7)
    n = 6000 if line_tokens > 1 else 1500
    prediction = _text(rng, n, line_tokens=line_tokens, vocabulary=300)
    reference = _text(rng, n, line_tokens=line_tokens, vocabulary=300)
    metrics = ("rouge1", "rougeL", "rougeLsum")
    explain("a b\nc", ["a c"], metrics=metrics)  # load the kernels outside the measure
    tracemalloc.start()
    try:
        e = explain(prediction, [reference], metrics=metrics)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * 2**20, peak
    assert e.metrics["rougeL"].statistics["matches"] > 0
    _statistics_equal(prediction, [reference], metrics)


def test_the_explanation_of_many_lines_equals_the_scorer():
    rng = random.Random(11)
    prediction = _text(rng, 900, line_tokens=3, vocabulary=40)
    references = [_text(rng, 700, line_tokens=5, vocabulary=40),
                  _text(rng, 300, line_tokens=70, vocabulary=40)]
    _statistics_equal(prediction, references, ("rouge2", "rougeL", "rougeLsum"))
