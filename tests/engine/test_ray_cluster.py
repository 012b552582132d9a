"""``overlap score --address`` on a real two-node Ray cluster, started here on loopback only.

Two ``ray start --block`` processes (``tests/support/ray_cluster.py``): the head on 127.0.0.2 and a
second node on 127.0.0.3, one CPU each, our own temp dir, no dashboard. Token authentication
stays on, with a random token handed over in the environment (``RAY_AUTH_TOKEN``), because
Ray 2.60's GCS and raylets listen on every interface whatever ``--node-ip-address`` says:
the nodes talk over loopback, but only the token keeps other hosts out. No token file is
written to the home directory.

The driver is the CLI in a subprocess, as a user runs it against a cluster (it ships this
package to the workers with ``runtime_env={"py_modules": [...]}``). Only the processes
started here are stopped, also when a test fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.api import score
from pipeline.config import ScoreConfig
from tests.support.listening import is_loopback, is_wildcard
from tests.support.ray_cluster import LoopbackCluster

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"
PREDS = str(DATA / "predictions")
REFS = str(DATA / "references.parquet")
TOKEN = Path.home() / ".ray" / "auth_token"
OVERLAP = Path(sys.executable).with_name("overlap")
NODES = ("127.0.0.2", "127.0.0.3")


@pytest.fixture(scope="module")
def cluster():
    """Two nodes of one CPU each; stopped (only them) whatever happens."""
    had_token = TOKEN.exists()
    nodes = LoopbackCluster(node_ips=NODES, cpus_per_node=1)
    try:
        nodes.start()
        yield nodes
    finally:
        leftovers = nodes.stop()
    assert leftovers == [], "processes of the test cluster outlived their ray start"
    assert had_token or not TOKEN.exists(), "a Ray token file appeared in the home directory"


def _score_on(cluster, out: Path, *args: str) -> list[dict]:
    """``overlap score`` on the cluster from a directory without this checkout; the ``where``
    of each examples file, after checking that both nodes ran the shipped package."""
    command = [str(OVERLAP)] if OVERLAP.exists() else [
        sys.executable, "-c", "from pipeline.cli import main; main()"]
    proc = subprocess.run(
        [*command, "score", PREDS, "--references", REFS, "--output", str(out),
         "--address", cluster.address, "--allow-local-paths", *args],  # one host, one disk
        env=cluster.env(), capture_output=True, text=True, timeout=300, cwd=out.parent)
    assert proc.returncode == 0, proc.stderr
    assert f"Ray cluster at {cluster.address}, 2 CPUs" in proc.stdout

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["engine"]["address"] == cluster.address
    where = [e["where"] for e in manifest["outputs"]["examples"]]
    assert {w["node_ip"] for w in where} == set(NODES)  # both nodes scored partitions
    assert len({w["node_id"] for w in where}) == 2
    # the package Ray unpacked from what the driver shipped, not this checkout
    assert all(w["package"].startswith(cluster.temp_dir) for w in where), where
    return where


def test_score_on_two_nodes_equals_local_mode(cluster, tmp_path):
    (tmp_path / "settings.yaml").write_text("partition_rows: 700\n")  # 4 partitions
    out = tmp_path / "cluster"
    where = _score_on(cluster, out, "--config", str(tmp_path / "settings.yaml"),
                      "--group-by", "system", "--run-id", "c1")
    assert len(where) == 4

    local = tmp_path / "local"
    score(PREDS, references=REFS, output=str(local), run_id="c1",
          config=ScoreConfig(engine="local", group_by=("system",), partition_rows=700))
    names = sorted(p.name for p in (out / "examples").iterdir())
    assert names == sorted(p.name for p in (local / "examples").iterdir())
    for name in names:  # file by file, run id and signature metadata included
        assert pq.read_table(out / "examples" / name).equals(
            pq.read_table(local / "examples" / name), check_metadata=True), name
    assert pq.read_table(out / "aggregate.parquet").equals(
        pq.read_table(local / "aggregate.parquet"), check_metadata=True)


def test_rouge155_on_two_nodes_reads_its_word_lists_from_the_shipped_package(cluster, tmp_path):
    # the script's stemmer exceptions and stopwords are package data: they must travel
    (tmp_path / "settings.yaml").write_text("partition_rows: 1300\n")  # 2 partitions
    flags = "-n 2 -2 4 -u -m -s"
    _score_on(cluster, tmp_path / "cluster", "--config", str(tmp_path / "settings.yaml"),
              "--rouge155", flags, "--run-id", "r1", "--bootstrap", "0")
    local = tmp_path / "local"
    proc = subprocess.run(
        [sys.executable, "-c", "from pipeline.cli import main; main()", "score", PREDS,
         "--references", REFS, "--output", str(local), "--engine", "local", "--config",
         str(tmp_path / "settings.yaml"), "--rouge155", flags, "--run-id", "r1",
         "--bootstrap", "0"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in (local / "examples").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "cluster" / "examples").iterdir())
    for name in names:
        assert pq.read_table(tmp_path / "cluster" / "examples" / name).equals(
            pq.read_table(local / "examples" / name), check_metadata=True), name


def test_the_cluster_binds_no_address_but_loopback_and_the_wildcard(cluster):
    """Ray never picked the host's network address; its wildcard listeners need the token."""
    listening = cluster.listening_addresses()
    assert listening, "found no listening socket of the cluster's processes"
    # Some processes (e.g. runtime-env agents, when they are up) bind their node's address:
    # that must be loopback. Whether any is up at this moment is Ray's timing, not asserted.
    specific = {a for a in listening if not is_wildcard(a)}
    assert all(is_loopback(a) for a in specific), listening
