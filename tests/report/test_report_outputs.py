"""report --output in a directory that does not exist (issue 18: as hard as score)."""

from __future__ import annotations

import pytest

from tests.support.hostile_runs import invoke, one_line_error, scored_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return scored_runs(tmp_path_factory.mktemp("report-outputs"))


def test_a_missing_output_directory_is_bad_usage(runs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("report", runs["a"], "--output", "nodir/x.html")
    assert result.exit_code == 2, result.output
    assert "directory nodir does not exist" in one_line_error(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_output_directory_that_is_a_file_is_bad_usage(runs, tmp_path):
    (tmp_path / "afile").write_text("mine\n")
    result = invoke("report", runs["a"], "--output", tmp_path / "afile" / "x.html")
    assert result.exit_code == 2, result.output
    assert "is not a directory" in one_line_error(result)
    assert (tmp_path / "afile").read_text() == "mine\n"


def test_the_report_notes_a_null_prediction_in_the_singular(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline import api
    from pipeline.config import ScoreConfig

    preds = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "prediction": ["the cat sat", None],
                             "references": [["the cat sat"], ["a dog"]]}), preds)
    api.score(str(preds), output=str(tmp_path / "run"),
              config=ScoreConfig(engine="local", bootstrap=0))
    result = invoke("report", tmp_path / "run", "--output", tmp_path / "r.html")
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r.html").read_text()
    assert "1 prediction was null (scored as empty)" in page
    assert "1 predictions" not in page
