"""The hostile matrix of `overlap report` (issue 19), with the run readers it shares with
`explain` and `compare`: a run damaged after scoring, a manifest field of another JSON type,
and outputs that are not ours (a run's manifest, a directory, a symlink, a foreign file, a
planted temporary name).

Every case: the documented exit code, one line on stderr naming what is at fault, no
traceback, and nothing of anyone else's replaced.
"""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest

from tests.support.hostile_runs import (
    AN_ID,
    copy,
    edit_a_score,
    flip_a_byte,
    invoke,
    one_line_error,
    parts,
    scored_runs,
    set_manifest_field,
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return scored_runs(tmp_path_factory.mktemp("hostile-report"))


def report(run, output, *extra):
    return invoke("report", run, "--output", output, *extra)


def read_run(command: str, run, tmp_path):
    """Each command that reads a run, on ``run`` (compare: as the candidate)."""
    if command == "report":
        return report(run, tmp_path / "report.html")
    if command == "explain":
        return invoke("explain", run, "--id", AN_ID)
    return invoke("compare", run.parent / "a", run, "--output", tmp_path / "cmp")


READERS = ["report", "explain", "compare"]


# --------------------------------------------------------------------------------------------
# The run, verified by the one reader all commands share
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", READERS)
def test_a_part_file_deleted_after_scoring_is_refused(runs, tmp_path, command):
    run = copy(runs["a"], runs["a"].parent / f"deleted-{command}")
    parts(run)[1].unlink()
    result = read_run(command, run, tmp_path)
    assert result.exit_code == 2
    assert "part-00001.parquet is missing" in one_line_error(result)


@pytest.mark.parametrize("command", READERS)
def test_a_part_file_of_another_run_is_refused(runs, tmp_path, command):
    run = copy(runs["a"], runs["a"].parent / f"foreign-{command}")
    shutil.copy(parts(runs["b"])[0], run / "examples" / "part-00007.parquet")
    result = read_run(command, run, tmp_path)
    assert result.exit_code == 2
    assert "part-00007.parquet is not a file of this run" in one_line_error(result)


@pytest.mark.parametrize("command", READERS)
@pytest.mark.parametrize("edit", [edit_a_score, flip_a_byte])
def test_examples_edited_after_scoring_are_noticed(runs, tmp_path, command, edit):
    """compare used edited examples without noticing; the checksum per part file sees it."""
    run = copy(runs["a"], runs["a"].parent / f"edited-{command}-{edit.__name__}")
    edit(parts(run)[0])
    assert pq.read_metadata(parts(run)[0]).num_rows == \
        pq.read_metadata(parts(runs["a"])[0]).num_rows  # same rows, same run id
    result = read_run(command, run, tmp_path)
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "part-00000.parquet changed since the run was scored" in line
    assert not (tmp_path / "cmp").exists() and not (tmp_path / "report.html").exists()


FIELDS = [("counts", "x"), ("counts", {"skipped": "x"}), ("inputs", "x"),
          ("config", {"metrics": 5}), ("config", {"max_tokens": "x"}),
          ("inputs", {"predictions": 5})]


@pytest.mark.parametrize("command", READERS)
@pytest.mark.parametrize("field,value", FIELDS)
def test_a_manifest_field_of_another_type_is_refused_naming_it(runs, tmp_path, command, field,
                                                               value):
    """report and explain gave tracebacks (AttributeError, TypeError); now all refuse alike."""
    name = f"typed-{command}-{field}-{json.dumps(value)}".replace(" ", "").replace('"', "")
    run = copy(runs["a"], runs["a"].parent / name.replace("{", "").replace("}", ""))
    set_manifest_field(run, field, value)
    result = read_run(command, run, tmp_path)
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "manifest.json: field" in line and repr(field)[:-1] in line


# --------------------------------------------------------------------------------------------
# The output: never replace a file we did not write, never follow a symlink
# --------------------------------------------------------------------------------------------

def test_the_output_in_place_of_the_runs_manifest_is_refused(runs, tmp_path):
    run = copy(runs["a"], tmp_path / "run")
    before = (run / "manifest.json").read_bytes()
    result = report(run, run / "manifest.json")
    assert result.exit_code == 3
    assert "manifest.json exists and is not a report" in one_line_error(result)
    assert (run / "manifest.json").read_bytes() == before
    assert report(run, tmp_path / "ok.html").exit_code == 0  # the run still reads


def test_an_output_that_is_a_directory_is_refused_and_leaves_nothing(runs, tmp_path):
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "mine.txt").write_text("keep\n")
    result = report(runs["a"], folder)
    assert result.exit_code == 3
    assert "is a directory" in one_line_error(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]  # no .reports.tmp
    assert [p.name for p in folder.iterdir()] == ["mine.txt"]


def test_an_output_that_is_a_symlink_is_refused(runs, tmp_path):
    victim = tmp_path / "victim.html"
    victim.write_text("<p>not a report</p>\n")
    link = tmp_path / "report.html"
    link.symlink_to(victim)
    result = report(runs["a"], link)
    line = one_line_error(result)
    # the wording of score's and agree's: "symbolic link", and the real path to pass
    assert result.exit_code == 3 and "is a symbolic link" in line, line
    assert f"--output {victim}" in line, line
    assert link.is_symlink() and victim.read_text() == "<p>not a report</p>\n"


def test_a_foreign_file_is_refused_and_our_own_report_is_replaced(runs, tmp_path):
    foreign = tmp_path / "notes.html"
    foreign.write_text("<!DOCTYPE html>\n<title>my notes</title>\n")
    result = report(runs["a"], foreign)
    assert result.exit_code == 3 and "notes.html" in one_line_error(result)
    assert foreign.read_text() == "<!DOCTYPE html>\n<title>my notes</title>\n"

    ours = tmp_path / "report.html"
    assert report(runs["a"], ours).exit_code == 0
    first = ours.read_text()
    assert first.startswith("<!DOCTYPE html>\n<!-- overlap report")
    assert report(runs["b"], ours).exit_code == 0  # a report we wrote is replaced
    assert "run-b" in ours.read_text() and "run-b" not in first
    # a report written before the mark (by its head) is ours too
    ours.write_text(first.replace(first.splitlines()[1] + "\n", "", 1))
    assert report(runs["a"], ours).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.html", "report.html"]


def test_a_planted_temporary_name_is_never_followed(runs, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours\n")
    (tmp_path / ".report.html.tmp").symlink_to(victim)
    assert report(runs["a"], tmp_path / "report.html").exit_code == 0
    assert victim.read_text() == "not yours\n"
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
