"""scripts/nightly.sh: score, find the last successful run, compare, exit non-zero on alarm.

`overlap score` is stood in for by a small script that writes the run directory with the
compare tests' helper (exact rouge-score scores); `overlap compare` is the real command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.test_compare_fixtures import REPO, realsumm, truncate_half

SCRIPT = REPO / "scripts" / "nightly.sh"
FAKE = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    args = sys.argv[1:]
    if args[0] == "compare":
        from pipeline.cli import main
        main(args, prog_name="overlap")
    assert args[0] == "score", args
    predictions = Path(args[1])
    out, run_id = Path(args[args.index("--output") + 1]), args[args.index("--run-id") + 1]
    if not predictions.exists():
        print(f"Error: no such input {{predictions}}", file=sys.stderr)
        sys.exit(2)
    import pandas as pd
    from tests.test_compare_fixtures import score, write_run
    frame = score(pd.read_parquet(predictions))
    write_run(out, frame, run_id=run_id, keep_text="--keep-text" in args)
""")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("nightly")
    fake = root / "fake_overlap.py"
    fake.write_text(FAKE.format(tests=str(REPO)))
    frame = realsumm().head(500)[["id", "prediction", "reference"]].reset_index(drop=True)
    frame.to_parquet(root / "good.parquet")
    rng = np.random.default_rng(11)
    cut = rng.choice(len(frame), size=len(frame) // 10, replace=False)
    bad = frame.copy()
    bad.loc[cut, "prediction"] = [truncate_half(t) for t in bad.loc[cut, "prediction"]]
    bad.to_parquet(root / "truncated.parquet")
    return root, fake


def nightly(root: Path, fake: Path, predictions: str, *, date: str, run_id: str,
            compare_args: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "OVERLAP": f"{sys.executable} {fake}", "RUN_DATE": date,
           "RUN_ID": run_id, "COMPARE_ARGS": compare_args}
    return subprocess.run(["bash", str(SCRIPT), str(root / "runs"), str(root / predictions)],
                          env=env, capture_output=True, text=True, timeout=120)


def test_nightly_loop(setup):
    root, fake = setup
    runs = root / "runs"
    first = nightly(root, fake, "good.parquet", date="2025-01-01", run_id="n1")
    assert first.returncode == 0, first.stderr
    assert "nothing to compare with" in first.stderr
    assert (runs / "run_date=2025-01-01" / "run_id=n1" / "_SUCCESS").exists()

    second = nightly(root, fake, "good.parquet", date="2025-01-02", run_id="n2")
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

    third = nightly(root, fake, "truncated.parquet", date="2025-01-04", run_id="n3",
                    compare_args="--band 0.002")
    assert third.returncode == 1, third.stderr
    doc = json.loads((runs / "compare" / "run_date=2025-01-04" / "run_id=n3" / "compare.json")
                     .read_text())
    assert doc["baseline"]["run_id"] == "n2" and doc["alarm"]
    assert "ALARM" in third.stderr

    failed = nightly(root, fake, "missing.parquet", date="2025-01-05", run_id="n4")
    assert failed.returncode == 2 and "overlap score failed" in failed.stderr


def test_nightly_usage(tmp_path):
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 2 and "Usage:" in result.stderr
