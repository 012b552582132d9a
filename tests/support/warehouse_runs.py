"""Small real runs of `overlap score --engine local` on the bundled REALSumm data, for the
warehouse, report and explain tests."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import api
from pipeline.config import ScoreConfig
from tests.conftest import BUNDLED


def realsumm_inputs(root: Path, *, n: int = 40) -> tuple[Path, Path]:
    """The first n bundled examples as a predictions file and a one-row-per-reference file."""
    preds = pd.read_parquet(BUNDLED / "predictions").sort_values("id").head(n)
    refs = pd.read_parquet(BUNDLED / "references.parquet")
    refs = refs[refs["id"].isin(preds["id"])]
    root.mkdir(parents=True, exist_ok=True)
    preds.to_parquet(root / "predictions.parquet", index=False)
    refs.to_parquet(root / "references.parquet", index=False)
    return root / "predictions.parquet", root / "references.parquet"


def cut_predictions(predictions: Path, output: Path, *, every: int = 2) -> Path:
    """A candidate: every ``every``-th prediction cut to a third of its words (at least one)."""
    frame = pd.read_parquet(predictions)
    rows = frame.index[::every]
    frame.loc[rows, "prediction"] = [" ".join(t.split()[: max(1, len(t.split()) // 3)])
                                     for t in frame.loc[rows, "prediction"]]
    frame.to_parquet(output, index=False)
    return output


def score_run(predictions: Path, references: Path, output: Path, *, run_id: str,
              metrics: tuple[str, ...] = ("rouge1", "rougeL"), keep_text: bool = False,
              group_by: tuple[str, ...] = ("system",)) -> Path:
    api.score(str(predictions), references=str(references), output=str(output), run_id=run_id,
              config=ScoreConfig(engine="local", metrics=metrics, bootstrap=50,
                                 group_by=group_by, keep_text=keep_text))
    return output


def retyped_copy(run: Path, output: Path, *, run_id: str, column: str,
                 to: pa.DataType) -> Path:
    """A copy of a complete run with another run id and one examples column cast (a run of
    its own: its manifest and files' metadata name the new run id and the new checksums)."""
    import shutil

    shutil.copytree(run, output)
    for part in (output / "examples").glob("part-*.parquet"):
        table = pq.read_table(part)
        i = table.schema.get_field_index(column)
        table = table.set_column(i, pa.field(column, to), table[column].cast(to))
        table = table.set_column(0, "run_id", pa.array([run_id] * table.num_rows))
        pq.write_table(table.replace_schema_metadata(
            {**table.schema.metadata, b"overlap.run_id": run_id.encode()}), part)
    aggregate = pq.read_table(output / "aggregate.parquet")
    pq.write_table(aggregate.replace_schema_metadata(
        {**aggregate.schema.metadata, b"overlap.run_id": run_id.encode()}),
        output / "aggregate.parquet")
    manifest = json.loads((output / "manifest.json").read_text())
    manifest["run_id"] = run_id
    for entry in [*manifest["outputs"]["examples"], manifest["outputs"]["aggregate"]]:
        entry.update(size_bytes=(output / entry["path"]).stat().st_size,
                     sha256=sha256_of(output / entry["path"]))
    (output / "manifest.json").write_text(json.dumps(manifest))
    (output / "_SUCCESS").write_text(f"{run_id}\n")
    return output


def reseal(run: Path) -> Path:
    """Record a run's files as they are now in its manifest (rows, sizes, SHA-256): for tests
    that edit a scored run on purpose, as a new run of its own; ``open_run`` refuses an edited
    run otherwise."""
    manifest = json.loads((run / "manifest.json").read_text())
    for entry in [*manifest["outputs"]["examples"], manifest["outputs"]["aggregate"]]:
        entry.update(num_rows=pq.read_metadata(run / entry["path"]).num_rows,
                     size_bytes=(run / entry["path"]).stat().st_size,
                     sha256=sha256_of(run / entry["path"]))
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def sha256_of(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()
