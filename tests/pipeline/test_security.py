"""Untrusted input: YAML loaded safely, nothing from input data executed or unpickled, and
values that reach output paths (run ids, group values) never leave the output directory."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--engine", "local", "--bootstrap", "0"]


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


class _Payload:
    """Unpickling this creates ``path``: the proof that something was unpickled."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.parametrize("tag", [
    "!!python/object/apply:builtins.open ['{marker}', 'w']",
    "!!python/object:pipeline.config.ScoreConfig {{}}",
    "!!python/name:os.system",
])
def test_yaml_with_python_tags_is_refused_in_one_line(tmp_path, tag):
    marker = tmp_path / "executed"
    cfg = tmp_path / "evil.yaml"
    cfg.write_text(f"seed: {tag.format(marker=marker)}\n")
    result = CliRunner().invoke(main, ["signature", "--config", str(cfg)])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: config file {cfg} line 1: invalid "
                                                   "YAML (could not determine a constructor "
                                                   "for the tag 'tag:yaml.org,2002:python/")
    assert result.stdout == ""
    assert not marker.exists()


def test_nothing_in_the_input_data_is_executed_or_unpickled(tmp_path):
    marker = tmp_path / "unpickled"
    payload = pickle.dumps(_Payload(marker))
    code_like = ["__import__('os').system('touch {m}')", "$(touch {m})", "`touch {m}`",
                 "{{{{7*7}}}} ${{HOME}} %(x)s", "!!python/object/apply:os.system ['touch {m}']"]
    texts = [t.format(m=marker) for t in code_like]
    n = len(texts)
    # A column declared as a pickled Python extension type (what old pyarrow unpickled),
    # pickles in the key-value metadata, and a pickle as a binary value.
    evil = pa.field("payload", pa.binary(), metadata={
        b"ARROW:extension:name": b"arrow.py_extension_type",
        b"ARROW:extension:metadata": payload})
    schema = pa.schema([("id", pa.string()), ("prediction", pa.string()),
                        ("references", pa.list_(pa.string())), evil],
                       metadata={b"pandas": payload, b"overlap.signature": payload})
    table = pa.table([[f"e{i}" for i in range(n)], texts, [[t] for t in texts],
                      [payload] * n], schema=schema)
    pq.write_table(table, tmp_path / "p.parquet")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["score", str(tmp_path / "p.parquet"), "--output",
                                       str(out), "--keep-columns", "payload", "--keep-text",
                                       *FAST])
    assert result.exit_code == 0, result.output
    examples = pq.read_table(out / "examples" / "part-00000.parquet")
    assert examples.column("prediction").to_pylist() == texts  # kept as text, scored as text
    assert examples.column("payload").to_pylist() == [payload] * n
    assert examples.column("rouge1_fmeasure").to_pylist() == [1.0] * n
    assert not marker.exists()
    assert not any(Path.cwd().glob("unpickled"))


@pytest.mark.parametrize("run_id", ["../../escaped", "a/b", "/tmp/absolute-run", "..", ".",
                                    "x/../../y", "a\\b", "", "new\nline", " lead", "-dash"])
def test_run_ids_cannot_reach_outside_the_output(tmp_path, run_id):
    (tmp_path / "p.parquet").write_bytes(b"")  # never read: the run id is refused first
    work = tmp_path / "work"
    work.mkdir()
    before_tmp = tree(tmp_path)
    result = CliRunner().invoke(main, ["score", str(tmp_path / "p.parquet"), "--output",
                                       str(work / "out"), "--run-id", run_id, *FAST])
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and "run id" in result.stderr
    assert tree(tmp_path) == before_tmp
    assert not Path("/tmp/absolute-run").exists()


def test_group_values_are_data_never_paths(tmp_path):
    values = ["../../escaped", "a/b", "/tmp/absolute-group", "..", ".", "", "x\ny", "nul\0l"]
    n = len(values)
    pq.write_table(pa.table({"id": [f"e{i}" for i in range(n)], "prediction": ["the cat"] * n,
                             "references": [["the cat sat"]] * n, "system": values}),
                   tmp_path / "p.parquet")
    out = tmp_path / "runs" / "out"
    result = CliRunner().invoke(main, ["score", str(tmp_path / "p.parquet"), "--output",
                                       str(out), "--group-by", "system", "--keep-text", *FAST])
    assert result.exit_code == 0, result.output
    assert tree(tmp_path / "runs") == {"out", "out/_SUCCESS", "out/manifest.json",
                                       "out/aggregate.parquet", "out/examples",
                                       "out/examples/part-00000.parquet"}
    assert set(os.listdir(tmp_path)) == {"p.parquet", "runs"}
    assert not Path("/tmp/absolute-group").exists()
    aggregate = pq.read_table(out / "aggregate.parquet").to_pylist()
    assert {r["system"] for r in aggregate if r["scope"] != "all"} == set(values)
    # compare writes its own fixed file names, whatever the group values.
    cmp = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["compare", str(out), str(out), "--output", str(cmp),
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    assert tree(cmp) == {"compare.parquet", "compare.json"}
    groups = {r["group"] for r in json.loads((cmp / "compare.json").read_text())["rows"]}
    assert "system=../../escaped" in groups


def test_nightly_refuses_a_run_id_that_is_not_a_plain_name(tmp_path):
    env = {**os.environ, "RUN_ID": "../../escaped", "RUN_DATE": "2025-01-01",
           "OVERLAP": f"{sys.executable} -m pipeline.cli", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(["bash", str(ROOT / "scripts" / "nightly.sh"),
                             str(tmp_path / "root"), str(tmp_path / "p.parquet")],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "RUN_ID must be" in result.stderr
    assert os.listdir(tmp_path) == []
