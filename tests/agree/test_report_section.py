"""The report's agreement section, from an agreement.json of a small table."""

from __future__ import annotations

import json

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
