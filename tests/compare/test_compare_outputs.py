"""compare's outputs never replace a file it did not write (issue 18: as hard as score)."""

from __future__ import annotations

import json

import pytest

from tests.support.hostile_runs import invoke, one_line_error, scored_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return scored_runs(tmp_path_factory.mktemp("compare-outputs"))


def test_plot_refuses_to_replace_a_users_html_file(runs, tmp_path):
    page = tmp_path / "mypage.html"
    page.write_text("<html>my page</html>\n")
    result = invoke("compare", runs["a"], runs["b"], "--plot", page)
    assert result.exit_code == 3, result.output
    assert "mypage.html exists and is not a plot" in one_line_error(result)
    assert page.read_text() == "<html>my page</html>\n"


def test_plot_replaces_a_plot_it_drew(runs, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "delta.png"
    assert invoke("compare", runs["a"], runs["b"], "--plot", png).exit_code == 0
    first = png.read_bytes()
    assert first.startswith(b"\x89PNG\r\n\x1a\n") and b"overlap-pipeline" in first
    again = invoke("compare", runs["a"], runs["b"], "--plot", png)
    assert again.exit_code == 0 and "wrote" in again.output


def test_output_refuses_to_replace_a_compare_json_it_did_not_write(runs, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "compare.json").write_text('{"my": "notes"}\n')
    (out / "keep.txt").write_text("keep\n")
    result = invoke("compare", runs["a"], runs["b"], "--output", out)
    assert result.exit_code == 3, result.output
    assert "compare.json exists and was not written by overlap compare" \
        in one_line_error(result)
    assert sorted(p.name for p in out.iterdir()) == ["compare.json", "keep.txt"]
    assert json.loads((out / "compare.json").read_text()) == {"my": "notes"}


def test_output_that_is_a_file_is_refused(runs, tmp_path):
    out = tmp_path / "notes.txt"
    out.write_text("mine\n")
    result = invoke("compare", runs["a"], runs["b"], "--output", out)
    assert result.exit_code == 3 and "not a directory" in one_line_error(result)
    assert out.read_text() == "mine\n"


def test_output_replaces_its_own_comparison(runs, tmp_path):
    out = tmp_path / "cmp"
    assert invoke("compare", runs["a"], runs["b"], "--output", out).exit_code == 0
    again = invoke("compare", runs["b"], runs["a"], "--output", out)
    assert again.exit_code == 0, again.output
    assert json.loads((out / "compare.json").read_text())["baseline"]["run_id"] == "run-b"
