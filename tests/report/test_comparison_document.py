"""`report --comparison`: the comparison document read through one schema (issue 25, items 8,
13, 14).

An edited ``compare.json`` is refused with exit 2 and one line naming the field at fault (it
gave tracebacks, or a report without its verdict); a comparison shown beside a baseline that
is not the one it was made with is refused (it showed the comparison's alarms beside the
other baseline's examples).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pipeline import api
from pipeline.compare.document import check_document, load_document
from pipeline.errors import InputError
from tests.support.hostile_runs import invoke, one_line_error
from tests.support.warehouse_runs import cut_predictions, realsumm_inputs, score_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A baseline, a candidate with every 2nd prediction cut to a third (it alarms), another
    run with every 3rd cut, and the comparison of the candidate with the baseline."""
    root = tmp_path_factory.mktemp("document")
    preds, refs = realsumm_inputs(root / "in", n=40)
    cand = cut_predictions(preds, root / "in" / "cand.parquet", every=2)
    other = cut_predictions(preds, root / "in" / "other.parquet", every=3)
    out = {"base": score_run(preds, refs, root / "base", run_id="base", keep_text=True),
           "cand": score_run(cand, refs, root / "cand", run_id="cand", keep_text=True),
           "other": score_run(other, refs, root / "other", run_id="other", keep_text=True)}
    result = api.compare(str(out["base"]), str(out["cand"]), output=str(root / "cmp"))
    assert result.alarm  # the reproductions below rely on an alarming comparison
    out["cmp"] = root / "cmp" / "compare.json"
    return out


def _edited(runs, tmp_path: Path, edit) -> Path:
    doc = json.loads(runs["cmp"].read_text())
    edit(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


def _report(runs, tmp_path: Path, comparison: Path, *extra):
    return invoke("report", runs["cand"], "--comparison", comparison,
                  "--output", tmp_path / "report.html", *extra)


def _set(path: str, value):
    def edit(doc):
        *parents, last = path.split(".")
        for key in parents:
            doc = doc[int(key)] if isinstance(doc, list) else doc[key]
        doc[int(last) if isinstance(doc, list) else last] = value
    return edit


def _floor(value):
    def edit(doc):
        doc["settings"]["band_floors"]["rouge1.fmeasure"] = value
    return edit


def _drop(path: str):
    def edit(doc):
        *parents, last = path.split(".")
        for key in parents:
            doc = doc[key]
        del doc[last]
    return edit


def _no_overall_rows(doc):
    doc["rows"] = [r for r in doc["rows"] if r["group"] != "all"]


def _alarm_of_no_row(doc):
    doc["alarms"].append({"group": "system=nobody", "metric": "rouge1", "measure": "fmeasure",
                          "kind": "change"})


def _alarm_without_alarms(doc):
    doc["alarms"] = []


# (name, edit, what the one line must name)
EDITS = [
    ("confidence as a string", _set("settings.confidence", "0.95"), "settings.confidence"),
    ("confidence out of range", _set("settings.confidence", 2), "settings.confidence"),
    ("a band floor of abc", _floor("abc"), "settings.band_floors.rouge1.fmeasure"),
    ("seed -1", _set("settings.seed", -1), "settings.seed"),
    ("n_bootstrap 0", _set("settings.n_bootstrap", 0), "settings.n_bootstrap"),
    ("adjust unknown", _set("settings.adjust", "bonferroni"), "settings.adjust"),
    ("measures not a list", _set("settings.measures", "rouge1.fmeasure"), "settings.measures"),
    ("no rows", _drop("rows"), "rows"),
    ("rows as a number", _set("rows", 5), "rows"),
    ("a row's p_value as text", _set("rows.0.p_value", "small"), "rows[0].p_value"),
    ("a row's n_paired negative", _set("rows.1.n_paired", -3), "rows[1].n_paired"),
    ("a row's band_source unknown", _set("rows.2.band_source", "guessed"),
     "rows[2].band_source"),
    ("alarms as a string", _set("alarms", "change"), "alarms"),
    ("an alarm kind that is a number", _set("alarms.0.kind", 3), "alarms[0].kind"),
    ("an alarm of no row", _alarm_of_no_row, "alarms[1]"),
    ("alarm true without alarms", _alarm_without_alarms, "alarm"),
    ("no overall rows", _no_overall_rows, "rows"),
    ("a flagged row not listed", _set("rows.1.alarm", True), "alarms"),
    ("a listed alarm of an unflagged row", _set("alarms.0.kind", "drift"), "alarms[0]"),
    ("baseline.path null", _set("baseline.path", None), "baseline.path"),
    ("no baseline", _drop("baseline"), "baseline"),
    ("candidate as a list", _set("candidate", []), "candidate"),
    ("pairing counts as text", _set("pairing.n_paired", "40"), "pairing.n_paired"),
    ("history window as text", _set("history", {"source": "/x", "window": "14",
                                                "nights": [], "reference_run": None}),
     "history.window"),
    ("top as an object", _set("top", {}), "top"),
]


@pytest.mark.parametrize("name,edit,field", EDITS, ids=[e[0] for e in EDITS])
def test_an_edited_comparison_is_refused_naming_the_field(runs, tmp_path, name, edit, field):
    result = _report(runs, tmp_path, _edited(runs, tmp_path, edit))
    assert result.exit_code == 2, result.output
    line = one_line_error(result)
    assert f"field {field}" in line, line
    assert "edited.json" in line
    assert not (tmp_path / "report.html").exists()


def test_a_deeply_nested_comparison_is_refused(runs, tmp_path):
    path = tmp_path / "deep.json"
    doc = json.loads(runs["cmp"].read_text())
    text = json.dumps(doc)
    path.write_text(text[:-1] + ', "extra": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = _report(runs, tmp_path, path)
    assert result.exit_code == 2
    assert "nested" in one_line_error(result)
    deep = {**doc, "notes": [[[["x"]]]]}  # a note must be text
    path.write_text(json.dumps(deep))
    result = _report(runs, tmp_path, path)
    assert result.exit_code == 2 and "field notes[0]" in one_line_error(result)


def test_the_unedited_comparison_reports_its_alarms(runs, tmp_path):
    result = _report(runs, tmp_path, runs["cmp"])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "report.html").read_text()
    assert "ALARM</strong>" in text
    doc = json.loads(runs["cmp"].read_text())
    assert check_document(copy.deepcopy(doc), source="x") == doc  # nothing changed on reading


def test_the_writer_writes_what_the_schema_reads(runs):
    """Every document compare writes passes the schema (a fresh one, with history none)."""
    result = api.compare(str(runs["base"]), str(runs["cand"]), top=3)
    doc = json.loads(json.dumps(result.to_document()))
    assert check_document(doc, source="fresh") == doc
    with pytest.raises(InputError, match=r"fresh: field settings\.seed must be"):
        check_document({**doc, "settings": {**doc["settings"], "seed": 2**64}}, source="fresh")
    with pytest.raises(InputError, match="not valid JSON"):
        load_document(b"{", source="broken")


def test_a_comparison_beside_another_baseline_is_refused(runs, tmp_path):
    """Item 8: X's alarms were shown beside Y's examples ("No example's score changed")."""
    for wrong in (runs["cand"], runs["other"]):
        result = _report(runs, tmp_path, runs["cmp"], "--baseline", wrong)
        assert result.exit_code == 2, result.output
        line = one_line_error(result)
        assert "baseline" in line and str(wrong) in line
        assert not (tmp_path / "report.html").exists()
    # the comparison's own baseline, named again, is accepted (what nightly --report does)
    result = _report(runs, tmp_path, runs["cmp"], "--baseline", runs["base"])
    assert result.exit_code == 0, result.output


def test_a_comparison_whose_values_are_not_the_runs_is_refused(runs, tmp_path):
    """A baseline re-scored (or a document edited) since: the rows no longer describe it."""
    def edit(doc):
        row = next(r for r in doc["rows"] if r["group"] == "all")
        row["baseline_mean"] = row["baseline_mean"] + 0.125
    result = _report(runs, tmp_path, _edited(runs, tmp_path, edit))
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "does not describe" in line and "baseline_mean" in line
