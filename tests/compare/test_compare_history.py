"""Issue 17: the alarm learns from history (bands, drift, adjusted p, the alarms list).

Outside truth: statsmodels' multipletests for Holm and Benjamini-Hochberg; CUSUM, EWMA and the
median absolute deviation computed by hand from their textbook definitions.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.compare import (
    adjust_p_values,
    compare_runs,
    cusum,
    drift_rows,
    ewma,
    learn_bands,
    measure_floors,
)
from pipeline.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def _sim():
    spec = importlib.util.spec_from_file_location("simulate_nightly",
                                                  REPO / "scripts" / "simulate_nightly.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["simulate_nightly"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SIM = _sim()


# --- outside truth for the pure parts ---------------------------------------------------------

def multipletests(p, *, method: str):
    """statsmodels' ``multipletests``, without the full garbage collection its Holm method
    runs on every call (``gc.collect()``, 0.1-0.2 s each in a test session's heap: 2.4 of the
    4.7 CPU-s of the Holm test below, run alone); the values do not depend on it."""
    from statsmodels.stats.multitest import multipletests

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(gc, "collect", lambda *args: 0)
        return multipletests(p, method=method)


@pytest.mark.parametrize("ours, theirs", [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjusted_p_values_equal_statsmodels(ours, theirs):
    rng = np.random.default_rng(3)
    for _ in range(20):
        p = rng.uniform(0, 0.2, size=rng.integers(1, 40))
        p[rng.random(p.size) < 0.2] = 1 / 1001  # ties at the randomization floor
        expected = multipletests(p, method=theirs)[1]
        np.testing.assert_allclose(adjust_p_values(p, ours), expected, rtol=0, atol=1e-12)
    with_nan = np.array([0.01, np.nan, 0.04, 0.03])
    got = adjust_p_values(with_nan, ours)
    assert np.isnan(got[1])
    np.testing.assert_allclose(got[[0, 2, 3]],
                               multipletests([0.01, 0.04, 0.03], method=theirs)[1])
    assert np.array_equal(adjust_p_values(with_nan, "none"), with_nan, equal_nan=True)
    with pytest.raises(ConfigError):
        adjust_p_values(with_nan, "bonferroni")


def test_cusum_by_hand():
    # C+_t = max(0, C+_{t-1} + x_t - k), C-_t = max(0, C-_{t-1} - x_t - k), k = 0.5, sd 1
    upper, lower = cusum(np.array([0.0, 1.0, 2.0, -1.0, -3.0]), target=0.0, sd=1.0)
    np.testing.assert_allclose(upper, [0.0, 0.5, 2.0, 0.5, 0.0])
    np.testing.assert_allclose(lower, [0.0, 0.0, 0.0, 0.5, 3.0])
    # standardized: target 10, sd 2 gives the same chart for 10 + 2 x
    u2, l2 = cusum(10 + 2 * np.array([0.0, 1.0, 2.0, -1.0, -3.0]), target=10.0, sd=2.0)
    np.testing.assert_allclose(u2, upper) and np.testing.assert_allclose(l2, lower)


def test_ewma_by_hand():
    # z_t = 0.2 x_t + 0.8 z_{t-1}, z_0 = 0; limit 3 sqrt(0.2/1.8 (1 - 0.8^(2t)))
    z, limit = ewma(np.array([1.0, 1.0, 0.0]), target=0.0, sd=1.0)
    np.testing.assert_allclose(z, [0.2, 0.36, 0.288])
    np.testing.assert_allclose(limit, [3 * np.sqrt(0.2 / 1.8 * (1 - 0.8 ** (2 * t)))
                                       for t in (1, 2, 3)])
    np.testing.assert_allclose(limit[0], 0.6)


def test_learned_band_by_hand():
    changes = np.array([1, 2, 3, 4, 5, 6]) * 0.001        # 7 nights
    series = np.concatenate([[0.4], 0.4 + np.cumsum(changes)])
    # median change 0.0035; |c - 0.0035| = 2.5, 1.5, .5, .5, 1.5, 2.5 (e-3); median 1.5e-3
    sd = 1.4826 * 0.0015
    bands = learn_bands(series[None, :], np.array([0.01]), multiplier=5.0)
    assert bands.source[0] == "learned" and bands.nights[0] == 7
    np.testing.assert_allclose(bands.band[0], 5 * sd)
    floor = learn_bands(series[None, :], np.array([0.012]), multiplier=5.0)
    assert floor.source[0] == "floor" and floor.band[0] == 0.012
    # a night without a value is skipped; 6 nights are too few: static
    gap = series.copy()
    gap[3] = np.nan
    static = learn_bands(gap[None, :], np.array([0.01]))
    assert static.source[0] == "static" and static.band[0] == 0.01 and static.nights[0] == 6
    none = learn_bands(np.empty((1, 0)), np.array([0.01]))
    assert none.source[0] == "static" and none.nights[0] == 0


def test_floors_follow_each_measures_scale():
    floors = measure_floors(["rougeL.fmeasure", "bleu.score"], [1.0, 100.0], band=0.01)
    assert floors == {"rougeL.fmeasure": 0.01, "bleu.score": 1.0}
    floors = measure_floors(["rougeL.fmeasure", "bleu.score"], [1.0, 100.0], band=0.01,
                            bands={"rougeL.fmeasure": 0.005, "bleu.score": 0.5})
    assert floors == {"rougeL.fmeasure": 0.005, "bleu.score": 0.5}
    with pytest.raises(ConfigError, match="chrf.score"):
        measure_floors(["rougeL.fmeasure"], [1.0], band=0.01, bands={"chrf.score": 1.0})
    with pytest.raises(ConfigError):
        measure_floors(["rougeL.fmeasure"], [1.0], band=-0.01)


@pytest.mark.parametrize("method", ["cusum", "ewma"])
def test_drift_chart_is_calibrated_and_sees_a_slow_drift(method):
    rng = np.random.default_rng(5)
    rows = 4000
    x = rng.standard_normal((rows, 15))
    null = drift_rows(x[:, :14], x[:, 14], np.zeros(rows), method=method, adjust="none")
    # no drift: a row alarms at about the level (here 5%), not the 13% of textbook limits
    assert 0.03 < null.alarm.mean() < 0.07
    assert np.isfinite(null.p_value).all()
    # a drift of 0.5 sd a night for the last 8 nights, each change well inside 3 sds
    ramp = np.maximum(0, np.arange(15) - 6) * 0.5
    drifted = drift_rows(x[:200, :14] - ramp[:14], x[:200, 14] - ramp[14], np.zeros(200),
                         method=method, adjust="none")
    assert drifted.alarm.mean() > 0.9 and (drifted.statistic[drifted.alarm] < 0).all()
    # too few nights: no chart
    short = drift_rows(x[:3, :6], x[:3, 6], np.zeros(3), method=method)
    assert not short.alarm.any() and np.isnan(short.statistic).all()


# --- a nightly ROOT of real texts ---------------------------------------------------------------

@pytest.fixture(scope="module")
def suite():
    return SIM.build_suite(groups=3, docs=40, drop=0.3)


def _nights(root: Path, suite, count: int, *, seed: int = 0, plan=None) -> list[Path]:
    plan = plan or SIM.Plan(nights=count, missing_night=10_000, step_night=10_000,
                            drift_night=10_000)
    rng = np.random.default_rng(seed)
    return [SIM.write_night(root, f"2026-01-{t + 1:02d}", f"n{t:02d}",
                            SIM.night_frame(suite, plan, t, rng)) for t in range(count)]


def test_static_band_until_seven_nights_then_learned(tmp_path, suite):
    runs = _nights(tmp_path, suite, 10)
    early = compare_runs(str(runs[3]), str(runs[4]), history=str(tmp_path), n_bootstrap=100,
                         top=0)
    # nights before the candidate: 4 (n00..n03)
    # the history's note counts the nights against the 7 needed; the band lines do not again
    assert early.bands == ["rouge1.fmeasure: band: static 0.0100 (too few nights to learn)",
                           "rougeL.fmeasure: band: static 0.0100 (too few nights to learn)"]
    assert [n for n in early.notes if "fewer than the 7" in n][0].startswith(
        "history: 4 nights under")
    rows = early.comparison.rows
    assert (rows["band_source"] == "static").all() and (rows["band"] == 0.01).all()
    late = compare_runs(str(runs[8]), str(runs[9]), history=str(tmp_path), n_bootstrap=100,
                        top=0, history_window=7)
    rows = late.comparison.rows
    assert set(rows["band_source"]) <= {"learned", "floor"}
    assert (rows["history_nights"] == 7).all()
    # the learned band is 4 x 1.4826 x MAD of the history's changes, recomputed here by hand
    values = pd.concat([pq.read_table(r / "aggregate.parquet").to_pandas().assign(night=k)
                        for k, r in enumerate(runs[2:9])])
    for r in rows.itertuples():
        sel = values[(values["metric"] == r.metric) & (
            values["scope"] == "all" if r.group == "all" else
            values["system"] == r.group.split("=", 1)[1])]
        c = np.diff(sel.sort_values("night")["mean"].to_numpy())
        learned = 4.0 * 1.4826 * np.median(np.abs(c - np.median(c)))
        assert r.band == pytest.approx(max(learned, 0.01), rel=1e-9)
        assert r.band_source == ("learned" if learned > 0.01 else "floor")
    assert late.to_document()["history"]["nights"][0]["run_id"] == "n02"
    _reads_right(late)


def _reads_right(result):
    """Issue 25, item 28: every band an alarm used is on its measure's line, at one
    precision, and the history is counted in one wording."""
    import re

    from pipeline.cli.compare import format_table

    doc = result.to_document()
    rows = result.comparison.rows
    for line, (metric, measure) in zip(doc["bands"], rows.loc[rows["group"] == "all",
                                                              ["metric", "measure"]].values,
                                       strict=True):
        mine = rows[(rows["metric"] == metric) & (rows["measure"] == measure)]
        for band in mine["band"]:
            assert f"{band:.4f}" in line or any(  # within a range "lo to hi" of the line
                float(lo) <= round(band, 4) <= float(hi)
                for lo, hi in re.findall(r"(\d\.\d{4}) to (\d\.\d{4})", line)), (band, line)
        for source in set(mine["band_source"]):
            assert source in line
    text = format_table(doc, mode="table")
    assert re.findall(r"\b\d+\.\d+\b", " ".join(doc["bands"])) == re.findall(
        r"\b\d+\.\d{4}\b", " ".join(doc["bands"]))  # one precision: four decimals
    counts = set(re.findall(r"(\d+) nights?\b", text))
    assert counts == {str(len(doc["history"]["nights"]))}, counts
    assert " of 7 nights" not in text and "of the last" not in text


def test_compare_json_and_parquet_carry_bands_adjusted_p_and_alarms(tmp_path, suite):
    runs = _nights(tmp_path / "root", suite, 9)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["compare", str(runs[7]), str(runs[8]), "--history",
                                       str(tmp_path / "root"), "--n-bootstrap", "100",
                                       "--output", str(out), "--band",
                                       "rouge1.fmeasure=0.0001", "--top", "0"])
    assert result.exit_code in (0, 1), result.output
    doc = json.loads((out / "compare.json").read_text())
    assert doc["settings"]["adjust"] == "holm"
    assert doc["settings"]["band_floors"] == {"rouge1.fmeasure": 0.0001,
                                              "rougeL.fmeasure": 0.01}
    rows = pd.DataFrame(doc["rows"])
    np.testing.assert_allclose(rows["p_adjusted"], multipletests(rows["p_value"],
                                                                 method="holm")[1])
    table = pq.read_table(out / "compare.parquet").to_pandas()
    for col in ("band", "band_source", "p_adjusted", "history_nights", "drift", "drift_p"):
        assert col in table.columns
    assert list(table["band"]) == list(rows["band"])
    for a in doc["alarms"]:
        assert set(a) == {"group", "metric", "measure", "kind"}
        assert a["kind"] in ("change", "drift", "missing")
    assert (result.exit_code == 1) == bool(doc["alarms"])


def test_alarms_are_listed_in_reading_order():
    from pipeline.compare import alarm_list

    rows = pd.DataFrame({
        "group": ["all", "all", "s=a", "s=a", "s=b", "s=b"],
        "metric": ["r1", "rL"] * 3, "measure": ["fmeasure"] * 6,
        "delta": [0.02, 0.0, 0.05, 0.011, 0.0, 0.0], "band": [0.01] * 6,
        "alarm": [True, False, True, True, False, False],
        "missing": [False, False, False, False, True, True],
        "drift": [False, True, False, False, False, False],
        "drift_p": [np.nan, 0.001, np.nan, np.nan, np.nan, np.nan],
    })
    assert [(a["kind"], a["group"], a["metric"]) for a in alarm_list(rows)] == [
        ("missing", "s=b", None), ("change", "all", "r1"), ("change", "s=a", "r1"),
        ("change", "s=a", "rL"), ("drift", "all", "rL")]


# --- issue 19 items in compare --------------------------------------------------------------

def test_json_output_escapes_bidi_controls(tmp_path):
    # issue 19: `--format json` printed a raw U+202E from a group value
    from tests.compare.test_compare_fixtures import realsumm, score, write_run

    frame = score(realsumm().head(40).reset_index(drop=True), metrics=("rouge1",))
    frame["system"] = ["evil\u202eevil" if i % 2 else "plain" for i in range(len(frame))]
    base = write_run(tmp_path / "b", frame, run_id="b", group_by=("system",),
                     metrics=("rouge1",))
    cand = write_run(tmp_path / "c", frame, run_id="c", group_by=("system",),
                     metrics=("rouge1",))
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--format", "json",
                                       "--n-bootstrap", "50"])
    assert result.exit_code == 0, result.output
    assert "\u202e" not in result.stdout and "evil\\u202eevil" in result.stdout
    assert any(r["group"] == "system=evil\u202eevil" for r in json.loads(result.stdout)["rows"])


def test_a_new_metric_is_a_note_and_a_changed_stemmer_still_refuses(tmp_path):
    from tests.compare.test_compare_fixtures import METRICS, realsumm, score, signature, write_run

    frame = score(realsumm().head(60).reset_index(drop=True))
    base = write_run(tmp_path / "b", frame, run_id="b")
    config = {"id_column": "id", "group_by": [], "metrics": [*METRICS, "bleu"]}
    with_bleu = signature(metrics=(*METRICS, "bleu"))
    added = write_run(tmp_path / "c", frame, run_id="c", sig=with_bleu,
                      manifest_extra={"config": config})
    ok = CliRunner().invoke(main, ["compare", str(base), str(added), "--n-bootstrap", "50"])
    assert ok.exit_code == 0, ok.output
    assert "metrics: rouge1+rouge2+rougeL+rougeLsum vs rouge1+rouge2+rougeL+rougeLsum+bleu" \
        in ok.stderr and "which no compared measure depends on" in ok.stderr
    stemmed = write_run(tmp_path / "d", frame, run_id="d",
                        sig=with_bleu.replace("stem:none", "stem:porter"),
                        manifest_extra={"config": config})
    refused = CliRunner().invoke(main, ["compare", str(base), str(stemmed)])
    assert refused.exit_code == 2 and "stem: none vs porter" in refused.output
    assert "metrics:" not in refused.output


# --- the simulation (issue 17's outside check on real texts) -----------------------------------

@pytest.mark.slow
def test_sixty_nights_simulation(tmp_path, suite):
    plan = SIM.Plan(nights=60)
    sim = SIM.simulate(suite=suite, plan=plan, root=tmp_path, seed=1, n_bootstrap=200)
    summary = SIM.summarize(sim)["alarms"]
    null = summary["null_nights"]
    assert null >= 25
    assert len(summary["false_alarm_nights"]) <= 0.05 * null, summary
    assert summary["missing_first"].startswith(f"{plan.missing_night} ")
    assert summary["step_first"].startswith(f"{plan.step_night} ")
    first_drift = int(summary["drift_first"].split()[0])
    assert plan.drift_night <= first_drift <= plan.drift_night + 10, summary


def test_adjusted_p_is_not_bounded_by_the_trials_and_many_groups_still_alarm():
    from math import erfc, sqrt

    from pipeline.compare import compare_examples
    from pipeline.compare.statistics import paired_test

    rng = np.random.default_rng(8)
    base = rng.uniform(0.3, 0.5, 400)
    cand = base - 0.02 + rng.normal(0, 0.01, 400)
    test = paired_test(base, cand, n_bootstrap=200, seed=1)
    assert test.p_value[0] == 1 / 201  # no trial as extreme
    d = cand - base
    by_hand = erfc(abs(d.mean()) / (np.sqrt((d * d).sum()) / d.size) / sqrt(2))
    assert test.p_refined[0] == pytest.approx(by_hand, rel=1e-6) and by_hand < 1e-50
    # 200 groups of two: Holm over 201 rows needs p < 0.05 / 201, below 1 / 201 trials
    frame = pd.DataFrame({"id": np.arange(400), "g": np.arange(400) // 2,
                          "rouge1_fmeasure": base})
    moved = frame.assign(rouge1_fmeasure=cand)
    result = compare_examples(frame, moved, measures=["rouge1.fmeasure"], group_columns=["g"],
                              n_bootstrap=200)
    overall = result.rows.iloc[0]
    assert overall["group"] == "all" and overall["alarm"]
    # Holm over the raw randomization p-values could never alarm here
    assert overall["p_adjusted"] < 0.05 <= overall["p_value"] * 201


def test_report_shows_the_comparisons_verdict_and_the_trend(tmp_path, suite):
    # issue 17: the report read no compare setting and judged with |delta| > 0.01 beside a
    # compare.json alarming with --band 0.005; now it shows compare.json's own verdict
    from pipeline import api

    root = tmp_path / "root"
    plan = SIM.Plan(nights=10, missing_night=10_000, drift_night=10_000, step_night=9)
    runs = _nights(root, suite, 10, plan=plan)
    out = tmp_path / "cmp"
    result = api.compare(str(runs[8]), str(runs[9]), output=str(out), history=str(root),
                         n_bootstrap=100, bands={"rouge1.fmeasure": 0.0005})
    doc = json.loads((out / "compare.json").read_text())
    assert doc["alarms"] and result.alarm
    html = (tmp_path / "r.html")
    api.report(str(runs[9]), output=str(html), comparison=str(out / "compare.json"), top=2)
    text = html.read_text()
    verdict = text.index('class="verdict alarm"')
    assert verdict < text.index("<h2>This run</h2>")
    for a in doc["alarms"]:
        assert f"{a['kind']}: {a['group']}" in text
    assert text.count('class="verdict') == 1
    # issue 24: a panel per measure overall, and per measure of each group that alarmed
    alarmed = {a["group"] for a in doc["alarms"]}
    panels = [r for r in doc["rows"] if r["group"] == "all" or r["group"] in alarmed]
    assert "<h2>Nightly trend</h2>" in text and text.count("<polyline") == len(panels)
    assert text.count("<figcaption>overall ") == 2
    assert "band: learned" in text or "band: floor" in text
    # the comparison of another run is refused
    with pytest.raises(Exception, match="not this run"):
        api.report(str(runs[8]), output=str(html), comparison=str(out / "compare.json"))


def test_history_from_the_published_aggregates_tables(tmp_path, suite):
    # issue 17: a warehouse user keeps the history in the aggregates table of overlap publish
    from pipeline import api
    from pipeline.compare import read_history, read_history_table
    from pipeline.io.runs import open_run

    root = tmp_path / "root"
    runs = _nights(root, suite, 4)
    catalog = f"sqlite:///{tmp_path / 'catalog.db'}"
    for t, r in enumerate(runs[:3]):
        api.publish(str(r), delta=str(tmp_path / "wh"), iceberg=catalog, namespace="evals",
                    warehouse=str(tmp_path / "iceberg"), run_date=f"2026-01-{t + 1:02d}")
    candidate = open_run(str(runs[3]))
    from_root = read_history(str(root), candidate=candidate, window=14)
    keys = from_root.nights[0].values[["group", "metric", "measure", "statistic"]]
    for table in (read_history_table(delta=str(tmp_path / "wh"), candidate=candidate,
                                     window=14),
                  read_history_table(iceberg=catalog, namespace="evals", candidate=candidate,
                                     window=14)):
        assert [n.run_id for n in table.nights] == ["n00", "n01", "n02"]
        np.testing.assert_array_equal(table.series(keys), from_root.series(keys))
    result = compare_runs(str(runs[2]), str(runs[3]), n_bootstrap=50, top=0,
                          history=read_history_table(delta=str(tmp_path / "wh"),
                                                     candidate=candidate, window=14))
    assert (result.comparison.rows["history_nights"] == 3).all()


def test_alarms_only_output_and_a_pinned_reference(tmp_path, suite):
    plan = SIM.Plan(nights=10, missing_night=10_000, drift_night=10_000, step_night=9)
    runs = _nights(tmp_path / "root", suite, 10, plan=plan)
    args = ["compare", str(runs[8]), str(runs[9]), "--history", str(tmp_path / "root"),
            "--n-bootstrap", "100"]
    alarms = CliRunner().invoke(main, [*args, "--format", "alarms"])
    assert alarms.exit_code == 1
    lines = alarms.stdout.splitlines()
    assert lines[0].startswith("ALARM: ") and all(line.startswith("  ") for line in lines[1:])
    doc = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).stdout)
    assert len(lines) == 1 + len(doc["alarms"])
    summary = CliRunner().invoke(main, args).stdout
    assert summary.splitlines()[:len(lines)] == lines  # the verdict and alarms come first
    assert "only b/c" not in summary  # no full table ...
    assert "only b/c" in CliRunner().invoke(main, [*args, "--format", "table"]).stdout  # here
    # a pinned reference: the step group's drift chart measures from that run's level
    pinned = compare_runs(str(runs[8]), str(runs[9]), history=str(tmp_path / "root"),
                          reference_run=str(runs[0]), n_bootstrap=100, top=0)
    assert pinned.to_document()["history"]["reference_run"] == str(runs[0])
    rows = pinned.comparison.rows
    assert np.isfinite(rows["drift_p"]).all()
    with pytest.raises(ConfigError, match="needs --history"):
        compare_runs(str(runs[8]), str(runs[9]), reference_run=str(runs[0]), top=0)


def test_a_step_is_one_change_alarm_not_also_a_drift():
    from pipeline.compare import alarm_list

    rows = pd.DataFrame({"group": ["all"], "metric": ["r1"], "measure": ["fmeasure"],
                         "delta": [0.05], "band": [0.01], "alarm": [True],
                         "missing": [False], "drift": [True], "drift_p": [0.001]})
    assert alarm_list(rows) == [{"group": "all", "metric": "r1", "measure": "fmeasure",
                                 "kind": "change"}]
