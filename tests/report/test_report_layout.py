"""The report's tables fit a laptop window (issue 25, item 31), checked in headless Chromium.

The compare table was wider than a 1280-pixel window: the band column and those right of it
sat behind a scrollbar. Each table is laid out by Chromium in a window of that width and
must need no horizontal scrolling, with the longest REALSumm group names, a corpus measure,
a learned band and a row flagged three ways.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pipeline import api
from tests.support.browser import CHROMIUM, table_widths
from tests.support.hostile_runs import invoke
from tests.support.warehouse_runs import realsumm_inputs, score_run

pytestmark = [pytest.mark.slow,  # a browser start per table: the slow tier
              pytest.mark.skipif(CHROMIUM is None,
                                 reason="chromium is not installed (.ci/run installs it)")]
METRICS = ("rouge1", "rougeL", "bleu")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("layout")
    preds, refs = realsumm_inputs(root / "in", n=80)  # every system, the longest names
    frame = pd.read_parquet(preds)
    rows = frame.index[::2]
    frame.loc[rows, "prediction"] = [" ".join(t.split()[: max(1, len(t.split()) // 2)])
                                     for t in frame.loc[rows, "prediction"]]
    frame.to_parquet(root / "in" / "cand.parquet", index=False)
    base = score_run(preds, refs, root / "base", run_id="base", metrics=METRICS,
                     keep_text=True)
    cand = score_run(root / "in" / "cand.parquet", refs, root / "cand", run_id="cand",
                     metrics=METRICS, keep_text=True)
    return {"base": base, "cand": cand, "root": root}


def _fits(html: str, tmp_path) -> None:
    tables = table_widths(html, width=1280, work=tmp_path / "measure")
    assert any(t["header"].startswith("group|measure") for t in tables)
    for t in tables:
        assert t["window"] == 1280
        assert t["scroll"] <= t["client"], f"table {t['header']} scrolls: {t}"
        assert t["right"] <= t["window"], f"table {t['header']} passes the window: {t}"


def test_the_compare_table_fits_a_1280_pixel_window(runs, tmp_path):
    out = tmp_path / "report.html"
    result = invoke("report", runs["cand"], "--baseline", runs["base"], "--output", out)
    assert result.exit_code == 0, result.output
    _fits(out.read_text(), tmp_path)


def test_its_widest_cells_fit_too(runs, tmp_path):
    """A learned band and a row flagged ALARM MISSING DRIFT (their alarms listed)."""
    api.compare(str(runs["base"]), str(runs["cand"]), output=str(tmp_path / "cmp"))
    doc = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    longest = max((r for r in doc["rows"] if r["group"] != "all"),
                  key=lambda r: len(r["group"]))
    for r in doc["rows"]:
        r.update(band=0.016423, band_source="learned", history_nights=14)
    longest.update(alarm=True, missing=True, drift=True)
    doc["alarms"] = [a for a in doc["alarms"] if a["group"] != longest["group"]] + [
        {"group": longest["group"], "metric": None, "measure": None, "kind": "missing"},
        {"group": longest["group"], "metric": longest["metric"],
         "measure": longest["measure"], "kind": "change"}]
    doc["alarm"] = True
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "report.html"
    result = invoke("report", runs["cand"], "--comparison", path, "--output", out)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "ALARM MISSING DRIFT" in text
    _fits(text, tmp_path)
