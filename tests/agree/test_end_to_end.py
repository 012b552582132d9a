"""Our own pipeline end to end on the SummEval examples (first reference only, ROUGE-1.5.5
flags "-n 4 -2 4 -U -m"), through `overlap score` and `overlap agree`: sacrerouge's published
table within 0.04 (../shared/data/human/README.md: measured at most 0.0333, one system-level
Kendall cell, since about 3% of the texts were preprocessed differently upstream)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from tests.agree.test_summeval_table import COEFFICIENTS, PUBLISHED

pytestmark = pytest.mark.slow


def test_published_table_within_004_through_our_pipeline(tmp_path, human_dir):
    examples = pd.read_parquet(human_dir.parent / "summeval_multiref11" / "examples.parquet")
    examples[["id", "system", "prediction"]].to_parquet(tmp_path / "predictions.parquet")
    pd.DataFrame({"id": examples["id"], "reference": [r[0] for r in examples["references"]]}
                 ).to_parquet(tmp_path / "references.parquet")
    runner = CliRunner()
    r = runner.invoke(main, ["score", str(tmp_path / "predictions.parquet"), "--references",
                             str(tmp_path / "references.parquet"), "--rouge155",
                             "-n 4 -2 4 -U -m", "--output", str(tmp_path / "run"),
                             "--engine", "local"])
    assert r.exit_code == 0, r.output
    names = {m: m.replace("_f1", ".fmeasure").replace("_", ".") for m in PUBLISHED}
    r = runner.invoke(main, ["agree", str(tmp_path / "run"), "--judgments",
                             str(human_dir / "summeval_ratings.parquet"), "--human",
                             "expert_relevance", "--metrics", ",".join(names.values()),
                             "--levels", "system,input", "--coefficients",
                             ",".join(COEFFICIENTS), "--n-resamples", "0",
                             "--n-permutations", "0", "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = {(x["measure"], x["level"], x["coefficient"]): x["value"]
            for x in json.loads(r.stdout)["rows"] if x["kind"] == "metric"}
    worst = 0.0
    for measure, levels in PUBLISHED.items():
        for level, values in levels.items():
            for name, expected in zip(COEFFICIENTS, values, strict=True):
                worst = max(worst, abs(rows[(names[measure], level, name)] - expected))
    assert worst <= 0.04, worst
