"""``overlap score`` on a local Ray instance, end to end, on the bundled REALSumm data.

Ray starts once for the session (``local_ray`` in conftest.py), on the loopback address
127.0.0.2, and every in-process run reuses it; one test runs the README's command as a
subprocess, which starts (and stops) its own instance. Only processes started here are
stopped.

Every check that does not depend on the engine runs twice: on the in-process engine (the
fast tier) and on Ray (the slow tier, where Ray's start-up costs its time); the tests only
Ray can answer are slow.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import pipeline
from pipeline.api import score
from pipeline.cli import main
from pipeline.config import ScoreConfig, Threshold
from pipeline.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"
PREDS = str(DATA / "predictions")
REFS = str(DATA / "references.parquet")
EXPECTED = ROOT / "tests" / "data" / "realsumm_expected_rouge_score.parquet"
METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")
MEASURES = ("precision", "recall", "fmeasure")
TOKEN = Path.home() / ".ray" / "auth_token"


def _cli_run(tmp_path_factory, engine: str, *options: str) -> tuple[Path, str, str]:
    """The CLI run: default settings, grouped by system, 4 partitions."""
    out = tmp_path_factory.mktemp(engine) / "realsumm"
    cfg = out.parent / "four-partitions.yaml"
    cfg.write_text("partition_rows: 700\n")
    result = CliRunner().invoke(main, ["score", PREDS, "--references", REFS, "--output",
                                       str(out), "--group-by", "system", "--config", str(cfg),
                                       "--threshold", "rougeL.fmeasure=0.3", *options])
    assert result.exit_code == 0, result.stderr
    return out, result.stdout, result.stderr


@pytest.fixture(scope="module")
def ray_run(local_ray, tmp_path_factory) -> tuple[Path, str, str]:
    """The CLI run on Ray (the default engine, with the session's Ray initialized)."""
    return _cli_run(tmp_path_factory, "ray")


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> tuple[Path, str, str]:
    """The same CLI run in-process."""
    return _cli_run(tmp_path_factory, "local", "--engine", "local")


@pytest.fixture(scope="module", params=["local", pytest.param("ray", marks=pytest.mark.slow)])
def any_run(request) -> tuple[Path, str, str]:
    """The CLI run in-process (fast tier) and on Ray (slow tier)."""
    return request.getfixturevalue(f"{request.param}_run")


@pytest.mark.slow
def test_ray_is_on_loopback(local_ray):
    nodes = [n for n in local_ray.nodes() if n["Alive"]]
    assert [n["NodeManagerAddress"] for n in nodes] == ["127.0.0.1"]


def test_per_example_values_equal_rouge_score(any_run):
    out, _, _ = any_run
    examples = pd.read_parquet(out / "examples")
    assert len(list((out / "examples").iterdir())) == 4
    exp = pd.read_parquet(EXPECTED).query("stemmer == 'none'")
    for m in METRICS:
        want = exp[exp.metric == m].set_index("id")
        got = examples.set_index("id").loc[want.index]
        for x in MEASURES:
            assert (got[f"{m}_{x}"].to_numpy() == want[x].to_numpy()).all(), f"{m} {x}"
    # Statistics agree with the scores they come from.
    p = examples.rougeL_matches / examples.rougeL_prediction_units.clip(lower=1)
    assert (p == examples.rougeL_precision).all()


def test_aggregate_means_equal_numpy_over_the_same_values(any_run):
    out, _, _ = any_run
    examples = pd.read_parquet(out / "examples")
    agg = pd.read_parquet(out / "aggregate.parquet")
    means = agg[agg.statistic == "mean"]
    assert len(means) == (1 + 24) * len(METRICS) * len(MEASURES)
    for r in means.itertuples():
        rows = examples if r.scope == "all" else examples[examples.system == r.system]
        values = rows[f"{r.metric}_{r.measure}"].to_numpy()
        assert r.mean == pytest.approx(np.mean(values), rel=1e-13, abs=0)
        assert r.mean == math.fsum(values) / len(values)
        assert r.n_examples == len(values)
        assert r.ci_low < r.mean < r.ci_high
    rate = agg[(agg.statistic == "pass_rate") & (agg.scope == "all")].iloc[0]
    assert rate["mean"] == (examples.rougeL_fmeasure >= 0.3).mean()


def test_outputs_read_back_with_pandas_and_duckdb_with_documented_types(any_run):
    out, _, _ = any_run
    con = duckdb.connect()
    types = {r[0]: r[1] for r in con.execute(
        f"DESCRIBE SELECT * FROM read_parquet('{out}/examples/*.parquet')").fetchall()}
    assert types["run_id"] == "VARCHAR" and types["id"] == "VARCHAR"
    assert types["system"] == "VARCHAR" and types["n_references"] == "INTEGER"
    for m in METRICS:
        assert [types[f"{m}_{x}"] for x in MEASURES] == ["DOUBLE"] * 3
        assert [types[f"{m}_{x}"] for x in ("matches", "prediction_units",
                                             "reference_units")] == ["BIGINT"] * 3
        assert types[f"{m}_reference_index"] == "INTEGER"
    assert types["passed_rougeL_fmeasure"] == "BOOLEAN"
    n, mean = con.execute(f"SELECT count(*), avg(rouge1_fmeasure) FROM "
                          f"read_parquet('{out}/examples/*.parquet')").fetchone()
    assert n == 2500
    agg_types = {r[0]: r[1] for r in con.execute(
        f"DESCRIBE SELECT * FROM read_parquet('{out}/aggregate.parquet')").fetchall()}
    assert agg_types == {"scope": "VARCHAR", "system": "VARCHAR", "metric": "VARCHAR",
                         "measure": "VARCHAR", "statistic": "VARCHAR", "threshold": "DOUBLE",
                         "mean": "DOUBLE", "ci_low": "DOUBLE", "ci_high": "DOUBLE",
                         "n_examples": "BIGINT"}
    all_mean = con.execute(f"SELECT mean FROM read_parquet('{out}/aggregate.parquet') WHERE "
                           "scope = 'all' AND metric = 'rouge1' AND measure = 'fmeasure'"
                           ).fetchone()[0]
    assert all_mean == pytest.approx(mean, rel=1e-12)
    frame = pd.read_parquet(out / "examples")
    assert str(frame.rouge1_fmeasure.dtype) == "float64"
    assert str(frame.rouge1_matches.dtype) == "int64"
    assert str(frame.n_references.dtype) == "int32"
    assert str(frame.passed_rougeL_fmeasure.dtype) == "bool"


def test_stdout_summary_and_manifest(any_run, request):
    out, stdout, stderr = any_run
    engine = request.node.callspec.params["any_run"]
    assert stderr == ""
    if engine == "ray":
        assert "local Ray" in stdout or "existing" in stdout or "Ray cluster" in stdout
    else:
        assert "(in-process" in stdout.splitlines()[0]
    assert "bart_out" in stdout and "(all)" in stdout and f"output: {out}" in stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["engine"]["engine"] == engine
    assert manifest["stages"]["split"]["units_run"] == manifest["counts"]["prediction_units"] \
        + manifest["counts"]["reference_units"]
    assert manifest["counts"]["partitions"] == 4
    assert manifest["signature"].endswith(f"version:{pipeline.__version__}")


@pytest.mark.slow
def test_ray_and_local_engines_write_the_same_examples(ray_run, tmp_path):
    out, _, _ = ray_run
    score(PREDS, references=REFS, output=str(tmp_path / "local"),
          config=ScoreConfig(engine="local", group_by=("system",), partition_rows=700,
                             thresholds=(Threshold("rougeL", "fmeasure", 0.3),)))
    for name in sorted(p.name for p in (out / "examples").iterdir()):
        a = pq.read_table(out / "examples" / name).drop_columns(["run_id"])
        b = pq.read_table(tmp_path / "local" / "examples" / name).drop_columns(["run_id"])
        assert a.equals(b), name
    a = pq.read_table(out / "aggregate.parquet")
    b = pq.read_table(tmp_path / "local" / "aggregate.parquet")
    assert a.equals(b)


def test_auto_engine_scores_small_inputs_in_process_with_the_same_results(local_run,
                                                                          tmp_path):
    """The default engine (auto) on the bundled data, in its own process: in-process, with
    the results of ``--engine local`` (which equal Ray's: the test above)."""
    out, _, _ = local_run
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run(
        [sys.executable, "-c", "from pipeline.cli import main; main()", "score", PREDS,
         "--references", REFS, "--output", str(tmp_path / "auto"), "--group-by", "system",
         "--config", str(out.parent / "four-partitions.yaml"), "--threshold",
         "rougeL.fmeasure=0.3"], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "(in-process)" in proc.stdout.splitlines()[0]
    engine = json.loads((tmp_path / "auto" / "manifest.json").read_text())["engine"]
    assert engine["engine"] == "local" and engine["requested"] == "auto"
    assert engine["reason"] == "auto: one machine: in-process (2,500 prediction rows)"
    names = sorted(p.name for p in (out / "examples").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "auto" / "examples").iterdir())
    for name in names:
        a = pq.read_table(out / "examples" / name).drop_columns(["run_id"])
        b = pq.read_table(tmp_path / "auto" / "examples" / name).drop_columns(["run_id"])
        assert a.equals(b), name
    assert pq.read_table(out / "aggregate.parquet").equals(
        pq.read_table(tmp_path / "auto" / "aggregate.parquet"))


@pytest.mark.slow
def test_an_input_error_raised_on_a_worker_keeps_its_class(local_ray, tmp_path, monkeypatch):
    pq.write_table(pa.table({"id": ["a", None], "prediction": ["x", "y"],
                             "references": [["x"], ["y"]]}), tmp_path / "p.parquet")
    cancelled: list = []  # Ray's cancel can abort the driver (see RayRunner.cancel)
    monkeypatch.setattr(local_ray, "cancel", lambda *a, **k: cancelled.append(a))
    with pytest.raises(InputError, match=r"p\.parquet has 1 null ids"):
        score(str(tmp_path / "p.parquet"), output=str(tmp_path / "out"),
              config=ScoreConfig(bootstrap=0))
    assert cancelled == []
    assert local_ray.is_initialized()  # the shared instance is left running
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_readme_command_starts_a_quiet_local_ray_and_cleans_up(tmp_path):
    """The README's main command on Ray, as a user runs it (its own Ray, started, stopped)."""
    overlap = Path(sys.executable).with_name("overlap")
    if not overlap.exists():
        pytest.skip("the overlap console script is not installed")
    had_token = TOKEN.exists()
    tmp = tempfile.mkdtemp(prefix="ovt", dir="/tmp")  # short: Ray's socket paths
    try:
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        env["TMPDIR"] = tmp
        proc = subprocess.run(
            [str(overlap), "score", "pipeline/data/realsumm/predictions", "--references",
             "pipeline/data/realsumm/references.parquet", "--output", f"{tmp}/runs/realsumm",
             "--group-by", "system", "--overwrite", "--engine", "ray"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""  # no banner, no token notice, no worker logs
        assert proc.stdout.startswith("scored 2,500 examples in ")
        assert "local Ray" in proc.stdout
        assert "unilm_out_v2" in proc.stdout
        assert sorted(os.listdir(tmp)) == ["runs"]  # Ray's temp dir is gone
        assert (Path(tmp) / "runs" / "realsumm" / "_SUCCESS").exists()
        manifest = json.loads((Path(tmp) / "runs" / "realsumm" / "manifest.json").read_text())
        assert manifest["engine"]["spilled_bytes"] == 0  # its object store holds no text
        assert had_token or not TOKEN.exists()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_aggregate_from_per_file_sums_on_workers_equals_one_aggregate_of_all_rows(any_run):
    """Tasks on workers (in-process, or Ray's) return each file's sums and share of the
    bootstrap; the driver only adds them: the table equals aggregate() of every row at once,
    bit for bit."""
    from pipeline.aggregate import aggregate
    from pipeline.engine import run as engine_run
    from pipeline.engine.local import LocalRunner
    from pipeline.engine.ray_runner import RayRunner
    from pipeline.io.files import locate

    out, _, _ = any_run
    paths = sorted((out / "examples").iterdir())
    files = [locate(str(p)) for p in paths]
    cfg = ScoreConfig(group_by=("system",), thresholds=(Threshold("rougeL", "fmeasure", 0.3),))
    on_ray = json.loads((out / "manifest.json").read_text())["engine"]["engine"] == "ray"
    runner = RayRunner() if on_ray else LocalRunner()  # Ray: reuses the session's instance
    try:
        merged = engine_run.aggregate_examples(cfg, runner, files, n_examples=2500)
    finally:
        runner.close()
    rows = pa.concat_tables(pq.read_table(p) for p in paths)
    whole = aggregate(rows, metrics=cfg.metrics, group_by=cfg.group_by,
                      thresholds=cfg.thresholds, n_bootstrap=cfg.bootstrap, seed=cfg.seed,
                      id_column=cfg.id_column)
    assert merged.num_rows == 13 * 25
    assert merged.equals(whole)
