"""`overlap score` imports only what the run needs: a small default run (the command a
5,000-row job runs, docs/sizing.md) never loads pandas, numba, scipy, fsspec or Ray, nor
the segmenters' module of --language (and importlib.resources under it), and forks no
worker.

pandas would cost about 0.1 CPU-second of a 0.5 s command: pyarrow imports it on the first
conversion from Python or numpy values (pipeline.arrays avoids that). Checked in a fresh
interpreter: this one has loaded them all.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

HEAVY = ("pandas", "numba", "scipy", "fsspec", "ray",
         "pipeline.tokenizers.multilingual", "importlib.resources")

_RUN = r"""
import json, sys
from pipeline.cli import main
try:
    main(sys.argv[1:], prog_name="overlap")
except SystemExit as e:
    if e.code:
        raise
print(json.dumps(sorted(m for m in HEAVY if m in sys.modules)))
""".replace("HEAVY", repr(HEAVY))


def _inputs(tmp_path):
    table = pa.table({"id": ["a", "b", "c"],
                      "prediction": ["the cat sat", "a dog ran far", ""],
                      "references": [["the cat sat on the mat"], ["the dog ran"], ["x y"]]})
    pq.write_table(table, tmp_path / "preds.parquet")
    return tmp_path / "preds.parquet"


def _loaded(args: list[str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_default_score_run_loads_no_heavy_module(tmp_path):
    preds = _inputs(tmp_path)
    assert _loaded(["score", str(preds), "--output", str(tmp_path / "run")]) == []
    assert (tmp_path / "run" / "_SUCCESS").exists()
    # nor forks a worker (pipeline.engine.run.FORK_MIN_ROWS)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["engine"]["engine"] == "local" and manifest["engine"]["num_cpus"] == 1


def test_the_check_sees_a_heavy_module(tmp_path):
    # the same run with pandas imported on purpose: the check is not blind
    preds = _inputs(tmp_path)
    code = _RUN.replace("from pipeline.cli import main",
                        "import pandas\nfrom pipeline.cli import main")
    done = subprocess.run([sys.executable, "-c", code, "score", str(preds), "--output",
                           str(tmp_path / "run")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["pandas"]
