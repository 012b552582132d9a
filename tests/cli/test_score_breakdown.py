"""``overlap score`` prints BLEU's breakdown as sacrebleu does, under the summary table."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from tests.support.mt_data import BUNDLED, bundled_realsumm, reference_streams

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import BLEU  # noqa: E402


def test_the_summary_has_sacrebleus_breakdown_line_and_the_file_its_columns(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(main, [
        "score", str(BUNDLED / "predictions"), "--references",
        str(BUNDLED / "references.parquet"), "--output", str(out), "--metrics", "rouge1,bleu",
        "--engine", "local", "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    preds, refs = bundled_realsumm()
    want = BLEU().corpus_score(preds, reference_streams(refs))
    line = next(x for x in result.stdout.splitlines() if x.startswith("bleu: "))
    assert f"BLEU = {want.score:.2f} " + line.removeprefix("bleu: ") == str(want)
    assert len(line) <= 100
    [row] = [r for r in pq.read_table(out / "aggregate.parquet").to_pylist()
             if r["metric"] == "bleu" and r["statistic"] == "corpus"]
    assert (row["bleu_sys_len"], row["bleu_ref_len"]) == (want.sys_len, want.ref_len)
    assert row["bleu_bp"] == pytest.approx(want.bp, rel=1e-12)


def test_the_json_and_wide_forms_carry_the_breakdown(tmp_path):
    import json

    args = ["score", str(BUNDLED / "predictions"), "--references",
            str(BUNDLED / "references.parquet"), "--metrics", "bleu", "--engine", "local",
            "--bootstrap", "0"]
    preds, refs = bundled_realsumm()
    want = BLEU().corpus_score(preds, reference_streams(refs))
    result = CliRunner().invoke(main, [*args, "--output", str(tmp_path / "j"), "--format",
                                       "json"])
    assert result.exit_code == 0, result.output
    [row] = [r for r in json.loads(result.stdout)["aggregate"] if r["statistic"] == "corpus"]
    assert [row[f"bleu_precision_{n}"] for n in range(1, 5)] == pytest.approx(want.precisions,
                                                                              rel=1e-12)
    assert (row["bleu_ratio"], row["bleu_ref_len"]) == (pytest.approx(want.ratio), want.ref_len)
    result = CliRunner().invoke(main, [*args, "--output", str(tmp_path / "w"), "--format",
                                       "wide"])
    line = next(x for x in result.stdout.splitlines() if x.startswith("bleu: "))
    assert f"BLEU = {want.score:.2f} " + line.removeprefix("bleu: ") == str(want)
