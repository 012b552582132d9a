"""Issue 24 (failure 10): the night's comparison appended to a `comparisons` table (Delta and
Iceberg), idempotent per comparison, and the DuckDB query of docs/warehouse.md."""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline import api
from pipeline.cli import main
from pipeline.config import ScoreConfig
from tests.compare.test_compare_fixtures import realsumm

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")
duckdb = pytest.importorskip("duckdb")

REPO = Path(__file__).resolve().parents[2]
CONFIG = ScoreConfig(metrics=("rouge1",), bootstrap=0, engine="local", keep_text=True,
                     group_by=("system",))


def _predictions(path: Path, frame: pd.DataFrame, *, cut_system: str | None = None) -> str:
    out = frame[["id", "prediction", "system"]].copy()
    out["references"] = [[r] for r in frame["reference"]]
    if cut_system is not None:
        hit = out["system"] == cut_system
        out.loc[hit, "prediction"] = [" ".join(t.split()[:8])
                                      for t in out.loc[hit, "prediction"]]
    out.to_parquet(path)
    return str(path)


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """A nightly ROOT: a quiet night, then one where system s1 was cut in half (an alarm)."""
    tmp = tmp_path_factory.mktemp("cmp")
    frame = realsumm().head(90).reset_index(drop=True)
    frame["system"] = [f"s{i % 3}" for i in range(len(frame))]
    root = str(tmp / "root")
    opts = {"n_bootstrap": 200, "top": 2}
    api.nightly(root, _predictions(tmp / "a.parquet", frame), run_date="2025-03-01",
                run_id="n1", config=CONFIG, compare_options=opts, plot=False)
    night = api.nightly(root, _predictions(tmp / "b.parquet", frame, cut_system="s1"),
                        run_date="2025-03-02", run_id="n2", config=CONFIG,
                        compare_options=opts, plot=False)
    assert night.exit_code == 1
    return root, night


def _own_delta(root: str, group: str) -> float:
    """The group's mean rouge1 F change, from the two runs' examples (not the comparison)."""
    means = []
    for night in ("run_date=2025-03-01/run_id=n1", "run_date=2025-03-02/run_id=n2"):
        ex = pq.read_table(f"{root}/{night}/examples", partitioning=None).to_pandas()
        means.append(ex.loc[ex["system"] == group, "rouge1_fmeasure"].mean())
    return float(means[1] - means[0])


def test_a_comparison_is_published_to_delta_and_iceberg_once(nights, tmp_path):
    root, night = nights
    doc = json.loads((Path(night.compare_dir) / "compare.json").read_text())
    warehouse = tmp_path / "wh"
    catalog = f"sqlite:///{tmp_path / 'catalog.db'}"
    args = [night.compare_dir, "--delta", str(warehouse), "--iceberg", catalog,
            "--namespace", "evals", "--label", "model=m7"]
    first = CliRunner().invoke(main, ["publish", *args])
    assert first.exit_code == 0, first.output
    assert re.search(r"delta comparisons: appended 4 comparison rows \(", first.output), \
        first.output
    assert re.search(r"iceberg comparisons: appended 4 comparison rows \(", first.output)
    again = CliRunner().invoke(main, ["publish", *args])
    assert again.exit_code == 0 and again.output.count("already there, nothing written") == 2
    dt = deltalake.DeltaTable(str(warehouse / "comparisons"))
    assert dt.version() == 1  # created, then one append: nothing on the second publish
    from pipeline.warehouse.iceberg import load_catalog

    ice = load_catalog(catalog).load_table(("evals", "comparisons")).scan().to_pandas()
    for table in (dt.to_pandas(), ice):
        assert len(table) == 4  # all + 3 systems, rouge1 F (the primary measure)
        assert set(table["baseline_run_id"]) == {"n1"}
        assert set(table["candidate_run_id"]) == {"n2"}
        assert set(table["model"]) == {"m7"} and len(set(table["comparison_id"])) == 1
        assert set(table["run_date"].astype(str)) == {"2025-03-02"}
        row = table[(table["group"] == "system=s1") & (table["measure"] == "fmeasure")].iloc[0]
        assert row["alarm_kind"] == "change" and bool(row["alarm"])
        assert row["delta"] == pytest.approx(_own_delta(root, "s1"), abs=1e-12)
        assert row["delta"] < -0.05 and row["ci_high"] < 0
        assert row["band_source"] == "static" and row["band"] == pytest.approx(0.01)
        quiet = table[table["group"] == "system=s0"]
        assert quiet["alarm_kind"].isna().all() and not quiet["alarm"].any()
        for col in ("p_value", "p_adjusted", "ci_low", "drift_statistic", "mde",
                    "baseline_mean", "candidate_mean", "history_nights"):
            assert col in table.columns
    kinds = {(a["group"], a["metric"], a["measure"]): a["kind"] for a in doc["alarms"]}
    dpd = dt.to_pandas()
    listed = {(g, m, x): k for g, m, x, k in zip(dpd["group"], dpd["metric"], dpd["measure"],
                                                 dpd["alarm_kind"], strict=True)
              if isinstance(k, str)}
    assert listed == kinds


def test_the_same_comparison_with_other_labels_is_refused(nights, tmp_path):
    _, night = nights
    wh = str(tmp_path / "wh")
    assert CliRunner().invoke(main, ["publish", night.compare_dir, "--delta", wh]).exit_code \
        == 0
    other = CliRunner().invoke(main, ["publish", night.compare_dir, "--delta", wh,
                                      "--label", "model=m8"])
    assert other.exit_code == 2 and "already holds" in other.output


def test_nightly_publish_args_publish_the_comparison(nights, tmp_path):
    root, night = nights
    wh = tmp_path / "wh"
    again = api.nightly(root, "/unused", run_date="2025-03-02", run_id="n2", config=CONFIG,
                        compare_options={"n_bootstrap": 200, "top": 2}, plot=False,
                        publish_options={"delta": str(wh)})
    assert again.exit_code == 1
    table = deltalake.DeltaTable(str(wh / "comparisons")).to_pandas()
    assert set(table["candidate_run_id"]) == {"n2"}
    assert (table["alarm_kind"] == "change").any()
    assert deltalake.DeltaTable(str(wh / "aggregates")).to_pandas()["run_id"].eq("n2").all()


def test_the_duckdb_query_of_the_docs_reads_the_alarms(nights, tmp_path):
    _, night = nights
    wh = tmp_path / "wh"
    assert CliRunner().invoke(main, ["publish", night.compare_dir, "--delta", str(wh),
                                     "--run-date", (date.today() - timedelta(days=1))
                                     .isoformat()]).exit_code == 0
    text = (REPO / "docs" / "warehouse.md").read_text()
    section = text.split("## The comparisons table", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    assert "/data/warehouse/comparisons" in block and "INSTALL" not in block
    scope: dict = {}
    exec(block.replace("/data/warehouse", str(wh)).replace("alarms.show()", ""), scope)  # noqa: S102
    got = scope["alarms"].df()
    doc = json.loads((Path(night.compare_dir) / "compare.json").read_text())
    want = sorted((a["group"], a["metric"], a["measure"], a["kind"]) for a in doc["alarms"])
    assert sorted(zip(got["group"], got["metric"], got["measure"], got["alarm_kind"],
                      strict=True)) == want
    assert np.all(got["candidate_run_id"] == "n2")
