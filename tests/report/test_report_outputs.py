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
