"""Every family end to end: one `overlap score` over a small Parquet, values from outside.

BLEU and chrF against sacrebleu 2.x (``sentence_bleu``, ``sentence_chrf``), token F1 and
exact match against the official SQuAD v1.1 definition worked by hand, ROUGE against
rouge-score; all in one run (one read of the data).
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main

sacrebleu = pytest.importorskip("sacrebleu")
rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")

ROWS = [
    # id, prediction, references
    ("a", "The cat sat on the mat.", ["The cat sat on the mat.", "A cat was on a mat."]),
    ("b", "the Eiffel Tower", ["Eiffel Tower", "The Eiffel tower in Paris"]),
    ("c", "a dog barked loudly at night", ["The dog barked at night."]),
    ("d", "", ["Nothing here"]),
]
# SQuAD v1.1 by hand: normalize = lower, drop punctuation, drop a/an/the, split on spaces.
# a: "cat sat on mat" vs "cat sat on mat": F1 1, EM 1.
# b: "eiffel tower" vs "eiffel tower": F1 1, EM 1 (first reference).
# c: "dog barked loudly at night" (5) vs "dog barked at night" (4): 4 shared,
#    P 4/5, R 4/4, F1 = 2*0.8*1/1.8; EM 0.
# d: empty prediction: F1 0, EM 0.
TOKEN_F1 = {"a": 1.0, "b": 1.0, "c": 2 * 0.8 * 1.0 / 1.8, "d": 0.0}
EXACT = {"a": 1.0, "b": 1.0, "c": 0.0, "d": 0.0}
METRICS = "rouge1,bleu,chrf,token_f1,exact_match"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    table = pa.table({"id": [r[0] for r in ROWS], "prediction": [r[1] for r in ROWS],
                      "references": [r[2] for r in ROWS]})
    pq.write_table(table, root / "preds.parquet")
    result = CliRunner().invoke(main, [
        "score", str(root / "preds.parquet"), "--output", str(root / "run"), "--engine",
        "local", "--bootstrap", "0", "--metrics", METRICS,
        "--threshold", "bleu.score=30", "--threshold", "token_f1.fmeasure=0.5",
        "--threshold", "exact_match.score=1"])
    assert result.exit_code == 0, result.output
    examples = pq.read_table(root / "run" / "examples").to_pylist()
    manifest = json.loads((root / "run" / "manifest.json").read_text())
    return {r["id"]: r for r in examples}, manifest, result.output


def test_bleu_and_chrf_equal_sacrebleu(run):
    examples, _, _ = run
    for i, pred, refs in ROWS:
        assert examples[i]["bleu_score"] == pytest.approx(
            sacrebleu.sentence_bleu(pred, refs).score, abs=1e-9)
        assert examples[i]["chrf_score"] == pytest.approx(
            sacrebleu.sentence_chrf(pred, refs).score, abs=1e-9)


def test_token_f1_and_exact_match_equal_squad_by_hand(run):
    examples, _, _ = run
    for i, _, _ in ROWS:
        assert examples[i]["token_f1_fmeasure"] == pytest.approx(TOKEN_F1[i], abs=1e-12)
        assert examples[i]["exact_match_score"] == EXACT[i]


def test_rouge_in_the_same_run_equals_rouge_score(run):
    examples, _, _ = run
    scorer = rouge_scorer.RougeScorer(["rouge1"])
    for i, pred, refs in ROWS:
        want = scorer.score_multi(refs, pred)["rouge1"]
        assert examples[i]["rouge1_fmeasure"] == want.fmeasure


def test_thresholds_gate_any_measure(run):
    examples, _, _ = run
    for i, _, _ in ROWS:
        assert examples[i]["passed_bleu_score"] == (examples[i]["bleu_score"] >= 30)
        assert examples[i]["passed_token_f1_fmeasure"] == (TOKEN_F1[i] >= 0.5)
        assert examples[i]["passed_exact_match_score"] == (EXACT[i] >= 1)


def test_signature_and_summary_come_from_the_registry(run):
    _, manifest, output = run
    signature = manifest["signature"]
    assert signature.startswith(f"metrics:{METRICS.replace(',', '+')}|tok:rouge-score|")
    for field in ("bleu-tok:13a", "bleu-smooth:exp"):
        assert f"|{field}|" in signature
    header = next(line for line in output.splitlines() if line.lstrip().startswith("n "))
    for name in METRICS.split(","):
        assert name in header
