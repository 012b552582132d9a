"""A score whose engine never started leaves no staging directory (issue 18)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import ExecutionError


def test_an_engine_that_never_started_leaves_no_staging(tmp_path, monkeypatch):
    import pipeline.engine.session as session

    def unreachable(*args, **kwargs):
        raise ExecutionError("could not connect to the Ray cluster at 10.255.255.1:6379")

    monkeypatch.setattr(session, "score_on_engine", unreachable)
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": ["a"], "prediction": ["the cat"],
                             "references": [["the cat sat"]]}), path)
    runs = tmp_path / "runs"
    runs.mkdir()
    result = CliRunner().invoke(main, ["score", str(path), "--output", str(runs / "X"),
                                       "--address", "10.255.255.1:6379",
                                       "--allow-local-paths"])
    assert result.exit_code == 4, result.output
    assert "could not connect" in result.output
    assert sorted(p.name for p in runs.iterdir()) == []
