"""Score and compare on a 3-node Ray cluster whose nodes share no disk, with runs on S3.

As users run it (issue 24, item 9): three Ray nodes on 127.0.0.7-9, each in its own mount
namespace with a private ``/tmp`` and ``/dev/shm`` (``tests/support/ns_cluster.py``; as
root, as CI runs), token authentication on, inputs and outputs on moto's S3 server on
loopback (started and stopped here). The driver is the CLI run on the head (in its mount
namespace). The storage settings reach the driver as ``OVERLAP_S3_*`` variables and the
workers only through the driver (the nodes hold the AWS keys alone; nobody sets
``AWS_ENDPOINT_URL``).

Before issue 24, compare wrote its exchange and first-pass files into the driver's temp
dir: a task on another node could not read them (exit 4, or a pass only when Ray placed
every task on the head). The comparisons here must equal an in-process comparison of the
same runs, for runs partitioned alike (no exchange) and differently (the exchange).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from tests.support.ns_cluster import MotoServer, PrivateTmpCluster, can_isolate

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"
OVERLAP = Path(sys.executable).with_name("overlap")
BUCKET = "overlap-test"
KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret-value",
        "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.fixture(scope="module")
def moto():
    pytest.importorskip("moto")
    server = MotoServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def storage_env(moto):
    return {"OVERLAP_S3_ENDPOINT": moto.endpoint, "OVERLAP_S3_ALLOW_HTTP": "1",
            "OVERLAP_S3_PATH_STYLE": "1", "OVERLAP_S3_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def cluster():
    why = can_isolate()
    if why:
        pytest.skip(why)
    nodes = PrivateTmpCluster(cpus_per_node=1, node_env_extra=dict(KEYS))
    try:
        nodes.start()
        yield nodes
    finally:
        leftovers = nodes.stop()
    assert leftovers == [], "processes of the test cluster outlived their ray start"


@pytest.fixture(scope="module")
def inputs(moto):
    """Baseline and candidate predictions and the references, uploaded to the bucket."""
    fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{moto.port}", scheme="http",
                           region="us-east-1", access_key=KEYS["AWS_ACCESS_KEY_ID"],
                           secret_key=KEYS["AWS_SECRET_ACCESS_KEY"],
                           allow_bucket_creation=True)
    fs.create_dir(BUCKET)
    preds = pq.read_table(DATA / "predictions")
    words = pc.split_pattern(preds.column("prediction"), " ")
    # the candidate: every 5th prediction cut to its first 12 words
    cut = [" ".join(w[:12]) if i % 5 == 0 else " ".join(w)
           for i, w in enumerate(words.to_pylist())]
    cand = preds.set_column(preds.schema.get_field_index("prediction"), "prediction",
                            pa.array(cut, pa.large_string()))
    for name, table in (("baseline", preds), ("candidate", cand),
                        ("references", pq.read_table(DATA / "references.parquet"))):
        with fs.open_output_stream(f"{BUCKET}/in/{name}.parquet") as fh:
            pq.write_table(table, fh)
    return {k: f"s3://{BUCKET}/in/{k}.parquet" for k in ("baseline", "candidate", "references")}


def _driver(cluster, storage_env, *args: str, timeout: int = 240):
    env = {**cluster.env(), **KEYS, **storage_env}
    return cluster.run_on(0, [str(OVERLAP), *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd="/")


@pytest.fixture(scope="module")
def config_dir():
    """Config files where every node's namespace sees them (not under the private /tmp)."""
    import shutil
    import tempfile

    where = tempfile.mkdtemp(prefix="overlap-ns-test-", dir="/var/tmp")
    yield Path(where)
    shutil.rmtree(where, ignore_errors=True)


def _score(cluster, storage_env, config_dir, preds, refs, out, rows):
    config = config_dir / f"rows-{rows}.yaml"
    config.write_text(f"partition_rows: {rows}\n")
    proc = _driver(cluster, storage_env, "score", preds, "--references", refs, "--output", out,
                   "--address", cluster.address, "--config", str(config),
                   "--bootstrap", "0", "--group-by", "system", "--keep-text")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _local_compare(storage_env, monkeypatch, a, b):
    from pipeline import api

    for k, v in {**KEYS, **storage_env}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return api.compare(a, b, engine="local", num_cpus=1).to_document()


def _same(cluster_doc, local_doc):
    for key in ("rows", "pairing", "alarms", "top"):
        assert json.dumps(cluster_doc[key], sort_keys=True) == \
            json.dumps(local_doc[key], sort_keys=True), key


def _listing(storage_env, prefix):
    fs = pafs.S3FileSystem(endpoint_override=storage_env["OVERLAP_S3_ENDPOINT"][7:],
                           scheme="http", region="us-east-1",
                           access_key=KEYS["AWS_ACCESS_KEY_ID"],
                           secret_key=KEYS["AWS_SECRET_ACCESS_KEY"])
    return [i.path for i in fs.get_file_info(pafs.FileSelector(prefix, recursive=True,
                                                               allow_not_found=True))]


def test_compare_on_nodes_without_a_shared_disk_equals_an_in_process_compare(
        cluster, moto, storage_env, inputs, config_dir, monkeypatch):
    runs = f"s3://{BUCKET}/runs"
    for name, side, rows in (("a", "baseline", 700), ("b", "candidate", 700),
                             ("c", "candidate", 500)):
        _score(cluster, storage_env, config_dir, inputs[side], inputs["references"],
               f"{runs}/{name}", rows)
    for name, cand in (("same", "b"), ("exchanged", "c")):
        out = f"s3://{BUCKET}/cmp/{name}"
        proc = _driver(cluster, storage_env, "compare", f"{runs}/a", f"{runs}/{cand}",
                       "--address", cluster.address, "--format", "json", "--output", out)
        assert proc.returncode in (0, 1), proc.stderr[-3000:]
        doc = json.loads(proc.stdout)  # stdout holds the document alone
        assert doc["pairing"]["n_paired"] == 2500
        _same(doc, _local_compare(storage_env, monkeypatch, f"{runs}/a", f"{runs}/{cand}"))
    left = _listing(storage_env, f"{BUCKET}/cmp")
    assert not [p for p in left if "overlap-compare" in p], left  # the scratch is gone
    assert sorted(p.rsplit("/", 1)[1] for p in left if p.endswith(".json")) == \
        ["compare.json", "compare.json"]


def test_nightly_on_the_cluster_with_an_s3_root_publishes_and_uploads_its_plot(
        cluster, storage_env, inputs, config_dir):
    pytest.importorskip("deltalake")
    pytest.importorskip("pyiceberg")
    pytest.importorskip("matplotlib")
    root = f"s3://{BUCKET}/nightly"
    catalog = config_dir / "catalog.db"
    publish = (f"--delta s3://{BUCKET}/delta --iceberg sqlite:///{catalog} --namespace evals "
               f"--warehouse s3://{BUCKET}/iceberg")
    for night, side in (("2026-12-01", "baseline"), ("2026-12-02", "candidate")):
        env_extra = {"RAY_ADDRESS": cluster.address, "RUN_DATE": night,
                     "RUN_ID": f"n{night[-2:]}", "SCORE_ARGS": "--keep-text --bootstrap 0",
                     "PUBLISH_ARGS": publish}
        proc = _driver(cluster, {**storage_env, **env_extra}, "nightly", root, inputs[side],
                       inputs["references"])
        assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert "ALARM" in proc.stdout or "no alarm" in proc.stdout
    fs = pafs.S3FileSystem(endpoint_override=storage_env["OVERLAP_S3_ENDPOINT"][7:],
                           scheme="http", region="us-east-1",
                           access_key=KEYS["AWS_ACCESS_KEY_ID"],
                           secret_key=KEYS["AWS_SECRET_ACCESS_KEY"])
    png = f"{BUCKET}/nightly/compare/run_date=2026-12-02/run_id=n02/delta.png"
    with fs.open_input_stream(png) as fh:  # drawn on the head, uploaded (was: not drawn)
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    from deltalake import DeltaTable

    options = {"AWS_ENDPOINT_URL": storage_env["OVERLAP_S3_ENDPOINT"], "AWS_ALLOW_HTTP": "true",
               "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": KEYS["AWS_ACCESS_KEY_ID"],
               "AWS_SECRET_ACCESS_KEY": KEYS["AWS_SECRET_ACCESS_KEY"]}
    examples = DeltaTable(f"s3://{BUCKET}/delta/examples",
                          storage_options=options).to_pyarrow_table()
    assert examples.num_rows == 5000
    from pyiceberg.catalog.sql import SqlCatalog

    ice = SqlCatalog("overlap", uri=f"sqlite:///{catalog}",
                     **{"s3.endpoint": storage_env["OVERLAP_S3_ENDPOINT"],
                        "s3.region": "us-east-1",
                        "s3.access-key-id": KEYS["AWS_ACCESS_KEY_ID"],
                        "s3.secret-access-key": KEYS["AWS_SECRET_ACCESS_KEY"]})
    assert ice.load_table(("evals", "aggregates")).scan().to_arrow().num_rows > 0


@pytest.mark.parametrize("case,cause", [
    ("wrong token", "refused this driver's token (wrong token)"),
    ("no token", "needs a token and this driver has none"),
    ("not a node", "this machine is not a node of the Ray cluster"),
])
def test_a_driver_that_cannot_work_fails_in_seconds_naming_the_cause(
        cluster, storage_env, inputs, case, cause):
    import subprocess
    import time

    env = {**cluster.env(), **KEYS, **storage_env}
    if case == "wrong token":
        env["RAY_AUTH_TOKEN"] = "0" * 64
    elif case == "no token":
        env.pop("RAY_AUTH_TOKEN")
    prefix = [] if case == "not a node" else cluster.driver_prefix(0)
    started = time.monotonic()
    proc = subprocess.run([*prefix, str(OVERLAP), "score", inputs["baseline"], "--references",
                           inputs["references"], "--output", f"s3://{BUCKET}/runs/{case[:3]}",
                           "--address", cluster.address], env=env, capture_output=True,
                          text=True, timeout=120, cwd="/")
    took = time.monotonic() - started
    assert proc.returncode == 4, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and cause in lines[0], lines  # one line, no Ray warnings
    assert took < 15, took  # was about 23 s (a wrong token) before
