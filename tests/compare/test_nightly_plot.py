"""`overlap nightly`'s delta.png: drawn when matplotlib is there, warned only when asked for."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from tests.compare.test_nightly_command import _predictions, texts  # noqa: F401 - fixture

SCORE_ARGS = "--engine local --bootstrap 0 --metrics rouge1"


def _nights(tmp_path, frame, *args, env=None):
    """Two nights (the second compared with the first): their results, the second's compare
    directory."""
    tmp_path.mkdir(exist_ok=True)
    root = tmp_path / "root"
    results = []
    for t in range(2):
        preds = _predictions(tmp_path / f"p{t}.parquet", frame.head(20), seed=t)
        results.append(CliRunner().invoke(
            main, ["nightly", str(root), preds, "--run-date", f"2025-01-0{t + 1}",
                   "--run-id", f"n{t}", "--score-args", SCORE_ARGS,
                   "--compare-args", "--n-bootstrap 50", *args], env=env))
    return results, root / "compare" / "run_date=2025-01-02" / "run_id=n1"


def _two_nights(tmp_path, frame, *args):
    results, out = _nights(tmp_path, frame, *args)
    return results[-1], out / "delta.png"


def test_a_night_says_nothing_of_a_picture_nobody_asked_for_when_it_cannot_draw(
        tmp_path, texts, monkeypatch):  # noqa: F811 - the fixture
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    result, delta = _two_nights(tmp_path, texts)
    assert result.exit_code in (0, 1), result.output
    assert "not drawn" not in result.stderr, result.stderr
    assert not delta.exists()


def test_a_plot_asked_for_without_matplotlib_is_a_warning(tmp_path, texts, monkeypatch):  # noqa: F811
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result, delta = _two_nights(tmp_path, texts, "--plot")
    assert result.exit_code in (0, 1), result.output
    warned = [line for line in result.stderr.splitlines() if "plot was not drawn" in line]
    assert len(warned) == 1 and "needs matplotlib" in warned[0], result.stderr
    assert not delta.exists()


def test_with_matplotlib_the_plot_is_drawn_by_default_and_no_plot_skips_it(tmp_path, texts):  # noqa: F811
    pytest.importorskip("matplotlib")
    result, delta = _two_nights(tmp_path / "a", texts)
    assert result.exit_code in (0, 1), result.output
    assert delta.exists() and "not drawn" not in result.stderr
    result, delta = _two_nights(tmp_path / "b", texts, "--no-plot")
    assert result.exit_code in (0, 1), result.output
    assert not delta.exists()


def test_a_plot_or_report_variable_meant_for_another_tool_is_a_warning_not_exit_2(
        tmp_path, texts):  # noqa: F811 - the fixture
    # PLOT=/path or REPORT=weekly (set for something else) made the night exit 2: now one
    # warning line naming the variable, and the night runs as if it were unset
    results, out = _nights(tmp_path / "a", texts,
                           env={"PLOT": "/tmp/plot.png", "REPORT": "weekly"})
    for result in results:
        assert result.exit_code in (0, 1), result.output
        warned = [x for x in result.stderr.splitlines() if "warning" in x]
        assert len(warned) == 2, result.stderr
        assert warned[0].startswith("nightly: warning: REPORT='weekly' is not 1 or 0"), warned
        assert warned[1].startswith("nightly: warning: PLOT='/tmp/plot.png'"), warned
        assert all(x.endswith("ignored") for x in warned), warned
    assert (out / "compare.json").exists() and not (out / "report.html").exists()
    # the documented values still work, and a flag given wins over the variable
    results, out = _nights(tmp_path / "b", texts, env={"PLOT": "0", "REPORT": "1"})
    assert results[-1].exit_code in (0, 1) and "warning" not in results[-1].stderr
    assert (out / "report.html").exists() and not (out / "delta.png").exists()
    result = CliRunner().invoke(main, ["nightly", str(tmp_path / "b" / "root"),
                                       _predictions(tmp_path / "p9.parquet", texts.head(20),
                                                    seed=1),
                                       "--run-date", "2025-01-03", "--run-id", "n2",
                                       "--score-args", SCORE_ARGS, "--no-report"],
                                env={"REPORT": "weekly"})
    assert result.exit_code in (0, 1) and "warning" not in result.stderr, result.stderr
    assert not (tmp_path / "b" / "root" / "compare" / "run_date=2025-01-03" / "run_id=n2"
                / "report.html").exists()
