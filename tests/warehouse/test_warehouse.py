"""`overlap publish` writing real Delta Lake and Iceberg tables, read back with deltalake,
pyiceberg and DuckDB."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from tests.conftest import ROOT
from tests.support.warehouse_runs import realsumm_inputs, retyped_copy, score_run

deltalake = pytest.importorskip("deltalake")
pyiceberg_catalog = pytest.importorskip("pyiceberg.catalog")
duckdb = pytest.importorskip("duckdb")

DAY = dt.date(2026, 11, 30)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run a (rouge1, rougeL) and run b (rouge1, rouge2, rougeL), 40 REALSumm examples each."""
    root = tmp_path_factory.mktemp("runs")
    preds, refs = realsumm_inputs(root / "in")
    a = score_run(preds, refs, root / "a", run_id="run-a")
    b = score_run(preds, refs, root / "b", run_id="run-b",
                  metrics=("rouge1", "rouge2", "rougeL"))
    return {"a": a, "b": b, "n": pq.read_metadata(next((a / "examples").glob("*.parquet")))
            .num_rows, "n_agg": pq.read_metadata(a / "aggregate.parquet").num_rows,
            "n_agg_b": pq.read_metadata(b / "aggregate.parquet").num_rows}


def publish(*args) -> object:
    return CliRunner().invoke(main, ["publish", *map(str, args)], catch_exceptions=False)


def publish_process(*args, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "from pipeline.cli import main; main()",
                             "publish", *map(str, args)],
                            cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def delta_rows(root: Path, table: str) -> pa.Table:
    return deltalake.DeltaTable(str(root / table)).to_pyarrow_table()


def iceberg_catalog(tmp: Path, name: str = "catalog.db"):
    from pipeline.warehouse.iceberg import load_catalog

    return load_catalog(f"sqlite:///{tmp}/{name}")


# --------------------------------------------------------------------------------------------
# Delta Lake
# --------------------------------------------------------------------------------------------

def test_delta_publish_reads_back_with_deltalake_and_duckdb(runs, tmp_path):
    wh = tmp_path / "delta"
    result = publish(runs["a"], "--delta", wh, "--label", "model=m7", "--label", "dataset=rs",
                     "--run-date", DAY.isoformat())
    assert result.exit_code == 0, result.output
    assert "delta examples: appended 40 rows" in result.output

    dt_ex = deltalake.DeltaTable(str(wh / "examples"))
    assert dt_ex.metadata().partition_columns == ["run_date"]
    assert (wh / "examples" / "run_date=2026-11-30").is_dir()
    assert dt_ex.transaction_version("run-a") == 1
    table = dt_ex.to_pyarrow_table()
    assert table.num_rows == runs["n"] == 40
    schema = table.schema
    assert schema.field("run_date").type == pa.date32()
    assert pa.types.is_string(schema.field("run_id").type) or \
        pa.types.is_large_string(schema.field("run_id").type) or \
        pa.types.is_string_view(schema.field("run_id").type)
    assert schema.field("rouge1_fmeasure").type == pa.float64()
    assert schema.field("rouge1_matches").type == pa.int64()
    assert schema.field("n_references").type == pa.int32()
    assert schema.names[:5] == ["run_id", "run_date", "signature", "model", "dataset"]
    assert set(table["model"].to_pylist()) == {"m7"}
    assert set(table["run_date"].to_pylist()) == {DAY}

    # DuckDB over the table's own Parquet files (as its delta extension would read them)
    files = [f for f in dt_ex.file_uris()]
    con = duckdb.connect()
    rows = con.execute(
        "select run_id, run_date, model, count(*), avg(rouge1_fmeasure) "
        "from read_parquet(?, hive_partitioning = true) group by all", [files]).fetchall()
    source = pq.read_table(runs["a"] / "examples")
    assert rows == [("run-a", DAY, "m7", 40,
                     pytest.approx(pa.compute.mean(source["rouge1_fmeasure"]).as_py()))]
    agg = delta_rows(wh, "aggregates")
    assert agg.num_rows == runs["n_agg"]
    assert {"scope", "metric", "measure", "mean", "ci_low", "run_id"} <= set(agg.column_names)


def test_delta_republish_is_idempotent_and_schema_grows(runs, tmp_path):
    wh = tmp_path / "delta"
    assert publish(runs["a"], "--delta", wh).exit_code == 0
    version = deltalake.DeltaTable(str(wh / "examples")).version()
    again = publish(runs["a"], "--delta", wh)
    assert again.exit_code == 0
    assert "already there, nothing written" in again.output
    assert deltalake.DeltaTable(str(wh / "examples")).version() == version
    assert delta_rows(wh, "examples").num_rows == 40

    grown = publish(runs["b"], "--delta", wh)
    assert grown.exit_code == 0, grown.output
    assert "new columns" in grown.output and "rouge2_fmeasure" in grown.output
    table = delta_rows(wh, "examples")
    assert table.num_rows == 80
    frame = table.to_pandas()
    assert frame.loc[frame.run_id == "run-a", "rouge2_fmeasure"].isna().all()
    assert frame.loc[frame.run_id == "run-b", "rouge2_fmeasure"].notna().all()
    assert delta_rows(wh, "aggregates").num_rows == runs["n_agg"] + runs["n_agg_b"]


def test_publish_refuses_a_type_change_naming_the_column(runs, tmp_path):
    wh = tmp_path / "delta"
    assert publish(runs["a"], "--delta", wh).exit_code == 0
    changed = retyped_copy(runs["a"], tmp_path / "changed", run_id="run-c",
                           column="rouge1_matches", to=pa.float64())
    result = publish(changed, "--delta", wh)
    assert result.exit_code == 2
    assert "'rouge1_matches'" in result.output and "int64" in result.output
    assert "double" in result.output
    assert delta_rows(wh, "examples").num_rows == 40  # nothing written

    cat = tmp_path / "ice"
    assert publish(runs["a"], "--iceberg", f"sqlite:///{cat}/c.db", "--namespace", "ev"
                   ).exit_code == 0
    result = publish(changed, "--iceberg", f"sqlite:///{cat}/c.db", "--namespace", "ev")
    assert result.exit_code == 2 and "'rouge1_matches'" in result.output


def test_publish_refuses_an_incomplete_run_and_bad_options(runs, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(runs["a"], broken)
    (broken / "_SUCCESS").unlink()
    result = publish(broken, "--delta", tmp_path / "delta")
    assert result.exit_code == 2
    assert "_SUCCESS" in result.output
    assert not (tmp_path / "delta").exists()
    assert publish(runs["a"]).exit_code == 2  # no target
    assert publish(runs["a"], "--iceberg", "sqlite:///x.db").exit_code == 2  # no namespace
    assert publish(runs["a"], "--delta", tmp_path / "d", "--label", "run_id=x").exit_code == 2
    assert publish(runs["a"], "--delta", tmp_path / "d", "--label", "nokey").exit_code == 2
    assert publish(runs["a"], "--delta", tmp_path / "d", "--run-date", "30/11/2026"
                   ).exit_code == 2


# --------------------------------------------------------------------------------------------
# Iceberg
# --------------------------------------------------------------------------------------------

def test_iceberg_publish_reads_back_with_pyiceberg_and_duckdb(runs, tmp_path):
    uri = f"sqlite:///{tmp_path}/catalog.db"
    result = publish(runs["a"], "--iceberg", uri, "--namespace", "evals", "--label", "model=m7",
                     "--run-date", DAY.isoformat())
    assert result.exit_code == 0, result.output
    catalog = iceberg_catalog(tmp_path)
    table = catalog.load_table("evals.examples")
    spec = table.spec()
    assert [table.schema().find_field(f.source_id).name for f in spec.fields] == ["run_date"]
    assert spec.fields[0].transform.__class__.__name__ == "IdentityTransform"
    arrow = table.scan().to_arrow()
    assert arrow.num_rows == 40
    assert arrow.schema.field("run_date").type == pa.date32()
    assert arrow.schema.field("rouge1_fmeasure").type == pa.float64()
    assert arrow.schema.field("rouge1_matches").type == pa.int64()
    assert arrow.schema.field("n_references").type == pa.int32()
    assert set(arrow["run_date"].to_pylist()) == {DAY}
    # the data files sit in a run_date partition directory
    files = [t.file.file_path for t in table.scan().plan_files()]
    assert files and all("run_date=2026-11-30" in f for f in files)
    con = duckdb.connect()
    got = con.execute("select run_id, model, count(*) from read_parquet(?) group by all",
                      [[f.removeprefix("file://") for f in files]]).fetchall()
    assert got == [("run-a", "m7", 40)]
    agg = catalog.load_table("evals.aggregates").scan().to_arrow()
    assert agg.num_rows == runs["n_agg"]
    # a filter on the partition prunes
    assert table.scan(row_filter="run_date = '2026-11-29'").to_arrow().num_rows == 0


def test_iceberg_republish_is_idempotent_and_schema_grows(runs, tmp_path):
    uri = f"sqlite:///{tmp_path}/catalog.db"
    assert publish(runs["a"], "--iceberg", uri, "--namespace", "evals").exit_code == 0
    catalog = iceberg_catalog(tmp_path)
    snapshots = len(catalog.load_table("evals.examples").metadata.snapshots)
    again = publish(runs["a"], "--iceberg", uri, "--namespace", "evals")
    assert again.exit_code == 0 and "already there" in again.output
    table = catalog.load_table("evals.examples")
    assert len(table.metadata.snapshots) == snapshots
    assert table.scan().to_arrow().num_rows == 40
    grown = publish(runs["b"], "--iceberg", uri, "--namespace", "evals")
    assert grown.exit_code == 0, grown.output
    frame = catalog.load_table("evals.examples").scan().to_pandas()
    assert len(frame) == 80
    assert frame.loc[frame.run_id == "run-a", "rouge2_fmeasure"].isna().all()
    assert frame.loc[frame.run_id == "run-b", "rouge2_fmeasure"].notna().all()
    summary = catalog.load_table("evals.examples").current_snapshot().summary
    assert summary["overlap.run-id"] == "run-b"


# --------------------------------------------------------------------------------------------
# Concurrency and crashes (separate processes)
# --------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_two_runs_published_concurrently(runs, tmp_path):
    """Runs a and b at once, and run a a second time at the same moment: each lands once."""
    targets = ["--delta", tmp_path / "delta", "--iceberg", f"sqlite:///{tmp_path}/c.db",
               "--namespace", "evals"]
    procs = [publish_process(runs[k], *targets) for k in ("a", "b", "a")]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    for table, n_b in (("examples", 40), ("aggregates", runs["n_agg_b"])):
        n_a = 40 if table == "examples" else runs["n_agg"]
        got = delta_rows(tmp_path / "delta", table).group_by("run_id").aggregate(
            [("run_id", "count")]).to_pylist()
        assert {r["run_id"]: r["run_id_count"] for r in got} == {"run-a": n_a, "run-b": n_b}
        ice = iceberg_catalog(tmp_path, "c.db").load_table(f"evals.{table}").scan().to_arrow()
        got = ice.group_by("run_id").aggregate([("run_id", "count")]).to_pylist()
        assert {r["run_id"]: r["run_id_count"] for r in got} == {"run-a": n_a, "run-b": n_b}


@pytest.mark.parametrize("kill_after", ["delta.examples", "iceberg.examples"])
def test_publish_killed_between_tables_is_repaired_by_publishing_again(runs, tmp_path,
                                                                       kill_after):
    targets = ["--delta", tmp_path / "delta", "--iceberg", f"sqlite:///{tmp_path}/c.db",
               "--namespace", "evals"]
    killed = publish_process(runs["a"], *targets,
                             env={"OVERLAP_PUBLISH_FAULTS": json.dumps(
                                 {"kill_after": kill_after})})
    killed.communicate(timeout=300)
    assert killed.returncode == -9
    assert delta_rows(tmp_path / "delta", "examples").num_rows == 40
    assert not (tmp_path / "delta" / "aggregates" / "_delta_log").exists() or \
        delta_rows(tmp_path / "delta", "aggregates").num_rows == runs["n_agg"]
    if kill_after == "delta.examples":
        assert not (tmp_path / "delta" / "aggregates").exists()

    again = publish(runs["a"], *targets)
    assert again.exit_code == 0, again.output
    lines = again.output.splitlines()
    assert lines[0].startswith("delta examples: already there")
    assert lines[1].startswith("delta aggregates: appended" if kill_after == "delta.examples"
                               else "delta aggregates: already there")
    assert lines[2].startswith("iceberg examples: " + (
        "appended" if kill_after == "delta.examples" else "already there"))
    assert lines[3].startswith("iceberg aggregates: appended")
    catalog = iceberg_catalog(tmp_path, "c.db")
    for table, n in (("examples", 40), ("aggregates", runs["n_agg"])):
        assert delta_rows(tmp_path / "delta", table).num_rows == n
        assert catalog.load_table(f"evals.{table}").scan().to_arrow().num_rows == n


def test_publish_has_help():
    result = CliRunner().invoke(main, ["publish", "--help"])
    assert result.exit_code == 0
    for option in ("--delta", "--iceberg", "--namespace", "--warehouse", "--label",
                   "--run-date"):
        assert option in result.output


@pytest.mark.slow
def test_nightly_loop_publishes_after_scoring_and_reports(tmp_path):
    overlap = Path(sys.executable).with_name("overlap")
    if not overlap.exists():
        pytest.skip("the overlap console script is not installed")
    preds, refs = realsumm_inputs(tmp_path / "in", n=30)
    env = {**os.environ, "OVERLAP": str(overlap), "SCORE_ARGS": "--engine local --bootstrap 20",
           "PUBLISH_ARGS": f"--delta {tmp_path / 'wh'} --label model=m7", "REPORT": "1"}
    for day, run_id in (("2026-11-29", "n1"), ("2026-11-30", "n2")):
        done = subprocess.run(["bash", str(ROOT / "scripts" / "nightly.sh"),
                               str(tmp_path / "runs"), str(preds), str(refs)],
                              env={**env, "RUN_DATE": day, "RUN_ID": run_id},
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "nightly: publishing" in done.stderr
    table = delta_rows(tmp_path / "wh", "examples").to_pandas()
    assert table.groupby("run_id")["run_date"].agg(["count", "first"]).to_dict("index") == {
        "n1": {"count": 30, "first": dt.date(2026, 11, 29)},
        "n2": {"count": 30, "first": dt.date(2026, 11, 30)}}
    assert set(table["model"]) == {"m7"}
    report = tmp_path / "runs" / "compare" / "run_date=2026-11-30" / "run_id=n2" / "report.html"
    assert "Against the baseline" in report.read_text()


def _publish_at_the_barrier(uri: str, barrier, run_id: str) -> None:
    import deltalake as dl

    from pipeline.warehouse.common import RunTables
    from pipeline.warehouse.delta import _publish_one

    rows = pa.table({"run_id": [run_id] * 40, "x": list(range(40)),
                     "run_date": ["2026-12-01"] * 40})
    run = RunTables(run_id=run_id, run_date=dt.date(2026, 12, 1), signature="", labels=(),
                    tables={"examples": rows}, fingerprint=f"fingerprint of {run_id}")
    barrier.wait()
    _publish_one(dl, uri, run, "examples", None)


@pytest.mark.slow
def test_racing_publishers_of_one_run_on_a_new_delta_table_land_it_once(tmp_path):
    """Three processes (run a, run b, run a) released at once onto a table none has created.

    Before the fix this wrote run a twice in 12 of 20 trials, so 10 clean trials would
    happen by chance with probability about 1e-4.
    """
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # delta-rs's runtime does not survive a fork
    for trial in range(10):
        uri = str(tmp_path / f"t{trial}" / "examples")
        barrier = ctx.Barrier(3)
        procs = [ctx.Process(target=_publish_at_the_barrier, args=(uri, barrier, r))
                 for r in ("run-a", "run-b", "run-a")]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        assert [p.exitcode for p in procs] == [0, 0, 0]
        table = deltalake.DeltaTable(uri).to_pyarrow_table()
        counts = table.group_by("run_id").aggregate([("run_id", "count")]).to_pylist()
        assert {r["run_id"]: r["run_id_count"] for r in counts} == {"run-a": 40, "run-b": 40}
