"""The report's agreement section, from an agreement.json of a small table."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pipeline import api
from pipeline.errors import InputError
from pipeline.report.agreement import agreement_section, read_agreement
from tests.agree.test_cli_agree import M, _tables


def test_section_has_a_point_per_system_and_measure_and_every_row(tmp_path):
    _tables(tmp_path)
    result = api.agree(str(tmp_path / "scores.parquet"),
                       judgments=str(tmp_path / "judgments.parquet"), n_resamples=20,
                       n_permutations=0, output=str(tmp_path / "out"))
    doc = read_agreement(str(tmp_path / "out" / "agreement.json"))
    html = "".join(agreement_section(doc))
    assert html.count("<circle") == M * 2  # systems x measures (good, noisy)
    assert html.count("<tr") == len(result.document["rows"]) + 1
    assert "agrees best" in html


def test_a_foreign_json_is_refused(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"rows": []}))
    with pytest.raises(InputError, match="not an agreement.json"):
        read_agreement(str(tmp_path / "x.json"))


def test_overlap_report_agreement_adds_the_section(tmp_path):
    from click.testing import CliRunner

    from pipeline.cli import main
    from tests.agree.test_readme_tour import ROOT

    runner = CliRunner()
    judgments = tmp_path / "judgments.parquet"
    data = ROOT / "pipeline" / "data" / "realsumm"
    judged = pd.read_parquet(data / "litepyramid.parquet")
    judged = judged[judged["document"].isin(["0", "1", "2", "3"])]
    r = runner.invoke(main, ["score", str(data / "predictions"),
                             "--references", str(data / "references.parquet"),
                             "--metrics", "rouge1", "--output", str(tmp_path / "run"),
                             "--engine", "local"])
    assert r.exit_code == 0, r.output
    judged.to_parquet(judgments)
    r = runner.invoke(main, ["agree", str(tmp_path / "run"), "--judgments", str(judgments),
                             "--system-column", "set_system", "--n-resamples", "20",
                             "--output", str(tmp_path / "agree")])
    assert r.exit_code == 0, r.output
    page = tmp_path / "report.html"
    r = runner.invoke(main, ["report", str(tmp_path / "run"), "--agreement",
                             str(tmp_path / "agree" / "agreement.json"), "--output", str(page)])
    assert r.exit_code == 0, r.output
    html = page.read_text()
    assert "agrees best" in html and html.count("<circle") >= 25
    (tmp_path / "x.json").write_text("{}")
    r = runner.invoke(main, ["report", str(tmp_path / "run"), "--agreement",
                             str(tmp_path / "x.json"), "--output", str(page)])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
