"""Work meant for a cluster keeps to storage every node reads (issue 24, failures 1, 2, 6, 7).

Fast: no cluster is started. The refusals happen before any connection (the address given
is one where nothing listens), and the comparison's scratch is checked with the in-process
runner and fsspec's in-memory filesystem standing in for object storage.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import uuid

import pyarrow.fs as pafs
import pytest
from click.testing import CliRunner

from pipeline import api
from pipeline.cli import main
from pipeline.compare import compare_runs
from pipeline.engine import compare as engine_compare
from pipeline.engine.local import LocalRunner
from pipeline.errors import ConfigError
from pipeline.io.files import locate
from tests.compare.test_compare_engine import assert_same
from tests.compare.test_compare_fixtures import cut_a_tenth, realsumm, score, write_run

NOWHERE = "127.0.0.1:9"  # discard port: nothing listens, and nothing must try to


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A baseline in 2 shards and a candidate in 3 (different layouts: the exchange)."""
    root = tmp_path_factory.mktemp("runs")
    frame = realsumm().head(300)
    cand, _ = cut_a_tenth(frame)
    write_run(root / "base", score(frame), run_id="base", n_shards=2)
    write_run(root / "cand", score(cand), run_id="cand", n_shards=3)
    return root / "base", root / "cand"


def test_the_scratch_goes_to_the_storage_named_never_to_the_temp_dir(runs, monkeypatch):
    base, cand = runs
    scratch = f"memory://scratch-{uuid.uuid4().hex[:8]}/cmp"
    made_here: list[str] = []
    real = tempfile.mkdtemp

    def spy(*args, **kwargs):
        path = real(*args, **kwargs)
        made_here.append(path)
        return path

    monkeypatch.setattr(tempfile, "mkdtemp", spy)
    seen: list[str] = []
    runner = LocalRunner(processes=1)
    submit = runner.submit

    def watching(fn, *args, **kwargs):
        if fn is engine_compare.compare_resample:  # the first pass is over: its files?
            loc = locate(scratch)
            seen.extend(i.path for i in loc.fs.get_file_info(
                pafs.FileSelector(loc.path, recursive=True)))
        return submit(fn, *args, **kwargs)

    runner.submit = watching
    try:
        parts = compare_runs(str(base), str(cand), engine=functools.partial(
            engine_compare.compare_on_engine, runner=runner, scratch=scratch, part_rows=100))
    finally:
        runner.close()
    assert_same(compare_runs(str(base), str(cand)), parts)
    assert any("/exchange/baseline-00000.arrow" in p for p in seen), seen
    assert any(p.endswith("/pairs-00000.arrow") for p in seen), seen
    assert not [p for p in made_here if "overlap-compare" in p]  # nothing in the temp dir
    loc = locate(scratch)
    assert loc.fs.get_file_info(pafs.FileSelector(loc.path, recursive=True)) == []  # deleted


def test_the_default_scratch_is_a_hidden_sibling_of_the_output_or_the_candidate():
    assert engine_compare.scratch_base("s3://b/cmp/night/", "s3://b/runs/c") == \
        "s3://b/cmp/.night.overlap-compare-scratch"
    assert engine_compare.scratch_base(None, "s3://b/runs/c") == \
        "s3://b/runs/.c.overlap-compare-scratch"


@pytest.mark.parametrize("runs_on,output,scratch,what", [
    ("s3://b/runs", "/data/cmp", None, "--output /data/cmp"),
    ("s3://b/runs", "s3://b/cmp", "/tmp/scratch", "--scratch /tmp/scratch"),
    ("/data/runs", None, None, "BASELINE_DIR /data/runs/base"),  # runs on this disk
])
def test_compare_with_an_address_refuses_local_paths_before_connecting(runs_on, output, scratch,
                                                                         what):
    with pytest.raises(ConfigError) as caught:
        api.compare(f"{runs_on}/base", f"{runs_on}/cand", output=output, scratch=scratch,
                    address=NOWHERE)
    assert what in str(caught.value) and "--allow-local-paths" in caught.value.hint
    assert caught.value.exit_code == 2


def test_compare_cli_refuses_a_local_output_with_an_address_in_one_line(runs, tmp_path):
    base, cand = runs
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--output",
                                       str(tmp_path / "cmp"), "--address", NOWHERE])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "is a local path" in lines[0], lines
    assert not (tmp_path / "cmp").exists()


def test_score_cli_refuses_a_local_output_with_an_address(tmp_path):
    from tests.compare.test_compare_fixtures import REALSUMM

    result = CliRunner().invoke(main, [
        "score", str(REALSUMM / "predictions"), "--references",
        str(REALSUMM / "references.parquet"), "--output", str(tmp_path / "out"),
        "--address", NOWHERE])
    assert result.exit_code == 2, result.output  # was 4, after trying to connect
    assert "--output" in result.stderr and "--allow-local-paths" in result.stderr
    assert not (tmp_path / "out").exists()


def test_allow_local_paths_lets_a_single_host_cluster_use_local_paths(runs, tmp_path):
    base, cand = runs
    # past the check: it fails connecting to the address (exit 4), not on the paths
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--output",
                                       str(tmp_path / "cmp"), "--address", NOWHERE,
                                       "--allow-local-paths"])
    assert result.exit_code == 4, result.output
    assert "could not connect" in result.stderr


@pytest.mark.parametrize("verbose", ["", "--verbose", "OVERLAP_VERBOSE=1"])
def test_compare_keeps_what_the_engine_prints_off_stdout(runs, tmp_path, verbose):
    """Ray's driver prints task tracebacks on stdout, from Python (its error listener's
    ``print``) and from C++: stdout must hold the result alone (here the JSON document).
    Ray's Python-level messages reach stderr only with ``--verbose`` (or OVERLAP_VERBOSE=1);
    the C++ level's always do; our own lines on stderr always do."""
    base, cand = runs
    code = f"""
import os, sys
import click
import pipeline.engine.compare as ec
real = ec.compare_on_engine
def noisy(*a, **k):
    print("(raylet) Task failed: Traceback (most recent call last)")
    os.write(1, b"*** SIGSEGV received, stack trace from C++ ***\\n")
    click.echo("note: our own line", err=True)
    return real(*a, **k)
ec.compare_on_engine = noisy
from pipeline.cli import main
flags = [{verbose!r}] if {verbose!r} == "--verbose" else []
sys.argv = ["overlap", *flags, "compare", {str(base)!r}, {str(cand)!r}, "--format", "json",
            "--engine", "local"]
main()
"""
    env = {k: v for k, v in os.environ.items() if k != "OVERLAP_VERBOSE"}
    if verbose.startswith("OVERLAP_VERBOSE"):
        env["OVERLAP_VERBOSE"] = "1"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    json.loads(proc.stdout)  # the document alone
    assert "SIGSEGV" in proc.stderr and "note: our own line" in proc.stderr
    assert ("Task failed" in proc.stderr) == bool(verbose), proc.stderr


def test_nightly_plot_on_object_storage_is_drawn_here_and_uploaded(runs):
    pytest.importorskip("matplotlib")
    base, cand = runs
    result = compare_runs(str(base), str(cand))
    uri = f"memory://plots-{uuid.uuid4().hex[:8]}/compare/delta.png"
    api.draw_delta_plot(result.comparison, uri)
    loc = locate(uri)
    with loc.fs.open_input_stream(loc.path) as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_a_history_already_read_is_no_path_to_check_on_a_cluster():
    """The nightly hands compare the History it read (its earlier nights), not a ROOT: the
    cluster's path check took it for a path (AttributeError: 'History' object has no
    attribute 'partition'; every nightly comparison on a cluster failed). Past the check,
    the address is tried (nothing listens there: exit 4)."""
    from pipeline.compare.history import History
    from pipeline.errors import ExecutionError

    history = History(source="s3://bucket/nights", nights=(), window=14)
    with pytest.raises(ExecutionError, match="could not connect"):
        api.compare("s3://bucket/nights/a", "s3://bucket/nights/b", history=history,
                    output="s3://bucket/cmp", address=NOWHERE, engine="ray")
