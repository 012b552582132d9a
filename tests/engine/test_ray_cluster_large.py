"""``overlap score --address`` of 200,000 rows on a three-node Ray cluster (loopback only).

Three ``ray start --block`` processes (``tests/support/ray_cluster.py``), one CPU each, on
127.0.0.4-6; the driver is the CLI in a subprocess that ships this package. The input is
200,000 (prediction, references) pairs resampled from the bundled REALSumm data under new
ids, in 4 shards, cut into 10 partitions: every node reads, checks and scores partitions
through the exchange files in the shared staging directory. The files written equal, file by
file (metadata included), those of an in-process run of the same command. Then ``overlap
compare --address`` of that run against a candidate (one prediction in ten cut to half its
words) pairs and tests the two runs partition by partition on the cluster, and writes the
same ``compare.json`` and ``compare.parquet`` as an in-process compare and as the in-memory
comparison.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.api import score
from pipeline.config import ScoreConfig
from tests.support.ray_cluster import LoopbackCluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"
OVERLAP = Path(sys.executable).with_name("overlap")
NODES = ("127.0.0.4", "127.0.0.5", "127.0.0.6")
ROWS = 200_000


@pytest.fixture(scope="module")
def cluster():
    """Three nodes of one CPU each; stopped (only them) whatever happens."""
    nodes = LoopbackCluster(node_ips=NODES, cpus_per_node=1)
    try:
        nodes.start()
        yield nodes
    finally:
        leftovers = nodes.stop()
    assert leftovers == [], "processes of the test cluster outlived their ray start"


def _inputs(folder: Path, *, cut: bool = False) -> Path:
    """200,000 resampled REALSumm pairs with a references list column, 4 shards (``cut``:
    one prediction in ten cut to its first half)."""
    preds = pq.read_table(DATA / "predictions")
    refs = pq.read_table(DATA / "references.parquet").group_by("id").aggregate(
        [("reference", "list")])
    lists = dict(zip(refs.column("id").to_pylist(), refs.column("reference_list").to_pylist(),
                     strict=True))
    pick = np.random.default_rng(7).integers(0, preds.num_rows, ROWS)
    texts = preds.column("prediction").take(pa.array(pick))
    if cut:
        words = [t.split(" ") for t in texts.to_pylist()]
        texts = pa.array([" ".join(w[:max(1, len(w) // 2)]) if i % 10 == 3 else " ".join(w)
                          for i, w in enumerate(words)], texts.type)
    ids = preds.column("id").to_pylist()
    table = pa.table({
        "id": pa.array([f"ex{i:06d}" for i in range(ROWS)]),
        "system": preds.column("system").take(pa.array(pick)),
        "prediction": texts,
        "references": pa.array([lists[ids[p]] for p in pick], pa.list_(pa.string()))})
    folder.mkdir()
    for s in range(4):
        pq.write_table(table.slice(s * ROWS // 4, ROWS // 4), folder / f"part-{s}.parquet",
                       row_group_size=10_000)
    return folder


def test_200k_rows_on_three_nodes_equal_an_in_process_run(cluster, tmp_path):
    inputs = _inputs(tmp_path / "in")
    (tmp_path / "settings.yaml").write_text("partition_rows: 20000\n")  # 10 partitions
    args = ["score", str(inputs), "--output", str(tmp_path / "cluster"), "--config",
            str(tmp_path / "settings.yaml"), "--group-by", "system", "--run-id", "big"]
    command = [str(OVERLAP)] if OVERLAP.exists() else [
        sys.executable, "-c", "from pipeline.cli import main; main()"]
    # one host, one disk: the nodes share it (--allow-local-paths)
    proc = subprocess.run([*command, *args, "--address", cluster.address, "--allow-local-paths"],
                          env=cluster.env(), capture_output=True, text=True, timeout=1200,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"Ray cluster at {cluster.address}, 3 CPUs" in proc.stdout
    manifest = json.loads((tmp_path / "cluster" / "manifest.json").read_text())
    assert manifest["counts"]["examples_scored"] == ROWS
    assert manifest["counts"]["partitions"] == 10
    assert manifest["engine"].get("spilled_bytes", 0) == 0
    where = [e["where"] for e in manifest["outputs"]["examples"]]
    assert {w["node_ip"] for w in where} == set(NODES)  # every node scored partitions

    local = tmp_path / "local"
    score(str(inputs), output=str(local), run_id="big",
          config=ScoreConfig(engine="local", group_by=("system",), partition_rows=20_000))
    names = sorted(p.name for p in (local / "examples").iterdir())
    assert len(names) == 10
    assert names == sorted(p.name for p in (tmp_path / "cluster" / "examples").iterdir())
    for name in names:  # file by file, run id and signature metadata included
        assert pq.read_table(tmp_path / "cluster" / "examples" / name).equals(
            pq.read_table(local / "examples" / name), check_metadata=True), name
    assert pq.read_table(tmp_path / "cluster" / "aggregate.parquet").equals(
        pq.read_table(local / "aggregate.parquet"), check_metadata=True)

    # compare on the cluster: that run against a candidate scored in-process
    candidate = tmp_path / "candidate"
    score(str(_inputs(tmp_path / "in-cut", cut=True)), output=str(candidate), run_id="cut",
          config=ScoreConfig(engine="local", group_by=("system",), partition_rows=20_000))
    proc = subprocess.run([*command, "compare", str(tmp_path / "cluster"), str(candidate),
                           "--output", str(tmp_path / "cmp-cluster"), "--address",
                           cluster.address, "--format", "json", "--allow-local-paths"],
                          env=cluster.env(), capture_output=True, text=True, timeout=1200,
                          cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr  # 0 no alarm, 1 an alarm
    assert (tmp_path / "cmp-cluster" / "compare.json").exists(), proc.stderr
    from pipeline.api import compare
    from pipeline.compare import compare_runs

    in_process = compare(str(tmp_path / "cluster"), str(candidate),
                         output=str(tmp_path / "cmp-local"), engine="local")
    memory = compare_runs(str(tmp_path / "cluster"), str(candidate))
    written = json.loads((tmp_path / "cmp-cluster" / "compare.json").read_text())
    assert written["pairing"]["n_paired"] == ROWS
    assert written == json.loads((tmp_path / "cmp-local" / "compare.json").read_text())
    assert written == json.loads(json.dumps(memory.to_document()))
    assert pq.read_table(tmp_path / "cmp-cluster" / "compare.parquet").equals(
        pq.read_table(tmp_path / "cmp-local" / "compare.parquet"), check_metadata=True)
    assert in_process.comparison.scheme == "partitioned"
