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
