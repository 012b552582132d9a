"""scripts/nightly.sh: any characters in ROOT; rerunning a night resumes it (issue 12)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "nightly.sh"
OVERLAP = f"{sys.executable} -m pipeline.cli"


def _night(root: Path, preds: Path, *, date: str, run_id: str, compare_args: str = "",
           score_args: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "OVERLAP": OVERLAP, "RUN_DATE": date, "RUN_ID": run_id,
           "SCORE_ARGS": f"--engine local --bootstrap 0 {score_args}",
           "COMPARE_ARGS": compare_args,
           "PYTHONPATH": str(ROOT)}
    return subprocess.run(["bash", str(SCRIPT), str(root), str(preds)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def predictions(tmp_path) -> Path:
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": [f"e{i}" for i in range(20)],
                             "prediction": [f"the cat sat on mat {i}" for i in range(20)],
                             "references": [[f"the cat sat on the mat {i}"] for i in range(20)]}),
                   path)
    return path


@pytest.mark.slow
def test_a_root_with_glob_characters_finds_its_baseline_and_a_rerun_resumes(tmp_path,
                                                                           predictions):
    root = tmp_path / "data" / "evals[prod] *x?"
    first = _night(root, predictions, date="2025-01-01", run_id="n1")
    assert first.returncode == 0, first.stderr
    assert "nothing to compare with" in first.stderr
    # night 2: the comparison fails (the baseline's examples moved away after its manifest
    # was written, so it no longer matches it), after the score finished (a bad
    # COMPARE_ARGS is refused before anything is written: issue 25)
    examples = root / "run_date=2025-01-01" / "run_id=n1" / "examples"
    moved = tmp_path / "moved"
    examples.rename(moved)
    second = _night(root, predictions, date="2025-01-02", run_id="n2")
    assert second.returncode == 2, second.stderr
    assert f"comparing {root}/run_date=2025-01-02/run_id=n2 with {root}/run_date=2025-01-01/" \
           "run_id=n1" in second.stderr
    assert "to redo it, run again with RUN_DATE=2025-01-02 RUN_ID=n2" in second.stderr
    run = root / "run_date=2025-01-02" / "run_id=n2"
    success = (run / "_SUCCESS").stat().st_mtime_ns
    # the rerun of night 2 reuses the score and redoes the comparison
    moved.rename(examples)
    again = _night(root, predictions, date="2025-01-02", run_id="n2")
    assert again.returncode == 0, again.stderr
    assert f"reusing the finished run {run}" in again.stderr
    assert (run / "_SUCCESS").stat().st_mtime_ns == success
    doc = json.loads((root / "compare" / "run_date=2025-01-02" / "run_id=n2" / "compare.json")
                     .read_text())
    assert doc["baseline"]["run_id"] == "n1" and doc["candidate"]["run_id"] == "n2"
