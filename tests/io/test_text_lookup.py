"""Issue 24 (compare memory): the moved examples' text lookup reads only the row groups that
hold the wanted ids, in batches, so its peak does not grow with the row-group size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import api
from pipeline.config import ScoreConfig
from pipeline.io.runs import open_run, read_predictions

REPO = Path(__file__).resolve().parents[2]
WORDS = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])

# Reads the texts of three ids through read_predictions, from a run whose manifest names
# PREDICTIONS as its input, and prints Arrow's peak allocation (a fresh process: the pool's
# peak is this lookup's).
PEAK = r"""
import dataclasses, json, sys
import pandas as pd, pyarrow as pa
from pipeline.io.runs import open_run, read_predictions
run = open_run(sys.argv[1])
manifest = dict(run.manifest, inputs={"predictions": {"files": [{"path": sys.argv[2]}]}})
run = dataclasses.replace(run, manifest=manifest)
texts, note = read_predictions(run, pd.DataFrame({"id": json.loads(sys.argv[3])}))
print(json.dumps({"peak": pa.default_memory_pool().max_memory(), "texts": texts,
                  "note": note}))
"""


def _big_input(path: Path, n: int, *, row_group_size: int | None = None) -> list[str]:
    rng = np.random.default_rng(0)
    ids = [f"ex{i:07d}" for i in rng.permutation(n)]  # unsorted: statistics rule little out
    texts = [" ".join(rng.choice(WORDS, 90)) for _ in range(n)]
    pq.write_table(pa.table({"id": ids, "prediction": texts}), path, compression="zstd",
                   row_group_size=row_group_size)
    return texts


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lookup")
    preds = tmp / "p.parquet"
    pd.DataFrame({"id": ["a", "b"], "prediction": ["x y", "y z"],
                  "references": [["x y"], ["y"]]}).to_parquet(preds)
    out = tmp / "run"
    api.score(str(preds), output=str(out),
              config=ScoreConfig(metrics=("rouge1",), bootstrap=0, engine="local"))
    return out


def _peak(run: Path, inputs: Path, ids: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", PEAK, str(run), str(inputs), json.dumps(ids)],
                          capture_output=True, text=True, timeout=300, cwd=REPO, check=True)
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_lookup_peak_does_not_grow_with_the_row_group(small_run, tmp_path):
    # before: the whole text column of every row group was decoded (85 MB for one row group
    # of 100,000 texts, 337 MB for 300,000); now about one batch of texts (33-34 MB both)
    peaks = []
    for n in (100_000, 300_000):
        path = tmp_path / f"in-{n}.parquet"
        texts = _big_input(path, n)
        ids = [f"ex{k:07d}" for k in (10, n // 2, n - 1)]
        got = _peak(small_run, path, ids)
        order = {f"ex{i:07d}": t for i, t in zip(np.random.default_rng(0).permutation(n),
                                                  texts, strict=True)}
        assert got["texts"] == [order[i] for i in ids] and got["note"] is None
        peaks.append(got["peak"])
    assert peaks[1] < 60e6, peaks  # one row group of 300,000 texts holds 145 MB of text
    assert peaks[1] < 1.3 * peaks[0], peaks


def test_the_lookup_matches_a_plain_read_across_row_groups(small_run, tmp_path):
    path = tmp_path / "in.parquet"
    _big_input(path, 5_000, row_group_size=700)
    truth = pq.read_table(path).to_pandas().set_index("id")["prediction"]
    run = open_run(str(small_run))
    import dataclasses

    run = dataclasses.replace(run, manifest=dict(
        run.manifest, inputs={"predictions": {"files": [{"path": str(path)}]}}))
    ids = ["ex0000000", "ex0004999", "nope", "ex0002500", "ex0000000"]
    texts, note = read_predictions(run, pd.DataFrame({"id": ids}))
    assert texts == [truth.get(i) for i in ids]
    assert note == "1 of 5 texts not found in the run's inputs"
