"""compare's numbers read right (issue 25, item 28): the raw and adjusted p on one footing
with the tail estimate labelled, the alarm header's counts agreeing with the rows' flags, one
band precision (the bands and history wording: tests/compare/test_compare_history.py).

The table showed ``p 0.001`` beside ``p adj 0.000``: the adjusted value came from the normal
tail of the randomization distribution (the trials alone cannot go below 1/1001), the raw one
from the trials.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from pipeline import api
from pipeline.cli.compare import alarm_lines, format_table
from tests.support.warehouse_runs import cut_predictions, realsumm_inputs, score_run


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    root = tmp_path_factory.mktemp("reading")
    preds, refs = realsumm_inputs(root / "in", n=120)
    cut_predictions(preds, root / "in" / "cand.parquet")
    base = score_run(preds, refs, root / "base", run_id="base", metrics=("rouge1", "bleu"))
    cand = score_run(root / "in" / "cand.parquet", refs, root / "cand", run_id="cand",
                     metrics=("rouge1", "bleu"))
    return api.compare(str(base), str(cand), top=0)


def _cells(text: str) -> list[tuple[str, str]]:
    """(p, p adj) of each row of the table."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("group "))
    out = []
    for line in lines[head + 1:]:
        if not line or line.startswith(("band:", "p:")):
            break
        cells = re.split(r"\s{2,}", line.strip())
        out.append((cells[-6], cells[-5]))
    return out


def test_p_and_p_adjusted_on_one_footing(result):
    doc = result.to_document()
    rows = doc["rows"]
    tail = [r for r in rows if r["p_tail"] is not None]
    assert tail, "the cut candidate must reach past the trials on some row"
    for r in tail:  # the trials' bound, and the tail estimate below it that was adjusted
        assert r["p_value"] == pytest.approx(1 / 1001) and r["p_tail"] < r["p_value"]
    text = format_table(doc, mode="table")
    cells = _cells(text)
    assert len(cells) == len(rows)
    for (p, p_adj), r in zip(cells, rows, strict=True):
        assert p.startswith("~") == (r["p_tail"] is not None), (p, r)
        assert float(p.lstrip("~")) <= float(p_adj), (p, p_adj)  # adjusting never lowers p
        assert float(p.lstrip("~")) == pytest.approx(r["p_tail"] or r["p_value"], rel=5e-3)
    assert "p: ~ the normal-tail estimate" in text
    change = [line for line in alarm_lines(doc) if line.startswith("  change")]
    for line, a in zip(change, [a for a in doc["alarms"] if a["kind"] == "change"],
                       strict=True):
        r = next(r for r in rows if (r["group"], r["metric"], r["measure"])
                 == (a["group"], a["metric"], a["measure"]))
        assert ("(from the normal tail)" in line) == (r["p_tail"] is not None)


def test_the_html_table_shows_the_same_footing(result, tmp_path):
    from pipeline.report.build import _compare_section

    html = "".join(_compare_section(result, result.to_document()))
    assert "~" in html and "normal-tail estimate" in html
    assert ">0.000<" not in html  # an adjusted p is never shown as zero


def test_the_alarm_header_counts_agree_with_the_flags(result):
    doc = result.to_document()
    change = next(a for a in doc["alarms"] if a["kind"] == "change")
    for r in doc["rows"]:
        if (r["group"], r["metric"], r["measure"]) == (change["group"], change["metric"],
                                                      change["measure"]):
            r["drift"] = True  # it changed tonight and its chart drifts too
    header = alarm_lines(doc)[0]
    n_change = sum(a["kind"] == "change" for a in doc["alarms"])
    assert f"({n_change} change, 1 of them also drifting, 0 drift, 0 missing)" in header
    table = format_table(doc, mode="table")
    assert table.count("ALARM DRIFT") == 1


def test_bands_have_one_precision(result):
    doc = result.to_document()
    text = format_table(doc, mode="table")
    shown = [c for line in text.splitlines() for c in re.findall(r"band (\S+)", line)]
    shown += [re.split(r"\s{2,}", line.strip())[-4].removesuffix(" L").removesuffix(" F")
              for line in text.splitlines()
              if re.match(r"(all|system=)", line) and "[" in line]  # the band column
    assert shown and all(re.fullmatch(r"\d+\.\d{4}", s.rstrip(",")) for s in shown), shown


def test_one_nightly_output_counts_the_history_once(tmp_path):
    """A nightly on a short history said ``history: 2 nights ..., fewer than the 7`` in its
    note and ``band: static 0.01 (history: 2 of 7 nights)`` on every band line: the nights
    and the 7 needed are said once, and every count of nights in the output is the same."""
    import pyarrow.parquet as pq

    from tests.compare.test_nightly_issue25 import _night, _table

    predictions = tmp_path / "p.parquet"
    pq.write_table(_table(), predictions)
    for day in ("01", "02", "03"):
        night = _night(tmp_path / "nights", predictions, f"2025-01-{day}", "nightly")
        assert night.exit_code == 0, night.output
    out = night.output
    assert out.count("fewer than the 7") == 1 and "needed to learn" not in out, out
    assert " of 7 nights" not in out and "of the last" not in out
    assert set(re.findall(r"(\d+) nights?\b", out)) == {"2"}, out
    assert "band: static 0.0100 (too few nights to learn)" in out


def test_a_measure_line_names_the_bands_its_groups_used():
    """The line said ``band: floor 0.01`` while the groups' alarms used learned bands: the
    line names every band its rows used (hand-built rows: overall at the floor, two groups
    learned 0.0156 and 0.01926, one at the floor)."""
    from pipeline.compare.alarms import band_summary

    rows = pd.DataFrame({
        "group": ["all", "system=a", "system=b", "system=c"],
        "metric": ["rouge1"] * 4, "measure": ["fmeasure"] * 4,
        "band": [0.01, 0.0156, 0.01926, 0.01],
        "band_source": ["floor", "learned", "learned", "floor"],
        "history_nights": [14] * 4})
    assert band_summary(rows) == [
        "band: floor 0.0100, above the learned band (history: 14 nights); groups: learned "
        "0.0156 to 0.0193 in 2 of 3, floor 0.0100 in 1 of 3"]
    same = rows.assign(band=0.01, band_source="floor")
    assert band_summary(same) == [
        "band: floor 0.0100, above the learned band (history: 14 nights)"]
