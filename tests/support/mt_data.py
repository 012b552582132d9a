"""Predictions and reference lists for the BLEU/chrF/SQuAD parity tests."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pyarrow.parquet as pq

BUNDLED = Path(__file__).resolve().parents[2] / "pipeline" / "data" / "realsumm"


def bundled_realsumm(n: int | None = None) -> tuple[list[str], list[list[str]]]:
    """The bundled REALSumm predictions with their single reference, sorted by id."""
    preds = pq.read_table(BUNDLED / "predictions").to_pydict()
    refs = pq.read_table(BUNDLED / "references.parquet").to_pydict()
    by_id = dict(zip(refs["id"], refs["reference"], strict=True))
    rows = sorted(zip(preds["id"], preds["prediction"], strict=True))[:n]
    return [p for _, p in rows], [[by_id[i]] for i, _ in rows]


@lru_cache(maxsize=2)
def shared_examples(shared: Path) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Every ../shared/data/*/examples.parquet: folder name -> (predictions, references)."""
    out = {}
    for f in sorted((shared / "data").glob("*/examples.parquet")):
        t = pq.read_table(f, columns=["prediction", "references"]).to_pydict()
        out[f.parent.name] = (t["prediction"], [list(r) for r in t["references"]])
    return out


def reference_streams(references: list[list[str]]) -> list[list[str | None]]:
    """sacrebleu's corpus layout: one stream per reference position, None where missing."""
    k = max(len(r) for r in references)
    return [[r[j] if j < len(r) else None for r in references] for j in range(k)]
