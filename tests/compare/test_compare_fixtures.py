"""Helpers for the compare tests: real texts, scored, written as `overlap score` run directories.

`write_run` lays a run out exactly as issue 3's output contract says (examples/part-*.parquet
with the signature in the key-value metadata, aggregate.parquet, manifest.json, _SUCCESS
last), so `overlap compare` can be tested before and independently of `overlap score`.
Scores always come from `pipeline.score_texts` (exact rouge-score), never typed in.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import score_texts
from pipeline.signature import build_signature

REPO = Path(__file__).resolve().parents[2]
REALSUMM = REPO / "pipeline" / "data" / "realsumm"
SHARED_REALSUMM = REPO.parent / "shared" / "data" / "realsumm" / "examples.parquet"
METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def realsumm() -> pd.DataFrame:
    """The bundled REALSumm data: id, system, prediction, reference (2,500 rows, sorted by id)."""
    predictions = pq.read_table(REALSUMM / "predictions").to_pandas()
    references = pq.read_table(REALSUMM / "references.parquet").to_pandas()
    frame = predictions.merge(references, on="id", how="inner", validate="one_to_one")
    parts = frame["id"].str.split("-", n=3, expand=True)
    frame["source"] = parts[1]
    frame["doc"] = parts[1] + "-" + parts[2]
    return frame.sort_values("id", ignore_index=True)


def signature(*, metrics: Sequence[str] = METRICS, stemmer: str = "none",
              tokenizer: str = "rouge-score", multi_reference: str = "max") -> str:
    return str(build_signature(metrics=tuple(metrics), tokenizer=tokenizer, stemmer=stemmer,
                               case_sensitive=False, multi_reference=multi_reference,
                               n_references=1, n_bootstrap=1000, confidence=0.95, seed=12345))


def score(frame: pd.DataFrame, *, metrics: Sequence[str] = METRICS,
          stemmer: str = "none") -> pd.DataFrame:
    """Per-example score columns for frame's prediction/reference columns (rouge-score exact)."""
    with warnings.catch_warnings():
        # real REALSumm texts: a few have several sentences on one line (rouge-score parity)
        warnings.simplefilter("ignore", UserWarning)
        scored = score_texts(frame["prediction"].tolist(), frame["reference"].tolist(),
                             metrics=list(metrics), stemmer=stemmer)
    return pd.concat([frame.reset_index(drop=True), scored], axis=1)


def write_run(path: Path, scored: pd.DataFrame, *, run_id: str, id_column: str = "id",
              group_by: Sequence[str] = (), ride_along: Sequence[str] = (),
              metrics: Sequence[str] = METRICS, sig: str | None = None,
              keep_text: bool = False, n_shards: int = 2, predictions_path: str | None = None,
              success: bool = True, manifest_extra: dict | None = None) -> Path:
    """Write `scored` (from :func:`score`) as a run directory at `path` and return it."""
    sig = sig or signature(metrics=metrics)
    examples = path / "examples"
    examples.mkdir(parents=True)
    columns = [id_column, *group_by, *[c for c in ride_along if c not in group_by]]
    columns.append("n_references")
    for m in metrics:
        columns += [f"{m}_{x}" for x in ("precision", "recall", "fmeasure", "matches",
                                         "prediction_units", "reference_units",
                                         "reference_index")]
    if keep_text:
        columns.append("prediction")
    table = pa.Table.from_pandas(scored[columns], preserve_index=False)
    table = table.add_column(0, "run_id", pa.array([run_id] * len(table), pa.string()))
    table = table.replace_schema_metadata({"overlap.signature": sig})
    for k, chunk in enumerate(np.array_split(np.arange(len(table)), n_shards)):
        pq.write_table(table.take(pa.array(chunk, pa.int64())),
                       examples / f"part-{k:04d}.parquet")
    rows = [{"metric": m, "measure": x, "mean": float(scored[f"{m}_{x}"].mean()),
             "n_examples": len(scored)}
            for m in metrics for x in ("precision", "recall", "fmeasure")]
    pq.write_table(pa.Table.from_pylist(rows).replace_schema_metadata({"overlap.signature": sig}),
                   path / "aggregate.parquet")
    manifest = {
        "run_id": run_id,
        "signature": sig,
        "config": {"id_column": id_column, "prediction_column": "prediction",
                   "group_by": list(group_by), "metrics": list(metrics),
                   "keep_text": keep_text, "predictions": predictions_path},
        "counts": {"scored": len(scored)},
    }
    manifest.update(manifest_extra or {})
    (path / "manifest.json").write_text(json.dumps(manifest, indent=2))
    if success:
        (path / "_SUCCESS").write_text("")
    return path


def truncate_half(text: str) -> str:
    """The first half of a text's words, line breaks (sentence boundaries) kept."""
    keep = max(1, len(text.split()) // 2)
    out = []
    for line in text.split("\n"):
        words = line.split()[:keep]
        keep -= len(words)
        if words:
            out.append(" ".join(words))
        if keep <= 0:
            break
    return "\n".join(out)


def cut_a_tenth(texts: pd.DataFrame) -> tuple[pd.DataFrame, set]:
    """10% of the predictions (chosen with a seeded RNG) cut to half their words.

    Returns:
        The texts with those predictions cut, and the cut examples' ids.

    """
    rng = np.random.default_rng(7)
    picked = np.sort(rng.choice(len(texts), size=len(texts) // 10, replace=False))
    frame = texts.copy()
    frame.loc[picked, "prediction"] = [truncate_half(t) for t in frame.loc[picked, "prediction"]]
    return frame, set(frame.loc[picked, "id"])


def test_write_run_reads_back(tmp_path):
    from pipeline.io.runs import open_run, read_examples

    frame = score(realsumm().head(20))
    run = open_run(str(write_run(tmp_path / "r", frame, run_id="r1", keep_text=True)))
    assert run.run_id == "r1" and run.n_examples == 20 and run.has_text
    assert str(run.signature) == signature()
    back = read_examples(run, columns=["id", "rougeL_fmeasure"])
    assert back["rougeL_fmeasure"].tolist() == frame["rougeL_fmeasure"].tolist()
