"""Issue 24 (failure 10, the report's trend): a panel per alarmed group, red marks on the
nights that alarmed (from the history's own comparisons), the band around the reference."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline import api
from pipeline.config import ScoreConfig
from tests.compare.test_compare_fixtures import realsumm

CONFIG = ScoreConfig(metrics=("rouge1",), bootstrap=0, engine="local", keep_text=True,
                     group_by=("system",))
OPTS = {"n_bootstrap": 200, "top": 1}


def _predictions(path: Path, frame: pd.DataFrame, *, seed: int,
                 cut: str | None = None) -> str:
    rng = np.random.default_rng(seed)
    out = frame[["id", "prediction", "system"]].copy()
    out["references"] = [[r] for r in frame["reference"]]
    out["prediction"] = [" ".join(w for w in t.split() if rng.random() > 0.03)
                         for t in out["prediction"]]
    if cut is not None:
        hit = out["system"] == cut
        out.loc[hit, "prediction"] = [" ".join(t.split()[:8]) for t in out.loc[hit, "prediction"]]
    out.to_parquet(path)
    return str(path)


@pytest.fixture(scope="module")
def nightly_root(tmp_path_factory):
    """Five nights: night 3 cut system s1 (an alarm), tonight (night 5) cuts system s2."""
    tmp = tmp_path_factory.mktemp("trend")
    frame = realsumm().head(90).reset_index(drop=True)
    frame["system"] = [f"s{i % 3}" for i in range(len(frame))]
    root = str(tmp / "root")
    codes = []
    for t in range(5):
        cut = {2: "s1", 4: "s2"}.get(t)
        night = api.nightly(root, _predictions(tmp / f"p{t}.parquet", frame, seed=t, cut=cut),
                            run_date=f"2025-04-0{t + 1}", run_id=f"n{t}", config=CONFIG,
                            compare_options=OPTS, plot=False)
        codes.append(night.exit_code)
    assert codes == [0, 0, 1, 1, 1]  # night 4 alarms too: s1 came back
    return tmp, night


def _figures(html: str) -> dict[str, str]:
    """Each trend figure's SVG by its caption's first words (e.g. 'system=s2 rouge1.fmeasure')."""
    trend = html.split("<h2>Nightly trend</h2>", 1)[1].split("<h2>", 1)[0]
    out = {}
    for svg, caption in re.findall(r"<figure>(<svg.*?</svg>)<figcaption>(.*?)</figcaption>",
                                   trend, flags=re.S):
        out[caption.split(":")[0]] = svg
    return out


def _red_nights(svg: str) -> list[str]:
    return re.findall(r'fill="#b3261e"><title>([^:<]+):', svg)


def test_the_trend_has_a_panel_per_alarmed_group_with_its_red_nights(nightly_root):
    tmp, night = nightly_root
    out = tmp / "report.html"
    api.report(night.run_dir, output=str(out), comparison=f"{night.compare_dir}/compare.json")
    figures = _figures(out.read_text())
    assert set(figures) == {"overall rouge1.fmeasure", "system=s2 rouge1.fmeasure"}
    # tonight's alarm on s2; nights 3 and 4 alarmed on s1 (their own compare.json)
    assert _red_nights(figures["system=s2 rouge1.fmeasure"]) == ["tonight"]
    assert _red_nights(figures["overall rouge1.fmeasure"]) == ["2025-04-03", "2025-04-04",
                                                               "tonight"]
    everything = tmp / "all.html"
    api.report(night.run_dir, output=str(everything), trend_groups="all",
               comparison=f"{night.compare_dir}/compare.json")
    figures = _figures(everything.read_text())
    assert len(figures) == 4
    assert _red_nights(figures["system=s1 rouge1.fmeasure"]) == ["2025-04-03", "2025-04-04"]
    assert _red_nights(figures["system=s0 rouge1.fmeasure"]) == []


def test_the_band_is_drawn_around_the_reference_not_over_the_chart(nightly_root):
    tmp, night = nightly_root
    out = tmp / "band.html"
    api.report(night.run_dir, output=str(out), comparison=f"{night.compare_dir}/compare.json")
    svg = _figures(out.read_text())["overall rouge1.fmeasure"]
    height = 150 - 18
    rect = re.search(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', svg)
    x0, y0, w, h = map(float, rect.groups())
    assert 0 < h < 0.5 * height  # a strip, not the whole chart (a 0.01 band here)
    xs = sorted({float(c) for c in re.findall(r'<circle cx="([\d.]+)"', svg)})
    assert x0 == pytest.approx(xs[-2], abs=0.2) and x0 + w > xs[-1]  # tonight's step only
    ys = [float(c) for c in re.findall(r'<circle cx="[\d.]+" cy="([\d.]+)"', svg)]
    assert max(ys) - min(ys) > 0.6 * height  # the scale is the nights', not the band's
    import json

    doc = json.loads((Path(night.compare_dir) / "compare.json").read_text())
    row = next(r for r in doc["rows"] if r["group"] == "all")
    title = re.search(r"<title>band: ([\d.]+) \+/- ([\d.]+)</title>", svg)
    assert float(title.group(1)) == pytest.approx(row["baseline_mean"], rel=1e-3)
    assert float(title.group(2)) == pytest.approx(row["band"], rel=1e-3)
