"""A missing optional extra is one exit code everywhere: 2, a set-up problem that a retry
(exit 4 is what schedulers retry) cannot fix; one line naming the extra, nothing staged.

The missing package is simulated: ``sys.modules[name] = None`` makes ``import name`` raise
ImportError and ``importlib.util.find_spec(name)`` return None, as for a package that is not
installed.
"""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import ConfigError, MissingExtraError
from tests.conftest import BUNDLED
from tests.support.warehouse_runs import realsumm_inputs, score_run


def _one_line(result) -> str:
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("extras")
    preds, refs = realsumm_inputs(root / "in", n=5)
    return (score_run(preds, refs, root / "run", run_id="r1"),
            score_run(preds, refs, root / "run2", run_id="r2"))


@pytest.fixture(scope="module")
def run(runs):
    return runs[0]


def test_the_error_class_is_usage_and_round_trips():
    import pickle

    err = MissingExtraError("x needs y", hint="pip install 'overlap-pipeline[y]'")
    assert isinstance(err, ConfigError) and err.exit_code == 2
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is MissingExtraError and back.hint == err.hint


def test_engine_ray_without_ray_is_exit_2_and_stages_nothing(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["score", str(BUNDLED / "predictions"), "--references",
                                       str(BUNDLED / "references.parquet"), "--engine", "ray",
                                       "--output", str(out)])
    assert result.exit_code == 2, result.output
    line = _one_line(result)
    assert "needs Ray" in line and "overlap-pipeline[ray]" in line
    assert list(tmp_path.iterdir()) == []  # no output, no staging, no lock


def test_compare_engine_ray_without_ray_is_exit_2(monkeypatch, runs, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)
    result = CliRunner().invoke(main, ["compare", str(runs[0]), str(runs[1]), "--engine",
                                       "ray", "--output", str(tmp_path / "cmp")])
    assert result.exit_code == 2, result.output
    assert "needs Ray" in _one_line(result)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("target", "module", "package"),
                         [("--delta", "deltalake", "deltalake"),
                          ("--iceberg", "pyiceberg.catalog", "pyiceberg")])
def test_publish_without_the_warehouse_extra_is_exit_2(monkeypatch, run, tmp_path, target,
                                                       module, package):
    monkeypatch.setitem(sys.modules, module, None)
    where = str(tmp_path / "wh") if target == "--delta" else f"sqlite:///{tmp_path}/c.db"
    args = ["publish", str(run), target, where]
    if target == "--iceberg":
        args += ["--namespace", "evals"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    line = _one_line(result)
    assert package in line and "overlap-pipeline[warehouse]" in line
    assert list(tmp_path.iterdir()) == []


def test_language_without_the_multilingual_extra_is_exit_2(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "jieba", None)
    result = CliRunner().invoke(main, ["score", str(BUNDLED / "predictions"), "--references",
                                       str(BUNDLED / "references.parquet"), "--language",
                                       "chinese", "--engine", "local", "--output",
                                       str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "multilingual" in _one_line(result)
    assert not (tmp_path / "run").exists()
