"""The nightly loop on a 3-node Ray cluster whose nodes share no disk, with runs on S3.

As users run it (issue 24, item 9): three Ray nodes on 127.0.0.7-9, each in its own mount
namespace with a private ``/tmp`` and ``/dev/shm`` (``tests/support/ns_cluster.py``; as
root, as CI runs), token authentication on, inputs and outputs on moto's S3 server on
loopback (started and stopped here). The driver is the CLI run on the head (in its mount
namespace). The storage settings reach the driver as ``OVERLAP_S3_*`` variables and the
workers only through the driver (the nodes hold the AWS keys alone; nobody sets
``AWS_ENDPOINT_URL``).

What runs, in this order: ``overlap nightly`` for three nights with an S3 ROOT (the third
a regression, retried as Airflow retries, same RUN_DATE and no RUN_ID; during the retry's
compare a worker node's raylet is SIGKILLed), publishing every run and comparison to Delta
and Iceberg on that S3 and writing the report; a night's run against the same night scored
in-process; ``overlap compare`` of runs partitioned alike and differently (the exchange)
against in-process comparisons (on the two nodes left); drivers that cannot work.

Before issue 24, compare wrote its exchange and first-pass files into the driver's temp
dir: a task on another node could not read them (exit 4, or a pass only when Ray placed
every task on the head); a retried night compared with its own first attempt and cleared
its alarm; the alarms stayed in compare.json.
"""

from __future__ import annotations

import html
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
BUCKET = "overlap-test"
KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret-value",
        "AWS_EC2_METADATA_DISABLED": "true"}
N_ROWS = 2500  # realsumm's predictions
# (RUN_DATE, predictions, RUN_ID): two equal nights, then a regression and its retry
NIGHTS = (("2026-12-01", "baseline", "n01"), ("2026-12-02", "baseline", "n02"),
          ("2026-12-03", "candidate", None), ("2026-12-03", "candidate", None))


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
    nodes = PrivateTmpCluster(cpus_per_node=1, node_env_extra=dict(KEYS))
    try:
        nodes.start()
        yield nodes
    finally:
        leftovers = nodes.stop()
    assert leftovers == [], "processes of the test cluster outlived their ray start"


@pytest.fixture(scope="module")
def inputs(storage_env):
    """Baseline and candidate predictions and the references, uploaded to the bucket."""
    fs = _s3(storage_env)
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
                         f"--config {_rows_config(config_dir, 700)}"}
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
    """``overlap nightly`` on the cluster, night by night (:data:`NIGHTS`). The last night
    (the retry) also writes its report, and a worker node's raylet is SIGKILLed as soon as
    one of its compare tasks runs (the later tests run on two nodes). Returns per night:
    the process, its wall time, its run dir, compare dir and baseline (from its log lines),
    and what was killed."""
    pytest.importorskip("deltalake")
    pytest.importorskip("pyiceberg")
    pytest.importorskip("matplotlib")
    root = f"s3://{BUCKET}/nightly"
    done = []
    for k, (run_date, side, run_id) in enumerate(NIGHTS):
        env = {**storage_env, **_night_env(config_dir, run_date, run_id),
               "RAY_ADDRESS": cluster.address, "PUBLISH_ARGS": _publish_args(config_dir)}
        command = [str(OVERLAP), "nightly", root, inputs[side], inputs["references"]]
        killed = None
        started = time.monotonic()
        if k < len(NIGHTS) - 1:
            proc = _driver(cluster, env, *command[1:])
        else:
            env = {**cluster.env(), **KEYS, **env, "REPORT": "1"}
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
        print(f"night {run_date} ({side}, RUN_ID {run_id}): exit {proc.returncode}, "
              f"{took:.1f} s" + (f", killed the raylet of {killed}" if killed else ""))
    return done


def _delta_options(storage_env) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL": storage_env["OVERLAP_S3_ENDPOINT"], "AWS_ALLOW_HTTP": "true",
            "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": KEYS["AWS_ACCESS_KEY_ID"],
            "AWS_SECRET_ACCESS_KEY": KEYS["AWS_SECRET_ACCESS_KEY"]}


def _read_json(fs, uri: str) -> dict:
    with fs.open_input_stream(uri.removeprefix("s3://")) as fh:
        return json.loads(fh.read())


def test_three_nights_with_a_retried_regression_alarm_exactly_on_it_into_the_warehouse(
        nights, storage_env, config_dir):
    codes = [n["proc"].returncode for n in nights]
    assert codes == [0, 0, 1, 1], [n["proc"].stderr[-2000:] for n in nights]
    first, second, regressed, retry = nights
    assert "nothing to compare with" in first["proc"].stderr
    assert "ALARM" not in second["proc"].stdout
    assert "ALARM" in regressed["proc"].stdout and "ALARM" in retry["proc"].stdout
    # the retry (same RUN_DATE, no RUN_ID: a new attempt beside the first) compares with the
    # previous night, not with its own first attempt, and keeps the alarm (failure 8), a
    # worker node lost mid-compare notwithstanding
    assert retry["killed"] is not None, "no compare task ran on a worker node"
    assert retry["run_dir"] != regressed["run_dir"]
    assert "/run_date=2026-12-03/" in retry["run_dir"]
    for night in (regressed, retry):
        assert night["baseline"] == f"s3://{BUCKET}/nightly/run_date=2026-12-02/run_id=n02"
    fs = _s3(storage_env)
    docs = [_read_json(fs, f"{n['compare_dir']}/compare.json") for n in nights[1:]]
    assert docs[0]["alarms"] == []
    assert docs[1]["alarms"] and docs[1]["alarms"] == docs[2]["alarms"]

    # delta.png drawn on the head and uploaded (was: not drawn); the report with its trend
    with fs.open_input_stream(f"{retry['compare_dir'][5:]}/delta.png") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    with fs.open_input_stream(f"{retry['compare_dir'][5:]}/report.html") as fh:
        page = fh.read().decode()
    assert "Nightly trend" in page
    alarmed = {(a["group"], f"{a['metric']}.{a['measure']}") for a in docs[2]["alarms"]
               if a.get("metric")}
    assert alarmed
    for group, name in alarmed:  # a panel per alarmed group, the two earlier nights in it
        where = "overall" if group == "all" else group
        assert html.escape(f"{where} {name}: 2 nights and tonight") in page, (group, name)

    # the warehouse: every run in examples, the comparisons with their alarms, in SQL
    import duckdb
    from deltalake import DeltaTable

    options = _delta_options(storage_env)
    examples = DeltaTable(f"s3://{BUCKET}/delta/examples", storage_options=options)
    assert examples.to_pyarrow_table(columns=["run_id"]).num_rows == len(NIGHTS) * N_ROWS
    comparisons = DeltaTable(f"s3://{BUCKET}/delta/comparisons",  # noqa: F841 - for DuckDB
                             storage_options=options).to_pyarrow_dataset()
    found: dict[str, dict] = {}
    for night, base, cand, cid, group, metric, measure, kind in duckdb.sql("""
            SELECT CAST(run_date AS VARCHAR), baseline_run_id, candidate_run_id,
                   comparison_id, "group", metric, measure, alarm_kind
            FROM comparisons""").fetchall():
        seen = found.setdefault(cand, {"night": night, "baseline": base, "ids": set(),
                                       "alarms": set()})
        seen["ids"].add(cid)
        if kind is not None:
            seen["alarms"].add((group, metric, measure, kind))
    ids = [n["run_dir"].rsplit("run_id=", 1)[1] for n in (second, regressed, retry)]
    assert sorted(found) == sorted(ids)  # one comparison per night and attempt
    for run_id, doc in zip(ids, docs, strict=True):
        seen = found[run_id]
        assert len(seen["ids"]) == 1
        assert (seen["night"], seen["baseline"]) == (
            "2026-12-02" if run_id == "n02" else "2026-12-03",
            "n01" if run_id == "n02" else "n02")
        # the alarms a dashboard reads are compare.json's: none on the equal night
        assert seen["alarms"] == {(a["group"], a["metric"], a["measure"], a["kind"])
                                  for a in doc["alarms"]}
    from pyiceberg.catalog.sql import SqlCatalog

    ice = SqlCatalog("overlap", uri=f"sqlite:///{config_dir / 'catalog.db'}",
                     **{"s3.endpoint": storage_env["OVERLAP_S3_ENDPOINT"],
                        "s3.region": "us-east-1",
                        "s3.access-key-id": KEYS["AWS_ACCESS_KEY_ID"],
                        "s3.secret-access-key": KEYS["AWS_SECRET_ACCESS_KEY"]})
    iceberg = ice.load_table(("evals", "comparisons")).scan().to_arrow()
    delta = DeltaTable(f"s3://{BUCKET}/delta/comparisons", storage_options=options)
    key = ["comparison_id", "group", "metric", "measure"]
    assert iceberg.select(key).sort_by([(k, "ascending") for k in key]).to_pylist() == \
        delta.to_pyarrow_table(columns=key).sort_by(
            [(k, "ascending") for k in key]).to_pylist()
    assert ice.load_table(("evals", "examples")).scan(
        selected_fields=("run_id",)).to_arrow().num_rows == len(NIGHTS) * N_ROWS


def test_a_night_scored_on_the_cluster_equals_the_same_night_in_process(
        nights, storage_env, inputs, config_dir, tmp_path):
    """The second night's run, file for file, against ``overlap nightly`` run in this
    process's host without an address (in-process engine), same RUN_DATE, RUN_ID and
    SCORE_ARGS."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(KEYS, **storage_env, **_night_env(config_dir, "2026-12-02", "n02"))
    local = tmp_path / "nights"
    proc = subprocess.run([str(OVERLAP), "nightly", str(local), inputs["baseline"],
                           inputs["references"]], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    here = local / "run_date=2026-12-02" / "run_id=n02"
    there = nights[1]["run_dir"].removeprefix("s3://")
    fs = _s3(storage_env)
    names = sorted(p.name for p in (here / "examples").iterdir())
    listed = fs.get_file_info(pafs.FileSelector(f"{there}/examples"))
    assert names == sorted(i.base_name for i in listed) and len(names) == 4
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
    """The candidate scored on the cluster in partitions of 500 rows (the nights: 700)."""
    out = f"s3://{BUCKET}/runs/c500"
    proc = _driver(cluster, storage_env, "score", inputs["candidate"], "--references",
                   inputs["references"], "--output", out, "--address", cluster.address,
                   "--config", _rows_config(config_dir, 500), "--bootstrap", "0",
                   "--group-by", "system", "--keep-text")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def exchanged_in_process(storage_env, nights, other_partitioning):
    return _local_compare(storage_env, nights[1]["run_dir"], other_partitioning)


def test_compare_on_nodes_without_a_shared_disk_equals_an_in_process_compare(
        cluster, storage_env, nights, other_partitioning, exchanged_in_process):
    baseline = nights[1]["run_dir"]
    for name, cand, local in (
            ("same", nights[2]["run_dir"], None),  # 700 and 700 rows: paired part by part
            ("exchanged", other_partitioning, exchanged_in_process)):  # 700 and 500
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
    proc = subprocess.run([*prefix, str(OVERLAP), *verbose, "score", inputs["baseline"],
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
