"""Click's usage errors, in every command: one line on stderr, exit 2 (docs/failures.md)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from pipeline.cli import main

MISTAKES = [
    (["score", "in.parquet"], "Missing option '--output'", "overlap score --help"),
    (["score", "in.parquet", "--output", "o", "--tokenizer", "rouge-scor"],
     "did you mean 'rouge-score'?", "overlap score --help"),
    (["score", "in.parquet", "--output", "o", "--tokenizer", "foo"],
     "'foo' is not one of", "overlap score --help"),
    (["score", "in.parquet", "--output", "o", "--bootstrap", "abc"],
     "'abc' is not a valid integer", "overlap score --help"),
    (["score", "in.parquet", "--output", "o", "--multi-reference", "maxx"],
     "did you mean 'max'?", "overlap score --help"),
    (["score", "in.parquet", "--output", "o", "--nosuch"], "No such option '--nosuch'",
     "overlap score --help"),
    (["signature", "--n-references", "0"], "expected a positive integer or 'var'",
     "overlap signature --help"),
    (["compare", "a", "b", "--max-missing", "2"], "--max-missing", "overlap compare --help"),
    (["compare"], "Missing argument 'BASELINE", "overlap compare --help"),
    (["nosuch"], "No such command 'nosuch'", "overlap --help"),
    (["scor"], "did you mean 'score'?", "overlap --help"),
    (["--nosuch"], "No such option '--nosuch'", "overlap --help"),
    (["report"], "Missing argument", "overlap report --help"),
    (["publish"], "Missing argument", "overlap publish --help"),
    (["explain", "--id"], "Option '--id' requires an argument", "overlap explain --help"),
    (["agree"], "Missing", "overlap agree --help"),
    (["nightly", "root"], "Missing argument 'PREDICTIONS'", "overlap nightly --help"),
]


@pytest.mark.parametrize(("args", "said", "pointer"), MISTAKES,
                         ids=[" ".join(m[0]) for m in MISTAKES])
def test_a_usage_error_is_one_line_and_exit_2(args, said, pointer):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ") and said in lines[0], lines[0]
    assert lines[0].endswith(f"(see '{pointer}')"), lines[0]


def test_the_process_prints_one_line_too():
    done = subprocess.run([sys.executable, "-m", "pipeline.cli", "score", "in.parquet"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "Error: Missing option '--output'. (see 'overlap score --help')"]


@pytest.mark.parametrize("args", [["--help"], ["score", "--help"], ["compare", "-h"]])
def test_help_is_unchanged(args):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0
    assert result.stdout.startswith("Usage: ")
    assert result.stderr == ""


def test_no_arguments_still_shows_the_help():
    result = CliRunner().invoke(main, [])
    assert "Usage: " in result.output and "Commands:" in result.output
    assert "Error" not in result.output
