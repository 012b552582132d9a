"""A week of nights on a 3-node Ray cluster whose nodes share no disk, with runs on S3.

As users run it (issue 24, item 9 and its "Done when"): three Ray nodes on 127.0.0.7-9, each
in its own mount namespace with a private ``/tmp`` and ``/dev/shm``
(``tests/support/ns_cluster.py``; as root, as CI runs), token authentication on, inputs and
outputs on moto's S3 server on loopback (started and stopped here). The driver is the CLI
run on the head (in its mount namespace). The storage settings reach the driver as
``OVERLAP_S3_*`` variables and the workers only through the driver (the nodes hold the AWS
keys alone; nobody sets ``AWS_ENDPOINT_URL``).

What runs, in this order: ``overlap nightly`` for seven nights with an S3 ROOT, each night
600 REALSumm summaries (6 systems x 100 documents) with a night's own seeded variation (a
few words dropped), publishing every run and comparison to Delta and Iceberg on that S3:
on night 4 a worker node's raylet is SIGKILLed during the compare; from night 6 on the
predictions regress (every 5th cut to its first 12 words), and night 6 is retried as
Airflow retries (same RUN_DATE, no RUN_ID) and writes the report. Then: a night's run
against the same night scored in-process; ``overlap compare`` of runs partitioned alike and
differently (the exchange) against in-process comparisons (on the two nodes left); drivers
that cannot work.

Before issue 24, compare wrote its exchange and first-pass files into the driver's temp
dir: a task on another node could not read them (exit 4, or a pass only when Ray placed
every task on the head); a retried night compared with its own first attempt and cleared
its alarm; the alarms stayed in compare.json.
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from tests.support.ns_cluster import PrivateTmpCluster, can_isolate

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"
OVERLAP = Path(sys.executable).with_name("overlap")
RAY = Path(sys.executable).with_name("ray")
# Ray's job server (part of its dashboard) needs ray[default] (the `cluster` extra)
JOBS = importlib.util.find_spec("aiohttp_cors") is not None
BUCKET = "overlap-test"
KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret-value",
        "AWS_EC2_METADATA_DISABLED": "true"}
N_SYSTEMS, N_DOCS = 6, 100
N_ROWS = N_SYSTEMS * N_DOCS  # a night's predictions
PARTITION_ROWS = 200  # the nights' partitions (3 per run); the other partitioning: 150
REGRESSED_FROM = 6  # night 6 on: every 5th prediction cut to its first 12 words
KILL_ON = 4  # the night whose compare loses a worker node
# (night, RUN_DATE, RUN_ID): nights 1-5 as cron runs them (a fixed RUN_ID per night), night
# 6 and its retry as Airflow runs them (RUN_DATE only), night 7 again with a RUN_ID
NIGHTS = tuple((k, f"2026-12-0{k}", None if k == 6 else f"n0{k}") for k in range(1, 8))
NIGHTS = (*NIGHTS[:6], NIGHTS[5], NIGHTS[6])
RETRY = 6  # index in NIGHTS of night 6's retry


@pytest.fixture(scope="module")
def storage_env(moto):
    return {"OVERLAP_S3_ENDPOINT": moto.endpoint, "OVERLAP_S3_ALLOW_HTTP": "1",
            "OVERLAP_S3_PATH_STYLE": "1", "OVERLAP_S3_REGION": "us-east-1"}


def _s3(storage_env) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(endpoint_override=storage_env["OVERLAP_S3_ENDPOINT"][7:],
                             scheme="http", region="us-east-1",
                             access_key=KEYS["AWS_ACCESS_KEY_ID"],
                             secret_key=KEYS["AWS_SECRET_ACCESS_KEY"],
                             allow_bucket_creation=True)


@pytest.fixture(scope="module")
def cluster():
    why = can_isolate()
    if why:
        pytest.skip(why)
    # the head's dashboard takes Ray jobs (with ray[default]); the nodes' PATH starts with
    # this environment's bin, as a node's with the package installed would
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    nodes = PrivateTmpCluster(cpus_per_node=1, node_env_extra={**KEYS, "PATH": path},
                              dashboard=JOBS)
    try:
        nodes.start()
        yield nodes
    finally:
        leftovers = nodes.stop()
    assert leftovers == [], "processes of the test cluster outlived their ray start"


def _night_predictions(preds: pa.Table, night: int) -> pa.Table:
    """Night ``night``'s predictions: 10% of them lose one word at random (seeded by the
    night: a sampled model's run-to-run variation), and from :data:`REGRESSED_FROM` on every
    5th prediction is cut to its first 12 words (the regression)."""
    import numpy as np

    rng = np.random.default_rng(night)
    texts = []
    for i, text in enumerate(preds.column("prediction").to_pylist()):
        words = text.split(" ")
        if rng.random() < 0.1 and len(words) > 1:
            del words[int(rng.integers(len(words)))]
        if night >= REGRESSED_FROM and i % 5 == 0:
            words = words[:12]
        texts.append(" ".join(words))
    return preds.set_column(preds.schema.get_field_index("prediction"), "prediction",
                            pa.array(texts, pa.large_string()))


@pytest.fixture(scope="module")
def inputs(storage_env):
    """Every night's predictions (``night-K``) and the references, uploaded to the bucket:
    the first :data:`N_SYSTEMS` REALSumm systems with :data:`N_DOCS` summaries each."""
    fs = _s3(storage_env)
    fs.create_dir(BUCKET)
    preds = pq.read_table(DATA / "predictions").sort_by([("system", "ascending"),
                                                         ("id", "ascending")])
    counts = pc.value_counts(preds.column("system")).to_pylist()
    systems = sorted(c["values"] for c in counts if c["counts"] == N_DOCS)[:N_SYSTEMS]
    preds = preds.filter(pc.is_in(preds.column("system"), pa.array(systems)))
    refs = pq.read_table(DATA / "references.parquet")
    refs = refs.filter(pc.is_in(refs.column("id"), preds.column("id")))
    assert preds.num_rows == refs.num_rows == N_ROWS
    tables = {f"night-{k}": _night_predictions(preds, k) for k in range(1, 8)}
    tables["references"] = refs
    for name, table in tables.items():
        with fs.open_output_stream(f"{BUCKET}/in/{name}.parquet") as fh:
            pq.write_table(table, fh)
    return {k: f"s3://{BUCKET}/in/{k}.parquet" for k in tables}


def _driver(cluster, storage_env, *args: str, timeout: int = 300):
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


def _rows_config(config_dir: Path, rows: int) -> str:
    config = config_dir / f"rows-{rows}.yaml"
    config.write_text(f"partition_rows: {rows}\n")
    return str(config)


def _publish_args(config_dir: Path) -> str:
    return (f"--delta s3://{BUCKET}/delta --iceberg sqlite:///{config_dir / 'catalog.db'} "
            f"--namespace evals --warehouse s3://{BUCKET}/iceberg")


def _night_env(config_dir: Path, run_date: str, run_id: str | None) -> dict[str, str]:
    env = {"RUN_DATE": run_date,
           "SCORE_ARGS": f"--keep-text --bootstrap 0 --group-by system "
                         f"--config {_rows_config(config_dir, PARTITION_ROWS)}"}
    if run_id is not None:
        env["RUN_ID"] = run_id
    return env


def _raylet(procs: dict[int, str]) -> int | None:
    found = [pid for pid, cmd in procs.items() if "/raylet/raylet " in f"{cmd} "]
    return found[0] if found else None


def _run_killing_a_node(cluster, command: list[str], env: dict[str, str], where: Path):
    """Run ``command`` on the head; once a compare task runs on a worker node, SIGKILL that
    node's raylet (its workers die with it; the node stays dead). Returns the finished
    process and ``(node ip, task)`` killed, or None."""
    out, err = where / "stdout", where / "stderr"
    with open(out, "w") as fo, open(err, "w") as fe:
        proc = subprocess.Popen([*cluster.driver_prefix(0), *command], env=env, stdout=fo,
                                stderr=fe, text=True, cwd="/")
        killed = None
        try:
            while proc.poll() is None and killed is None:
                for node in (1, 2):
                    procs = cluster.node_processes(node)
                    tasks = [c for c in procs.values() if c.startswith("ray::compare_")]
                    raylet = _raylet(procs)
                    if tasks and raylet is not None:
                        os.kill(raylet, signal.SIGKILL)
                        killed = (cluster.node_ips[node], tasks[0])
                        break
                time.sleep(0.05)
            proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return subprocess.CompletedProcess(command, proc.returncode, out.read_text(),
                                       err.read_text()), killed


@pytest.fixture(scope="module")
def nights(cluster, storage_env, inputs, config_dir):
    """``overlap nightly`` on the cluster, night by night (:data:`NIGHTS`). On night
    :data:`KILL_ON` a worker node's raylet is SIGKILLed as soon as one of its compare tasks
    runs (the later nights and tests run on two nodes); night 6's retry also writes its
    report. Returns per night and attempt: the process, its wall time, its run dir, compare
    dir and baseline (from its log lines), and what was killed."""
    pytest.importorskip("deltalake")
    pytest.importorskip("pyiceberg")
    pytest.importorskip("matplotlib")
    root = f"s3://{BUCKET}/nightly"
    done = []
    for k, (night, run_date, run_id) in enumerate(NIGHTS):
        env = {**storage_env, **_night_env(config_dir, run_date, run_id),
               "RAY_ADDRESS": cluster.address, "PUBLISH_ARGS": _publish_args(config_dir)}
        if k == RETRY:
            env["REPORT"] = "1"
        command = [str(OVERLAP), "nightly", root, inputs[f"night-{night}"],
                   inputs["references"]]
        killed = None
        started = time.monotonic()
        if night != KILL_ON:
            proc = _driver(cluster, env, *command[1:])
        else:
            env = {**cluster.env(), **KEYS, **env}
            proc, killed = _run_killing_a_node(cluster, command, env, config_dir)
        took = time.monotonic() - started
        assert proc.returncode in (0, 1), proc.stderr[-3000:]
        run_dir = re.search(r"nightly: scoring into (\S+)", proc.stderr)
        compared = re.search(r"nightly: comparing (\S+) with (\S+)", proc.stderr)
        done.append({"proc": proc, "took": took, "run_dir": run_dir and run_dir.group(1),
                     "baseline": compared and compared.group(2),
                     "compare_dir": compared and compared.group(1).replace(
                         f"{root}/run_date=", f"{root}/compare/run_date="),
                     "killed": killed})
        print(f"night {night} {run_date} (RUN_ID {run_id}): exit {proc.returncode}, "
              f"{took:.1f} s" + (f", killed the raylet of {killed}" if killed else ""))
    return done


def _delta_options(storage_env) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL": storage_env["OVERLAP_S3_ENDPOINT"], "AWS_ALLOW_HTTP": "true",
            "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": KEYS["AWS_ACCESS_KEY_ID"],
            "AWS_SECRET_ACCESS_KEY": KEYS["AWS_SECRET_ACCESS_KEY"]}


def _read_json(fs, uri: str) -> dict:
    with fs.open_input_stream(uri.removeprefix("s3://")) as fh:
        return json.loads(fh.read())


def _alarms(doc: dict) -> set[tuple]:
    return {(a["group"], a.get("metric"), a.get("measure"), a["kind"]) for a in doc["alarms"]}


def test_a_week_of_nights_alarms_exactly_on_the_regression_and_its_retry_in_the_warehouse(
        nights, storage_env, config_dir):
    """Seven nights and a retry: exit 1 exactly on the night that regressed (both attempts).

    Night 7 regressed as night 6 did: compared with night 6 (the newest attempt of the
    date before), nothing moved, so it passes (exit 0). A step alarms on the night it
    happens; with fewer than 7 earlier nights the bands are static and no drift is charted
    (docs/nightly.md), so nothing alarms on later nights of the same level.
    """
    codes = [n["proc"].returncode for n in nights]
    assert codes == [0, 0, 0, 0, 0, 1, 1, 0], [n["proc"].stderr[-2000:] for n in nights]
    regressed, retry = nights[RETRY - 1], nights[RETRY]
    assert "nothing to compare with" in nights[0]["proc"].stderr
    for night in nights:
        assert ("ALARM" in night["proc"].stdout) is (night["proc"].returncode == 1)
    # night 4's compare lost a worker node (its raylet SIGKILLed) and finished all the same
    (killed,) = [n["killed"] for n in nights if n["killed"] is not None]
    assert killed[0] in ("127.0.0.8", "127.0.0.9"), killed
    # every night compares with the one before; the retry (same RUN_DATE, no RUN_ID: a new
    # attempt beside the first) with night 5, not with its own first attempt, and keeps
    # the alarm (failure 8); night 7 with the newest attempt of night 6 (the retry)
    assert retry["run_dir"] != regressed["run_dir"]
    assert "/run_date=2026-12-06/" in retry["run_dir"]
    run_dirs = [n["run_dir"] for n in nights]
    assert [n["baseline"] for n in nights] == [
        None, *run_dirs[:RETRY - 1], run_dirs[RETRY - 2], run_dirs[RETRY]]
    fs = _s3(storage_env)
    docs = [_read_json(fs, f"{n['compare_dir']}/compare.json") for n in nights[1:]]
    alarmed_docs = docs[RETRY - 2:RETRY]  # night 6 and its retry
    assert all(d["alarms"] == [] for d in docs[:RETRY - 2] + docs[RETRY:]), \
        [d["alarms"] for d in docs]
    assert alarmed_docs[0]["alarms"] and alarmed_docs[0]["alarms"] == alarmed_docs[1]["alarms"]

    # delta.png drawn on the head and uploaded (was: not drawn); the report with its trend
    with fs.open_input_stream(f"{retry['compare_dir'][5:]}/delta.png") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    with fs.open_input_stream(f"{retry['compare_dir'][5:]}/report.html") as fh:
        page = fh.read().decode()
    assert "Nightly trend" in page
    alarmed = {(a["group"], f"{a['metric']}.{a['measure']}")
               for a in alarmed_docs[1]["alarms"] if a.get("metric")}
    assert alarmed
    for group, name in alarmed:  # a panel per alarmed group, the five earlier nights in it
        where = "overall" if group == "all" else group
        assert html.escape(f"{where} {name}: 5 nights and tonight") in page, (group, name)

    # the warehouse: every run in examples, the comparisons with their alarms, in SQL,
    # read without DuckDB's delta extension: deltalake -> Arrow -> DuckDB
    import duckdb
    from deltalake import DeltaTable

    options = _delta_options(storage_env)
    examples = DeltaTable(f"s3://{BUCKET}/delta/examples", storage_options=options)
    assert examples.to_pyarrow_table(columns=["run_id"]).num_rows == len(NIGHTS) * N_ROWS
    comparisons = DeltaTable(f"s3://{BUCKET}/delta/comparisons",  # noqa: F841 - for DuckDB
                             storage_options=options).to_pyarrow_dataset()
    found: dict[str, dict] = {}
    for night, base, cand, cid in duckdb.sql("""
            SELECT DISTINCT CAST(run_date AS VARCHAR), baseline_run_id, candidate_run_id,
                   comparison_id
            FROM comparisons""").fetchall():
        assert cand not in found, cand  # one comparison per night and attempt
        found[cand] = {"night": night, "baseline": base, "id": cid}
    ids = [d.rsplit("run_id=", 1)[1] for d in run_dirs]
    assert sorted(found) == sorted(ids[1:])
    for k, run_id in enumerate(ids[1:], start=1):
        assert (found[run_id]["night"], found[run_id]["baseline"]) == (
            NIGHTS[k][1], nights[k]["baseline"].rsplit("run_id=", 1)[1])
    # what a dashboard asks: the alarms, exactly those of night 6's two compare.json
    rows = duckdb.sql("""
        SELECT CAST(run_date AS VARCHAR), candidate_run_id, "group", metric, measure,
               alarm_kind
        FROM comparisons WHERE alarm_kind IS NOT NULL""").fetchall()
    want = {("2026-12-06", run_id, *alarm) for run_id, doc in
            zip(ids[RETRY - 1:RETRY + 1], alarmed_docs, strict=True) for alarm in _alarms(doc)}
    assert len(rows) == len(set(rows))
    assert set(rows) == want
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import NotNull

    ice = SqlCatalog("overlap", uri=f"sqlite:///{config_dir / 'catalog.db'}",
                     **{"s3.endpoint": storage_env["OVERLAP_S3_ENDPOINT"],
                        "s3.region": "us-east-1",
                        "s3.access-key-id": KEYS["AWS_ACCESS_KEY_ID"],
                        "s3.secret-access-key": KEYS["AWS_SECRET_ACCESS_KEY"]})
    iceberg = ice.load_table(("evals", "comparisons"))
    delta = DeltaTable(f"s3://{BUCKET}/delta/comparisons", storage_options=options)
    key = ["comparison_id", "group", "metric", "measure"]
    assert iceberg.scan().to_arrow().select(key).sort_by(
        [(k, "ascending") for k in key]).to_pylist() == \
        delta.to_pyarrow_table(columns=key).sort_by(
            [(k, "ascending") for k in key]).to_pylist()
    ice_alarms = iceberg.scan(row_filter=NotNull("alarm_kind")).to_arrow()  # noqa: F841
    assert set(duckdb.sql("""
        SELECT CAST(run_date AS VARCHAR), candidate_run_id, "group", metric, measure,
               alarm_kind FROM ice_alarms""").fetchall()) == want
    assert ice.load_table(("evals", "examples")).scan(
        selected_fields=("run_id",)).to_arrow().num_rows == len(NIGHTS) * N_ROWS


def test_a_night_scored_on_the_cluster_equals_the_same_night_in_process(
        nights, storage_env, inputs, config_dir, tmp_path):
    """Night 2's run, file for file, against ``overlap nightly`` run in this
    process's host without an address (in-process engine), same RUN_DATE, RUN_ID and
    SCORE_ARGS."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(KEYS, **storage_env, **_night_env(config_dir, "2026-12-02", "n02"))
    local = tmp_path / "nights"
    proc = subprocess.run([str(OVERLAP), "nightly", str(local), inputs["night-2"],
                           inputs["references"]], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    here = local / "run_date=2026-12-02" / "run_id=n02"
    there = nights[1]["run_dir"].removeprefix("s3://")
    fs = _s3(storage_env)
    names = sorted(p.name for p in (here / "examples").iterdir())
    listed = fs.get_file_info(pafs.FileSelector(f"{there}/examples"))
    assert names == sorted(i.base_name for i in listed) and len(names) == 3
    for name in [*(f"examples/{n}" for n in names), "aggregate.parquet"]:
        # run id and signature metadata included
        assert pq.read_table(f"{there}/{name}", filesystem=fs).equals(
            pq.read_table(here / name), check_metadata=True), name


def _local_compare(storage_env, a, b):
    from pipeline import api

    with pytest.MonkeyPatch.context() as mp:
        for k, v in {**KEYS, **storage_env}.items():
            mp.setenv(k, v)
        mp.delenv("RAY_ADDRESS", raising=False)
        return api.compare(a, b, engine="local", num_cpus=1).to_document()


def _same(cluster_doc, local_doc):
    for key in ("rows", "pairing", "alarms", "top"):
        assert json.dumps(cluster_doc[key], sort_keys=True) == \
            json.dumps(local_doc[key], sort_keys=True), key


def _listing(storage_env, prefix):
    return [i.path for i in _s3(storage_env).get_file_info(
        pafs.FileSelector(prefix, recursive=True, allow_not_found=True))]


@pytest.fixture(scope="module")
def other_partitioning(cluster, storage_env, inputs, config_dir, nights):
    """Night 6 scored on the cluster in partitions of 150 rows (the nights: 200)."""
    out = f"s3://{BUCKET}/runs/c150"
    proc = _driver(cluster, storage_env, "score", inputs["night-6"], "--references",
                   inputs["references"], "--output", out, "--address", cluster.address,
                   "--config", _rows_config(config_dir, 150), "--bootstrap", "0",
                   "--group-by", "system", "--keep-text")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def exchanged_in_process(storage_env, nights, other_partitioning):
    return _local_compare(storage_env, nights[RETRY - 2]["run_dir"], other_partitioning)


def test_compare_on_nodes_without_a_shared_disk_equals_an_in_process_compare(
        cluster, storage_env, nights, other_partitioning, exchanged_in_process):
    baseline = nights[RETRY - 2]["run_dir"]  # night 5, and night 6 (regressed)
    for name, cand, local in (
            ("same", nights[RETRY - 1]["run_dir"], None),  # 200 and 200 rows: part by part
            ("exchanged", other_partitioning, exchanged_in_process)):  # 200 and 150
        out = f"s3://{BUCKET}/cmp/{name}"
        proc = _driver(cluster, storage_env, "compare", baseline, cand,
                       "--address", cluster.address, "--format", "json", "--output", out)
        assert proc.returncode == 1, proc.stderr[-3000:]  # the regression alarms
        doc = json.loads(proc.stdout)  # stdout holds the document alone
        assert doc["pairing"]["n_paired"] == N_ROWS
        _same(doc, local or _local_compare(storage_env, baseline, cand))
    left = _listing(storage_env, f"{BUCKET}/cmp")
    assert not [p for p in left if "overlap-compare" in p], left  # the scratch is gone
    assert sorted(p.rsplit("/", 1)[1] for p in left if p.endswith(".json")) == \
        ["compare.json", "compare.json"]


@pytest.mark.parametrize("case,cause", [
    ("wrong token", "refused this driver's token (wrong token)"),
    ("no token", "needs a token and this driver has none"),
    ("not a node", "this machine is not a node of the Ray cluster"),
    ("wrong token, --verbose", "refused this driver's token (wrong token)"),
])
def test_a_driver_that_cannot_work_fails_in_seconds_naming_the_cause(
        cluster, storage_env, inputs, case, cause):
    env = {**cluster.env(), **KEYS, **storage_env}
    env.pop("OVERLAP_VERBOSE", None)
    if case.startswith("wrong token"):
        env["RAY_AUTH_TOKEN"] = "0" * 64
    elif case == "no token":
        env.pop("RAY_AUTH_TOKEN")
    prefix = [] if case == "not a node" else cluster.driver_prefix(0)
    verbose = ["--verbose"] if case.endswith("--verbose") else []
    out = f"s3://{BUCKET}/runs/{case[:3]}"
    started = time.monotonic()
    proc = subprocess.run([*prefix, str(OVERLAP), *verbose, "score", inputs["night-1"],
                           "--references", inputs["references"], "--output", out,
                           "--address", cluster.address], env=env, capture_output=True,
                          text=True, timeout=120, cwd="/")
    took = time.monotonic() - started
    print(f"{case}: exit {proc.returncode} in {took:.1f} s")
    assert proc.returncode == 4, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert cause in lines[-1], lines
    if verbose:  # Ray's own lines first, then ours
        assert len(lines) > 1, lines
    else:
        assert len(lines) == 1, lines  # one line, no Ray warnings
    assert took < 15, took  # was about 23 s (a wrong token) before
    assert not _listing(storage_env, out.removeprefix("s3://"))  # no lock, no staging
    assert not [p for p in _listing(storage_env, f"{BUCKET}/runs") if f".{case[:3]}." in p]


def test_a_driver_of_other_ray_version_fails_in_seconds_naming_both(cluster):
    """The cluster's versions come from its GCS; this driver's Ray is made to differ.

    In a process of its own: a Ray client made in the test process would keep the cluster's
    token and auth mode for the rest of the session (Ray reads them once), and every later
    local Ray of the session would fail its authentication.
    """
    import platform

    code = (
        "import json, sys, time, ray\n"
        "from pipeline.engine.ray_runner import check_driver\n"
        "from pipeline.errors import ExecutionError\n"
        "real = ray.__version__\n"
        "ray.__version__ = '2.0.0'\n"
        "started = time.monotonic()\n"
        "try:\n"
        "    check_driver(sys.argv[1])\n"
        "    message = None\n"
        "except ExecutionError as err:\n"
        "    message = str(err.message)\n"
        "print(json.dumps({'real': real, 'message': message,\n"
        "                  'seconds': time.monotonic() - started}))\n")
    proc = subprocess.run([sys.executable, "-c", code, cluster.address],
                          env={**os.environ, **cluster.env()}, capture_output=True, text=True,
                          timeout=120, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["seconds"] < 15
    assert got["message"] == (
        f"version mismatch: the Ray cluster at {cluster.address} runs Ray {got['real']} on "
        f"Python {platform.python_version()}, this driver Ray 2.0.0 on Python "
        f"{platform.python_version()}")


# what of a clone the job leaves behind (docs/cluster.md): with the .gitignore ignored,
# so that the compiled kernels go, the caches and the environment must be named
CLONE_EXCLUDES = [".venv", ".git", "build", "runs", ".mypy_cache", ".ruff_cache",
                  ".pytest_cache", ".hypothesis"]


def _submit(cluster, runtime_env: dict, entrypoint: list[str], *, token: str | None = None,
            cwd: Path = ROOT, timeout: int = 300) -> subprocess.CompletedProcess:
    """``ray job submit`` as docs/cluster.md writes it, from this process's host: not a node
    (its /tmp is none of the nodes'), reaching the head's job server with the token."""
    env = {**cluster.env(), "RAY_RUNTIME_ENV_IGNORE_GITIGNORE": "1"}
    env.pop("RAY_ADDRESS", None)
    if token is not None:
        env["RAY_AUTH_TOKEN"] = token
    return subprocess.run([str(RAY), "job", "submit", "--address", cluster.dashboard_address,
                           "--runtime-env-json", json.dumps(runtime_env), "--", *entrypoint],
                          env=env, cwd=str(cwd), capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def jobs(cluster):
    if not JOBS:
        pytest.skip("Ray jobs need ray[default] (pip install -e '.[cluster]')")
    return cluster


def test_a_score_submitted_as_a_ray_job_from_a_clone_equals_the_same_run_on_the_head(
        jobs, storage_env, inputs, config_dir, nights):
    """The docs' recipe: a clone as the job's working_dir (its compiled kernels included:
    ``RAY_RUNTIME_ENV_IGNORE_GITIGNORE=1``), the storage settings in the job's env_vars.
    Before, the engine's own runtime_env (the package, the storage settings) conflicted with
    the job's and ``ray.init`` refused the run: every job exited 4."""
    out = f"s3://{BUCKET}/runs/job-score"
    started = time.monotonic()
    proc = _submit(jobs, {"working_dir": ".", "excludes": CLONE_EXCLUDES,
                          "env_vars": {**storage_env}},
                   ["python", "-c", "from pipeline.cli import main; main()", "score",
                    inputs["night-2"], "--references", inputs["references"], "--output", out,
                    "--run-id", "n02", *_night_env(config_dir, "", None)["SCORE_ARGS"].split()])
    print(f"score as a Ray job: exit {proc.returncode} in {time.monotonic() - started:.1f} s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "succeeded" in proc.stdout
    fs = _s3(storage_env)
    there = nights[1]["run_dir"].removeprefix("s3://")  # night 2, scored by nightly on the head
    names = sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(f"{there}/examples")))
    assert len(names) == 3
    for name in [*(f"examples/{n}" for n in names), "aggregate.parquet"]:
        assert pq.read_table(f"{out[5:]}/{name}", filesystem=fs).equals(
            pq.read_table(f"{there}/{name}", filesystem=fs), check_metadata=True), name


def test_a_nightly_submitted_as_a_ray_job_with_the_token_alarms_as_on_the_head(
        jobs, storage_env, inputs, config_dir, nights):
    """``overlap nightly`` (installed on the nodes) as a Ray job from a process that is not a
    node: night 6's predictions against night 5's run give night 6's alarms, and the job
    fails (``ray job submit`` exits 1) as the command exits 1. A wrong token is refused."""
    root = f"s3://{BUCKET}/job-nightly"
    env_vars = {**storage_env, **_night_env(config_dir, "2026-12-06", "job"),
                "BASELINE": nights[RETRY - 2]["run_dir"]}
    entrypoint = [str(OVERLAP), "nightly", root, inputs["night-6"], inputs["references"]]
    refused = _submit(jobs, {"env_vars": env_vars}, entrypoint, token="0" * 64, timeout=120)
    assert refused.returncode != 0, refused.stdout[-2000:]
    assert not _listing(storage_env, root[5:])
    started = time.monotonic()
    proc = _submit(jobs, {"env_vars": env_vars}, entrypoint, cwd=Path("/"))
    print(f"nightly as a Ray job: exit {proc.returncode} in {time.monotonic() - started:.1f} s")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ALARM" in proc.stdout and "exit code 1" in proc.stdout + proc.stderr
    fs = _s3(storage_env)
    doc = _read_json(fs, f"{root}/compare/run_date=2026-12-06/run_id=job/compare.json")
    want = _read_json(fs, f"{nights[RETRY - 1]['compare_dir']}/compare.json")
    assert doc["alarms"] and _alarms(doc) == _alarms(want)
