"""scripts/nightly.sh with the real `overlap` (score --engine local, then compare).

Score tonight's predictions into ROOT/run_date=.../run_id=..., find the last successful
run, compare, exit non-zero on alarm.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.compare.test_compare_fixtures import REPO, realsumm, truncate_half

SCRIPT = REPO / "scripts" / "nightly.sh"
OVERLAP = Path(sys.executable).parent / "overlap"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("nightly")
    frame = realsumm().head(300).reset_index(drop=True)
    frame[["id", "reference"]].to_parquet(root / "references.parquet")
    frame[["id", "prediction"]].to_parquet(root / "good.parquet")
    rng = np.random.default_rng(11)
    cut = rng.choice(len(frame), size=len(frame) // 10, replace=False)
    bad = frame[["id", "prediction"]].copy()
    bad.loc[cut, "prediction"] = [truncate_half(t) for t in bad.loc[cut, "prediction"]]
    bad.to_parquet(root / "truncated.parquet")
    return root


def nightly(root: Path, predictions: str, *, date: str, run_id: str,
            compare_args: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "OVERLAP": str(OVERLAP), "RUN_DATE": date, "RUN_ID": run_id,
           "SCORE_ARGS": "--engine local --keep-text", "COMPARE_ARGS": compare_args}
    return subprocess.run(["bash", str(SCRIPT), str(root / "runs"), str(root / predictions),
                           str(root / "references.parquet")],
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.skipif(not OVERLAP.exists(), reason="the overlap console script is not installed")
def test_nightly_loop(inputs):
    root, runs = inputs, inputs / "runs"
    first = nightly(root, "good.parquet", date="2025-01-01", run_id="n1")
    assert first.returncode == 0, first.stderr
    assert "nothing to compare with" in first.stderr
    assert (runs / "run_date=2025-01-01" / "run_id=n1" / "_SUCCESS").exists()

    second = nightly(root, "good.parquet", date="2025-01-02", run_id="n2")
    assert second.returncode == 0, second.stderr
    out = runs / "compare" / "run_date=2025-01-02" / "run_id=n2"
    doc = json.loads((out / "compare.json").read_text())
    assert doc["baseline"]["run_id"] == "n1" and doc["candidate"]["run_id"] == "n2"
    assert not doc["alarm"] and (out / "delta.png").stat().st_size > 10_000
    assert "no alarm" in second.stdout

    # a run that never finished (no _SUCCESS) is never a baseline, nor is a later date
    (runs / "run_date=2025-01-03" / "run_id=broken" / "examples").mkdir(parents=True)
    later = runs / "run_date=2025-02-01" / "run_id=future"
    later.mkdir(parents=True)
    (later / "_SUCCESS").write_text("")

    third = nightly(root, "truncated.parquet", date="2025-01-04", run_id="n3",
                    compare_args="--band 0.002")
    assert third.returncode == 1, third.stderr
    doc = json.loads((runs / "compare" / "run_date=2025-01-04" / "run_id=n3" / "compare.json")
                     .read_text())
    assert doc["baseline"]["run_id"] == "n2" and doc["alarm"]
    assert doc["top"][0]["baseline_prediction"] is not None
    assert "ALARM" in third.stderr

    failed = nightly(root, "missing.parquet", date="2025-01-05", run_id="n4")
    assert failed.returncode == 2 and "overlap score failed" in failed.stderr


def test_nightly_usage():
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 2 and "Usage:" in result.stderr
