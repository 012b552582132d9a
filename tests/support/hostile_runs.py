"""Runs to attack: real `overlap score` runs (bundled REALSumm, 40 examples, 4 part files),
copied per test, and the damage a hostile or careless user does to them after scoring.

Shared by the hostile matrix of each command that reads runs (tests/test_hostile_*.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from pipeline import api
from pipeline.cli import main
from pipeline.config import ScoreConfig
from tests.support.warehouse_runs import realsumm_inputs

N_PARTS = 4
AN_ID = "realsumm-abs-0-bart_out"


def scored_runs(root: Path) -> dict[str, Path]:
    """Runs ``a`` and ``b`` (other run ids, other metrics) of the same 40 examples, 4 parts."""
    preds, refs = realsumm_inputs(root / "in")
    out = {}
    for name, metrics in (("a", ("rouge1", "rougeL")), ("b", ("rouge1", "rouge2", "rougeL"))):
        api.score(str(preds), references=str(refs), output=str(root / name), run_id=f"run-{name}",
                  config=ScoreConfig(engine="local", metrics=metrics, bootstrap=20,
                                     group_by=("system",), partition_rows=10))
        out[name] = root / name
    return out


def copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to)
    return to


def parts(run: Path) -> list[Path]:
    return sorted((run / "examples").glob("part-*.parquet"))


def edit_a_score(part: Path, column: str = "rouge1_fmeasure") -> None:
    """Rewrite one example's score in place: same rows, same metadata (run id), other bytes."""
    table = pq.read_table(part)
    i = table.schema.get_field_index(column)
    values = table.column(i).to_pylist()
    values[0] = 1.0 if values[0] != 1.0 else 0.5
    table = table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))
    pq.write_table(table, part)


def flip_a_byte(part: Path) -> None:
    """Change one byte in the middle of a file in place: same size, same footer (rows, run
    id), other contents: only a checksum tells."""
    data = bytearray(part.read_bytes())
    data[len(data) // 3] ^= 0xFF
    part.write_bytes(bytes(data))


def set_manifest_field(run: Path, key: str, value) -> None:
    """Set a top-level manifest field, or merge into it when both are objects."""
    manifest = json.loads((run / "manifest.json").read_text())
    if isinstance(value, dict) and isinstance(manifest.get(key), dict):
        manifest[key] = {**manifest[key], **value}
    else:
        manifest[key] = value
    (run / "manifest.json").write_text(json.dumps(manifest))


def invoke(*args):
    """Run the CLI in-process; a traceback (an exception other than exit) fails the test."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback from {args[0]}: {result.exception!r}") \
            from result.exception
    return result


def one_line_error(result) -> str:
    """The error output of a refused command: exactly one line starting with 'Error:'."""
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]
