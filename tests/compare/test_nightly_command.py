"""`overlap nightly` (issue 17): the nightly loop as a command, testable from Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pipeline import api
from pipeline.cli import main
from pipeline.config import ScoreConfig
from tests.compare.test_compare_fixtures import realsumm, truncate_half

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "nightly.sh"


@pytest.fixture(scope="module")
def texts():
    return realsumm().head(120).reset_index(drop=True)


def _predictions(path: Path, frame, *, seed: int, cut: bool = False) -> str:
    rng = np.random.default_rng(seed)
    out = frame[["id", "prediction"]].copy()
    out["references"] = [[r] for r in frame["reference"]]
    noisy = rng.random(len(out)) < 0.4
    words = [t.split() for t in out["prediction"]]
    out["prediction"] = [" ".join(w for w in ws if not (n and rng.random() < 0.3))
                         for ws, n in zip(words, noisy, strict=True)]
    if cut:
        out["prediction"] = [truncate_half(t) for t in out["prediction"]]
    out.to_parquet(path)
    return str(path)


@pytest.mark.slow
def test_a_root_holding_a_newline_compares_with_the_right_baseline(tmp_path, texts):
    # issue 19: nightly.sh printed each run's path on a line of its own, so a ROOT with a
    # newline broke every later night's baseline (exit 2)
    root = tmp_path / "evals\nnightly"
    preds = _predictions(tmp_path / "p.parquet", texts.head(20), seed=0)
    env = {**os.environ, "OVERLAP": f"{sys.executable} -m pipeline.cli",
           "SCORE_ARGS": "--engine local --bootstrap 0", "PYTHONPATH": str(REPO)}
    for night, date in (("n1", "2025-01-01"), ("n2", "2025-01-02")):
        done = subprocess.run(["bash", str(SCRIPT), str(root), preds],
                              env={**env, "RUN_DATE": date, "RUN_ID": night},
                              capture_output=True, text=True, timeout=300, cwd=REPO)
        assert done.returncode == 0, done.stderr
    doc = json.loads((root / "compare" / "run_date=2025-01-02" / "run_id=n2" / "compare.json")
                     .read_text())
    assert doc["baseline"]["path"] == f"{root}/run_date=2025-01-01/run_id=n1"
    assert doc["history"]["nights"][0]["run_id"] == "n1"


def test_nightly_from_python_learns_its_band_and_alarms_on_a_step(tmp_path, texts):
    root = str(tmp_path / "root")
    config = ScoreConfig(metrics=("rouge1",), bootstrap=0, engine="local", keep_text=True)
    logs: list[str] = []
    for t in range(9):
        night = api.nightly(root, _predictions(tmp_path / f"p{t}.parquet", texts, seed=t),
                            run_date=f"2025-01-{t + 1:02d}", run_id=f"n{t}", config=config,
                            compare_options={"n_bootstrap": 200, "top": 2}, plot=False,
                            log=logs.append)
        assert night.exit_code in (0, 1), logs
    assert night.comparison is not None
    assert night.comparison.bands[0].startswith(("band: learned", "band: floor"))
    assert "(history: 8 nights)" in night.comparison.bands[0]
    step = api.nightly(root, _predictions(tmp_path / "cut.parquet", texts, seed=99, cut=True),
                       run_date="2025-01-10", run_id="n9", config=config,
                       compare_options={"n_bootstrap": 200}, plot=False, log=logs.append)
    assert step.exit_code == 1 and step.baseline.endswith("run_date=2025-01-09/run_id=n8")
    doc = json.loads((Path(step.compare_dir) / "compare.json").read_text())
    assert {"group": "all", "metric": "rouge1", "measure": "fmeasure", "kind": "change"} \
        in doc["alarms"]
    assert logs[-1].startswith("ALARM: read ")
    # the same night again reuses the score and redoes the comparison
    again = api.nightly(root, "/no/such/input.parquet", run_date="2025-01-10", run_id="n9",
                        config=config, compare_options={"n_bootstrap": 200}, plot=False,
                        log=logs.append)
    assert again.exit_code == 1 and any(line.startswith("reusing the finished run")
                                        for line in logs[-3:])


def test_nightly_options_are_checked_before_anything_is_written(tmp_path, texts):
    preds = _predictions(tmp_path / "p.parquet", texts.head(10), seed=0)
    root = tmp_path / "root"
    for env in ({"COMPARE_ARGS": "--no-such-option"}, {"SCORE_ARGS": "--output elsewhere"},
                {"RUN_ID": "../escape"}, {"RUN_DATE": "yesterday"},
                {"PUBLISH_ARGS": "--run-date 2025-01-01 --delta x"}):
        result = CliRunner().invoke(main, ["nightly", str(root), preds], env=env)
        assert result.exit_code == 2, (env, result.output)
        assert result.output.startswith("nightly: ") and "Traceback" not in result.output
        assert not root.exists()
