"""`overlap report` checked in a real browser (headless Chromium), and `overlap explain RUN_DIR`.

The browser tests skip when Chromium is not installed (`.ci/run` installs Debian's
`chromium`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.compare import compare_runs
from tests.support.warehouse_runs import realsumm_inputs, reseal, score_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A baseline run (texts kept) and a candidate whose every 2nd prediction is cut to a
    quarter (texts read from its inputs), 60 REALSumm examples grouped by system."""
    root = tmp_path_factory.mktemp("report")
    preds, refs = realsumm_inputs(root / "in", n=60)
    frame = pd.read_parquet(preds)
    cut = frame.index[::2]
    frame.loc[cut, "prediction"] = [" ".join(t.split()[: max(1, len(t.split()) // 4)])
                                    for t in frame.loc[cut, "prediction"]]
    frame.to_parquet(root / "in" / "cand.parquet", index=False)
    base = score_run(preds, refs, root / "base", run_id="base", metrics=METRICS,
                     keep_text=True)
    cand = score_run(root / "in" / "cand.parquet", refs, root / "cand", run_id="cand",
                     metrics=METRICS)
    report = root / "report.html"
    result = CliRunner().invoke(main, ["report", str(cand), "--baseline", str(base),
                                       "--output", str(report), "--top", "4"])
    assert result.exit_code == 0, result.output
    return {"base": base, "cand": cand, "report": report, "root": root}


def chromium(*args: str, user_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={user_dir}", *args],
        capture_output=True, text=True, timeout=120)


def page_requests(net_log: Path) -> list[str]:
    """URLs the page asked for (the browser's own update and account checks have no origin)."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in log["events"]
            if e["type"] == start and "url" in e.get("params", {})
            and e["params"].get("initiator") != "not an origin"
            and not e["params"]["url"].startswith(("file:", "data:"))]


def test_report_is_self_contained_html(runs):
    text = runs["report"].read_text()
    assert "<script" not in text.lower()
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    # the only URL is the SVG namespace (an identifier, never fetched)
    urls = set(re.findall(r"(?:https?:)?//[\w.-]+[^\s\"'<>)]*", text))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?!data:|#)""", text)
    # the tables follow the run's metrics, with the compare table's alarms marked
    cmp = compare_runs(str(runs["base"]), str(runs["cand"]), top=4)
    n_alarms = int(cmp.comparison.rows["alarm"].sum())
    assert n_alarms > 0  # cutting half the predictions to a quarter must alarm
    assert text.count('<tr class="alarm">') == n_alarms
    for metric in METRICS:
        assert f"{metric}.fmeasure" in text
    assert text.count('<section class="example">') == 4
    assert "<mark" in text
    assert text.count("<svg") == len(METRICS) * 3 + len(METRICS)  # values, then deltas


def test_report_without_baseline_and_bad_input(runs, tmp_path):
    out = tmp_path / "plain.html"
    result = CliRunner().invoke(main, ["report", str(runs["base"]), "--output", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "Against the baseline" not in text and "<table>" in text
    broken = tmp_path / "broken"
    shutil.copytree(runs["base"], broken)
    (broken / "_SUCCESS").unlink()
    result = CliRunner().invoke(main, ["report", str(broken), "--output", str(tmp_path / "x")])
    assert result.exit_code == 2 and "_SUCCESS" in result.output
    assert not (tmp_path / "x").exists()
    assert CliRunner().invoke(main, ["report", "--help"]).exit_code == 0


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_report_renders_in_headless_chromium_without_network(runs, tmp_path):
    from PIL import Image

    url = runs["report"].as_uri()
    shot, net = tmp_path / "shot.png", tmp_path / "net.json"
    done = chromium("--window-size=1280,2000", f"--screenshot={shot}", f"--log-net-log={net}",
                    url, user_dir=tmp_path / "profile1")
    assert shot.is_file(), done.stderr
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=np.float64)
    assert pixels.shape == (2000, 1280)
    assert (pixels < 200).mean() > 0.02  # text, tables and bars, not a blank page
    assert pixels.std() > 20
    assert page_requests(net) == []

    dom = chromium("--dump-dom", url, user_dir=tmp_path / "profile2").stdout
    assert "Against the baseline" in dom and "Examples that moved most" in dom
    assert dom.count("<mark") > 10
    assert dom.count('<tr class="alarm">') > 0
    assert dom.count("<table>") >= 3

    # printable: Chromium prints it to a PDF of several pages
    pdf = tmp_path / "report.pdf"
    chromium("--no-pdf-header-footer", f"--print-to-pdf={pdf}", url,
             user_dir=tmp_path / "profile4")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and data.count(b"/Type /Page\n") + data.count(
        b"/Type/Page") + data.count(b"/Type /Page ") >= 1

    # the check above would see a page that loads something: a control page does
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><p>x</p><img src="http://127.0.0.2:9/x.png">')
    net2 = tmp_path / "net2.json"
    chromium("--dump-dom", f"--log-net-log={net2}", control.as_uri(),
             user_dir=tmp_path / "profile3")
    assert page_requests(net2) == ["http://127.0.0.2:9/x.png"]


def test_explain_an_example_of_a_run(runs):
    """Texts from the inputs (the candidate did not keep them) and the run's settings; the
    statistics equal the run's own columns."""
    examples = pq.read_table(runs["cand"] / "examples").to_pandas().set_index("id")
    ident = examples.index[0]
    result = CliRunner().invoke(main, ["explain", str(runs["cand"]), "--id", ident,
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["settings"]["metrics"] == list(METRICS)
    for metric in METRICS:
        for stat in ("matches", "prediction_units", "reference_units"):
            assert doc["metrics"][metric]["statistics"][stat] \
                == examples.loc[ident, f"{metric}_{stat}"]
    missing = CliRunner().invoke(main, ["explain", str(runs["cand"]), "--id", "nope"])
    assert missing.exit_code == 2 and "nope" in missing.output


def test_report_follows_the_metrics_the_run_holds(runs, tmp_path):
    """A metric the report has never heard of (a BLEU-like `bleu.score` on a 0-100 scale) gets
    its table row and histogram from the run's columns."""
    import pyarrow as pa

    run = tmp_path / "run"
    shutil.copytree(runs["base"], run)
    for part in (run / "examples").glob("part-*.parquet"):
        table = pq.read_table(part)
        values = np.linspace(0, 80, table.num_rows)
        pq.write_table(table.append_column("bleu_score", pa.array(values)), part)
    agg = pq.read_table(run / "aggregate.parquet").to_pandas()
    extra = agg[(agg["scope"] == "all") & (agg["metric"] == "rouge1")
                & (agg["measure"] == "fmeasure")].copy()
    extra[["metric", "measure", "mean", "ci_low", "ci_high"]] = ["bleu", "score", 40.0, 35.0,
                                                                 45.0]
    pd.concat([agg, extra]).to_parquet(run / "aggregate.parquet", index=False)
    reseal(run)  # an edited run is refused unless its manifest records the files as they are
    out = tmp_path / "r.html"
    assert CliRunner().invoke(main, ["report", str(run), "--output", str(out)]).exit_code == 0
    text = out.read_text()
    assert "<td class=\"l\">bleu</td>" in text and "40.0000 [35.0000, 45.0000]" in text
    assert 'aria-label="bleu.score: histogram of 60 values"' in text
    assert re.search(r">80</text></svg><figcaption>bleu\.score", text)


def test_runs_of_other_metric_families_publish_and_report(tmp_path):
    """BLEU, chrF and ROUGE in one run: the tables get every column of the run, the report
    every metric, and explain explains exactly the run's metrics."""
    pytest.importorskip("deltalake")
    import deltalake

    from pipeline import api

    preds, refs = realsumm_inputs(tmp_path / "in", n=20)
    run = score_run(preds, refs, tmp_path / "run", run_id="fam",
                    metrics=("bleu", "chrf", "rouge1"))
    names = pq.read_schema(next((run / "examples").glob("*.parquet"))).names
    family_columns = [c for c in names if c.startswith(("bleu_", "chrf_"))]
    assert family_columns
    api.publish(str(run), delta=str(tmp_path / "wh"))
    table = deltalake.DeltaTable(str(tmp_path / "wh" / "examples")).to_pyarrow_table()
    assert set(family_columns) <= set(table.column_names) and table.num_rows == 20
    api.report(str(run), output=str(tmp_path / "r.html"))
    text = (tmp_path / "r.html").read_text()
    for metric in ("bleu", "chrf", "rouge1"):
        assert f'<td class="l">{metric}</td>' in text
    ident = pd.read_parquet(preds)["id"].iloc[0]
    assert list(api.explain(run_dir=str(run), example_id=ident).metrics) == ["bleu", "chrf",
                                                                             "rouge1"]


@pytest.mark.parametrize("metric", ["token_f1", "chrf"])
def test_moved_examples_of_any_family_are_marked_by_its_explanation(tmp_path, metric):
    """The report marks, in the moved candidate prediction, exactly the units the family's
    explanation matched in the reference shown (before: only ROUGE metrics were marked)."""
    import html

    from pipeline import explain

    preds, refs = realsumm_inputs(tmp_path / "in", n=12)
    frame = pd.read_parquet(preds)
    frame["prediction"] = [" ".join(t.split()[: max(1, len(t.split()) // 3)])
                           for t in frame["prediction"]]
    frame.to_parquet(tmp_path / "in" / "cand.parquet", index=False)
    base = score_run(preds, refs, tmp_path / "base", run_id="b", metrics=(metric,))
    cand = score_run(tmp_path / "in" / "cand.parquet", refs, tmp_path / "cand", run_id="c",
                     metrics=(metric,), keep_text=True)
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", str(cand), "--baseline", str(base),
                                       "--output", str(out), "--top", "1"])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    ident = re.search(r"<h3>1\. id = (.+?)(, system = .*?)?: ", text).group(1)
    section = text[text.index("<h3>1. id"):]
    para = re.search(r'this run prediction</div><p class="text">(.*?)</p>', section).group(1)
    marked = [html.unescape(m) for m in re.findall(r'<mark class="cand">(.*?)</mark>', para)]
    cand_text = frame.set_index("id").loc[ident, "prediction"]
    references = pd.read_parquet(refs)
    references = references[references["id"].astype(str) == ident]["reference"].tolist()
    m = explain(cand_text, references, metrics=(metric,)).metrics[metric]
    pair = m.pair(max(m.reference_index, 0))
    want = [cand_text[a:b] for a, b in (m.prediction.spans[p] for p in
                                        pair.prediction_positions)]
    assert marked == want and marked
