"""The command line's surface (issue 18): one ``--metrics`` option name across commands,
a score summary that fits 100 columns (``--format wide`` and ``json`` for everything), and
help that reads as the README's tour (a short first line, examples in the epilog).

The runs are the bundled REALSumm data scored in-process, as the README's tour scores them.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.cli.score import SUMMARY_WIDTH, _summary_table

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"
PREDS = str(DATA / "predictions")
REFS = str(DATA / "references.parquet")
METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def _invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, object]:
    """The tour's two runs: the bundled data, and its predictions without their last line."""
    tmp = tmp_path_factory.mktemp("tour")
    table = pq.read_table(PREDS)
    shorter = table.set_column(
        table.schema.get_field_index("prediction"), "prediction",
        pc.replace_substring_regex(table["prediction"], r"\n[^\n]*$", ""))
    pq.write_table(shorter, tmp / "shorter.parquet")
    out: dict[str, object] = {}
    for name, preds, fmt in (("base", PREDS, "summary"), ("wide", PREDS, "wide"),
                             ("shorter", tmp / "shorter.parquet", "json")):
        result = _invoke("score", preds, "--references", REFS, "--output", tmp / name,
                         "--group-by", "system", "--engine", "local", "--format", fmt,
                         "--run-id", name)
        assert result.exit_code == 0, result.stderr
        out[name] = result.stdout
        out[f"{name}_dir"] = tmp / name
    return out


# ------------------------------------------------------------------ the summary's width

def test_the_default_summary_fits_100_columns_on_the_bundled_data(runs):
    lines = str(runs["base"]).splitlines()
    wide = [line for line in lines if len(line) > SUMMARY_WIDTH]
    # the signature is one token (copied whole); every other line fits
    assert [line.split()[0] for line in wide] in ([], ["signature:"])
    assert SUMMARY_WIDTH == 100
    # the wide table of the same run is the 142-column one of before
    assert max(len(line) for line in str(runs["wide"]).splitlines()
               if line.startswith("(all)")) > 130


def _cells(text: str) -> dict[tuple[str, str], str]:
    """(group, column) -> cell of every table block in a summary (cells hold one space)."""
    lines = text.splitlines()
    cells: dict[tuple[str, str], str] = {}
    i = 0
    while i < len(lines):
        if lines[i].startswith("system") and lines[i].split()[1] == "n":
            names = lines[i].split()[2:]
            i += 1
            while i < len(lines) and lines[i].strip():
                parts = lines[i].split("  ")
                parts = [p.strip() for p in parts if p.strip()]
                group, values = parts[0], parts[2:]
                assert len(values) == len(names), lines[i]
                cells.update({(group, n): v for n, v in zip(names, values, strict=True)})
                i += 1
        i += 1
    return cells


def test_the_blocks_hold_every_cell_of_the_wide_table(runs):
    summary, wide = _cells(str(runs["base"])), _cells(str(runs["wide"]))
    assert len(wide) == 25 * len(METRICS)  # (all) and 24 systems
    assert summary == wide
    # and they are the aggregate's values, as aggregate.parquet holds them
    aggregate = pq.read_table(Path(str(runs["base_dir"])) / "aggregate.parquet").to_pylist()
    overall = {r["metric"]: r for r in aggregate
               if r["scope"] == "all" and r["measure"] == "fmeasure"}
    for metric in METRICS:
        r = overall[metric]
        assert summary[("(all)", metric)] == (
            f"{r['mean']:.4f} [{r['ci_low']:.4f}, {r['ci_high']:.4f}]")


def test_the_wide_summary_has_one_line_per_group(runs):
    lines = str(runs["wide"]).splitlines()
    header = [i for i, line in enumerate(lines) if line.startswith("system")]
    assert len(header) == 1
    assert lines[header[0]].split() == ["system", "n", *METRICS]
    assert lines[header[0] + 1].startswith("(all)")
    assert lines[header[0] + 26] == ""  # 25 rows, then the blank line before the legend


def test_json_holds_every_aggregate_row_and_the_manifest_figures(runs):
    doc = json.loads(str(runs["shorter"]))
    manifest = json.loads((Path(str(runs["shorter_dir"])) / "manifest.json").read_text())
    assert doc["signature"] == manifest["signature"]
    assert doc["run_id"] == "shorter" and doc["counts"] == manifest["counts"]
    aggregate = pq.read_table(Path(str(runs["shorter_dir"])) / "aggregate.parquet").to_pylist()
    assert doc["aggregate"] == aggregate


def test_a_table_of_many_metrics_goes_into_blocks_that_fit():
    header = ["system", "n", *(f"metric{i}" for i in range(8))]
    rows = [["(all)", "2500", *["0.4217 [0.4170, 0.4263]"] * 8],
            ["a_rather_long_system_name_out", "100", *["0.4172 [0.3935, 0.4418]"] * 8]]
    lines = _summary_table(header, rows, width=100)
    assert max(map(len, lines)) <= 100
    # 3 value columns of 23 characters a block beside the 29-character label: 29+2+4+3*25 = 110
    # does not fit, so two a block, four blocks, each with its header and both rows
    assert sum(line.startswith("system") for line in lines) == 4
    assert sum(line.startswith("a_rather_long_system_name_out") for line in lines) == 4
    assert _summary_table(header, rows, width=None)[0].split() == header


def test_a_label_too_long_for_one_column_is_shortened_only_in_the_summary():
    label = "x" * 120
    header, rows = ["group", "n", "rouge1"], [[label, "3", "0.5000 [0.4000, 0.6000]"]]
    short = _summary_table(header, rows, width=100)
    assert max(map(len, short)) <= 100 and short[1].startswith("x" * 60)
    assert "..." in short[1]
    assert _summary_table(header, rows, width=None)[1].startswith(label)


def test_format_is_not_a_nightly_score_option(tmp_path):
    result = _invoke("nightly", tmp_path / "root", PREDS, REFS, "--score-args", "--format json")
    assert result.exit_code == 2 and "--format is not used by the nightly" in result.stderr


# ------------------------------------------------------------- one name for the metrics

def _compare_doc(runs, *args: str) -> dict:
    result = _invoke("compare", runs["base_dir"], runs["shorter_dir"], "--format", "json",
                     "--n-bootstrap", "200", *args)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_compare_takes_metrics_and_the_former_metric_alike(runs):
    new = _compare_doc(runs, "--metrics", "rouge1.fmeasure,rougeL.fmeasure")
    old = _compare_doc(runs, "--metric", "rouge1.fmeasure", "--metric", "rougeL.fmeasure")
    assert new["settings"]["measures"] == ["rouge1.fmeasure", "rougeL.fmeasure"]
    assert new["rows"] == old["rows"] and new["alarms"] == old["alarms"]
    # the predictions lost their last sentence: recall fell, every system and overall alarm
    assert new["alarm"] and {a["kind"] for a in new["alarms"]} == {"change"}


@pytest.mark.parametrize("command", ["compare", "report"])
def test_help_shows_metrics_and_hides_the_alias(command):
    out = _invoke(command, "--help").stdout
    names = [line.split()[0] for line in out.splitlines() if line.startswith("  -")]
    assert "--metrics" in names and "--metric" not in names and "--metric," not in names
    assert "(--metric, the former name, still works)" in " ".join(out.split())


def test_report_and_nightly_parse_metrics(tmp_path):
    from pipeline.cli.nightly import _parse
    from pipeline.cli.report import report_command

    ctx = report_command.make_context("report", ["r", "--output", "x.html", "--metrics",
                                                 "rouge1.fmeasure,bleu.score"])
    assert ctx.params["metrics"] == ("rouge1.fmeasure,bleu.score",)
    from pipeline.cli.compare import compare_command

    for spelling in ("--metrics", "--metric"):
        params = _parse(compare_command, "COMPARE_ARGS", ["b", "c"], f"{spelling} rougeL.fmeasure")
        assert params["metrics"] == ("rougeL.fmeasure",)


def test_every_command_names_its_metrics_option_metrics():
    names = {}
    for name in main.list_commands(click.Context(main)):
        command = main.get_command(click.Context(main), name)
        for param in command.params:
            if any(o.startswith("--metric") for o in param.opts):
                names[name] = param.opts[0]
    assert names == {n: "--metrics" for n in ("agree", "compare", "explain", "report",
                                                 "score", "signature")}


# ------------------------------------------------------------------------------- help

def test_overlap_help_reads_as_the_tour():
    out = _invoke("--help").stdout
    for command in ("compare", "explain", "nightly", "publish", "report", "score", "signature"):
        line = next(li for li in out.splitlines() if li.strip().startswith(command + " "))
        assert not line.rstrip().endswith("..."), line  # the first line is short enough
    for step in ("overlap score pipeline/data/realsumm/predictions", "overlap compare ",
                 "overlap report ", "overlap publish ", "overlap nightly "):
        assert step in out


@pytest.mark.parametrize("command", ["agree", "compare", "explain", "nightly", "publish",
                                     "report", "score", "signature"])
def test_every_command_shows_an_example(command):
    out = CliRunner().invoke(main, [command, "--help"], terminal_width=100).stdout
    assert f"overlap {command} " in out.split("Options:")[-1]  # in the epilog
    assert max(len(line) for line in out.splitlines()) <= 100
