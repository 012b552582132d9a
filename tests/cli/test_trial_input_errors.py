"""Bad input a newcomer met: one line on stderr, exit 2, nothing staged (docs/failures.md)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main


@pytest.fixture()
def good(tmp_path):
    path = tmp_path / "good.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "prediction": ["the cat sat", "a dog"],
                             "references": [["the cat"], ["a dog"]],
                             "lang_int": pa.array([1, 2], pa.int64()),
                             "lang_bool": [True, False],
                             "lang_list": [["english"], ["french"]]}), path)
    return path


def _refused(tmp_path, args, *said):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (result.output, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    for s in said:
        assert s in lines[0], lines[0]
    assert "Traceback" not in result.output
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["good.parquet"], left  # nothing staged, nothing written
    return lines[0]


@pytest.mark.parametrize(("column", "arrow_type"), [("lang_int", "int64"),
                                                    ("lang_bool", "bool"),
                                                    ("lang_list", "list<")])
def test_a_language_column_that_is_not_strings_is_refused_before_staging(
        tmp_path, good, column, arrow_type):
    pytest.importorskip("pyonmttok")
    _refused(tmp_path, ["score", str(good), "--output", str(tmp_path / "o"),
                        "--language", f"column:{column}"],
             f"column:{column}", arrow_type, "string")


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_language_is_refused_as_an_empty_column_name_is(tmp_path, good, value):
    _refused(tmp_path, ["score", str(good), "--output", str(tmp_path / "o"),
                        "--language", value], "--language", "language name")


@pytest.mark.parametrize(("memory_resamples", "largest"), [(85_392_577, "100,000"),
                                                          (40_000, "40,000")])
def test_a_bootstrap_beyond_memory_names_the_largest_value_that_is_accepted(
        tmp_path, good, monkeypatch, memory_resamples, largest):
    # the largest value given is the smaller of what memory holds and the maximum
    import pipeline.machine
    from pipeline.aggregate import bootstrap_bytes
    from pipeline.config import ScoreConfig

    each = bootstrap_bytes(ScoreConfig().scoring.specs(), ScoreConfig().scoring.thresholds)
    monkeypatch.setattr(pipeline.machine, "memory_bytes", lambda: memory_resamples * each)
    line = _refused(tmp_path, ["score", str(good), "--output", str(tmp_path / "o"),
                               "--bootstrap", "10000000000"],
                    "10,000,000,000 resamples", f"largest bootstrap accepted is {largest}",
                    "1e10")
    assert f"at most {memory_resamples:,} resamples" in line, line
    if largest != "100,000":  # accepted indeed (memory is the bound here)
        n = int(largest.replace(",", ""))
        ok = CliRunner().invoke(main, ["score", str(good), "--output", str(tmp_path / "o"),
                                       "--bootstrap", str(n)])
        assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_output_is_refused_plainly(tmp_path, good, value, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a blank name is a relative path: written here, if at all
    line = _refused(tmp_path, ["score", str(good), "--output", value], "output path is empty")
    assert "inside" not in line, line


def test_an_empty_report_output_is_refused_plainly(tmp_path, good):
    run = tmp_path / "run"
    assert CliRunner().invoke(main, ["score", str(good), "--output", str(run),
                                     "--bootstrap", "0"]).exit_code == 0
    result = CliRunner().invoke(main, ["report", str(run), "--output", ""])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        "Error: the output path is empty (''): name a directory or file to write to"]


@pytest.mark.parametrize("column", ["prediction", "id", "references"])
def test_a_language_column_that_is_an_id_or_text_column_names_language(tmp_path, good,
                                                                        column):
    pytest.importorskip("pyonmttok")
    line = _refused(tmp_path, ["score", str(good), "--output", str(tmp_path / "o"),
                               "--language", f"column:{column}"],
                    f"--language column:{column}", repr(column))
    assert "group by" not in line, line


@pytest.mark.parametrize("command", [["report", "--output", "r.html"], ["compare", "RUN"],
                                     ["explain", "--id", "a"]])
def test_an_unfinished_run_is_named_without_another_command(tmp_path, good, command,
                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "manifest.json").write_text("{}")
    args = [a if a != "RUN" else str(unfinished) for a in command]
    result = CliRunner().invoke(main, [command[0], str(unfinished), *args[1:]])
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "not a complete run" in lines[0], result.stderr
    other = {"report", "compare", "explain"} - {command[0]}
    assert not any(word in lines[0] for word in other), lines[0]


@pytest.mark.parametrize(("given", "meant"), [("rouge_l", "rougeL"), ("ROUGE-L", "rougeL"),
                                              ("rouge_lsum", "rougeLsum"),
                                              ("token-f1", "token_f1"), ("BLEU", "bleu")])
def test_did_you_mean_ignores_case_and_punctuation(tmp_path, good, given, meant):
    _refused(tmp_path, ["score", str(good), "--output", str(tmp_path / "o"),
                        "--metrics", given], f"unknown metric {given!r}",
             f"did you mean {meant!r}?")


@pytest.mark.parametrize("output", ["/proc/overlap-x", "/sys/kernel/overlap-x"])
def test_an_output_place_that_cannot_be_written_is_named_as_the_output(tmp_path, good,
                                                                       output):
    import os

    parent = os.path.dirname(output)
    if not os.path.isdir(parent) or os.path.exists(output):
        pytest.skip(f"{parent} is not a Linux pseudo-filesystem here")
    result = CliRunner().invoke(main, ["score", str(good), "--output", output])
    assert result.exit_code == 4, result.output  # storage: the exit-code table's 4
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Error: cannot write the output {output}: {parent}: "), lines[0]
    assert "lock" not in lines[0], lines[0]
