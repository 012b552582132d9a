"""Object-storage settings in one place (issue 24, failure 3): one set of settings reaches
pyarrow, deltalake and pyiceberg; none of it is written into a manifest or printed.

Against moto's S3 server on loopback (``moto[server]``, started and stopped here). Nothing
sets ``AWS_ENDPOINT_URL``: without the settings, every library would go to AWS.
"""

from __future__ import annotations

import json
import sqlite3
import uuid

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.errors import ConfigError
from pipeline.io import storage
from tests.compare.test_compare_fixtures import REALSUMM

SECRET = "s3cr3t-" + uuid.uuid4().hex
KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.fixture(scope="module")
def s3(moto):
    """A bucket for the module; the settings in OVERLAP_S3_* variables, the keys in AWS_*."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_REGION",
                    "AWS_DEFAULT_REGION", *storage.ENV_VARS.values()):
            monkeypatch.delenv(var, raising=False)
        for k, v in KEYS.items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("OVERLAP_S3_ENDPOINT", moto.endpoint)
        monkeypatch.setenv("OVERLAP_S3_ALLOW_HTTP", "true")
        monkeypatch.setenv("OVERLAP_S3_PATH_STYLE", "1")
        monkeypatch.setenv("OVERLAP_S3_REGION", "us-east-1")
        bucket = f"b{uuid.uuid4().hex[:12]}"
        pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{moto.port}", scheme="http",
                          region="us-east-1", allow_bucket_creation=True).create_dir(bucket)
        yield bucket


@pytest.fixture(scope="module")
def s3_run(s3, tmp_path_factory) -> tuple[str, str]:
    """The bundled data scored onto the bucket once, with the settings alone: the run's URI
    and what the command printed."""
    settings = tmp_path_factory.mktemp("settings") / "settings.yaml"
    settings.write_text("partition_rows: 1000\nstorage:\n  profile: null\n")
    run = f"s3://{s3}/runs/a"
    scored = CliRunner().invoke(main, ["score", str(REALSUMM / "predictions"), "--references",
                                       str(REALSUMM / "references.parquet"), "--output", run,
                                       "--bootstrap", "0", "--engine", "local",
                                       "--config", str(settings)])
    assert scored.exit_code == 0, scored.output
    return run, scored.output


def test_a_plain_http_endpoint_needs_allow_http():
    with pytest.raises(ConfigError, match="allow_http"):
        storage.from_env({"OVERLAP_S3_ENDPOINT": "http://minio:9000"})
    with pytest.raises(ConfigError, match="did you mean"):
        storage.from_mapping({"endpoitn": "https://x"})
    options = storage.from_env({"OVERLAP_S3_ENDPOINT": "http://minio:9000",
                                "OVERLAP_S3_ALLOW_HTTP": "yes", "OVERLAP_S3_PROFILE": "p"})
    assert "minio" not in repr(options) and "p" != repr(options)  # repr names keys only


def test_score_and_publish_on_s3_with_the_settings_alone_and_nothing_secret_written(
        s3, s3_run, tmp_path):
    pytest.importorskip("deltalake")
    pytest.importorskip("pyiceberg")
    run, scored_output = s3_run
    cli = CliRunner()
    fs = storage.pyarrow_s3()
    manifest = fs.open_input_stream(f"{s3}/runs/a/manifest.json").read().decode()
    assert json.loads(manifest)["counts"]["examples_scored"] == 2500
    catalog = tmp_path / "catalog.db"
    published = cli.invoke(main, ["publish", run, "--delta", f"s3://{s3}/delta",
                                  "--iceberg", f"sqlite:///{catalog}", "--namespace", "evals",
                                  "--warehouse", f"s3://{s3}/iceberg"])
    # before: Iceberg went to bucket.s3.us-east-1.amazonaws.com (exit 4)
    assert published.exit_code == 0, published.output
    from deltalake import DeltaTable

    rows = DeltaTable(f"s3://{s3}/delta/examples",
                      storage_options=storage.deltalake_options()).to_pyarrow_table()
    assert rows.num_rows == 2500
    from pyiceberg.catalog.sql import SqlCatalog

    ice = SqlCatalog("overlap", uri=f"sqlite:///{catalog}", **storage.iceberg_properties())
    assert ice.load_table(("evals", "examples")).scan().to_arrow().num_rows == 2500
    written = [manifest, scored_output, published.output]
    for leaf in fs.get_file_info(pafs.FileSelector(s3, recursive=True)):
        if leaf.type == pafs.FileType.File and leaf.path.endswith((".json", ".parquet")):
            data = fs.open_input_stream(leaf.path).read()
            written.append(data.decode("utf-8", "replace"))
            if leaf.path.endswith(".parquet"):
                meta = pq.read_metadata(fs.open_input_file(leaf.path)).metadata or {}
                written.append(repr(meta))
    endpoint = storage.current().endpoint
    for text in written:
        assert SECRET not in text and endpoint not in text


def test_a_failed_iceberg_publish_leaves_no_namespace_it_created(s3_run, tmp_path):
    pytest.importorskip("pyiceberg")
    run, _ = s3_run
    cli = CliRunner()
    catalog = tmp_path / "catalog.db"
    failed = cli.invoke(main, ["publish", run, "--iceberg", f"sqlite:///{catalog}",
                               "--namespace", "evals",
                               "--warehouse", "s3://no-such-bucket-here/iceberg"])
    assert failed.exit_code == 4, failed.output
    with sqlite3.connect(catalog) as db:
        left = db.execute("select * from iceberg_namespace_properties").fetchall()
    assert left == []


def test_a_store_that_does_not_answer_is_one_line_and_exit_4(monkeypatch, tmp_path):
    """Without a region, pyarrow asks S3 for the bucket's region when the URI is opened; an
    endpoint that does not resolve raised an OSError there, out of the command as a
    traceback (seen with ``--output s3://...`` and no network). The failure is injected
    where pyarrow raised it, with pyarrow's own message."""
    for name in [k for k in __import__("os").environ if k.startswith("OVERLAP_S3_")]:
        monkeypatch.delenv(name)
    message = ("When resolving region for bucket 'x': AWS Error NETWORK_CONNECTION during "
               "HeadBucket operation: curlCode: 6, Could not resolve hostname")

    def unreachable(uri):
        raise OSError(message)

    class Pyarrow:  # pyarrow.fs as pipeline.io.files sees it, but for FileSystem.from_uri
        FileSystem = type("FileSystem", (), {"from_uri": staticmethod(unreachable)})

        def __getattr__(self, name):
            return getattr(pafs, name)

    monkeypatch.setattr("pipeline.io.files.pafs", Pyarrow())
    result = CliRunner().invoke(main, ["score", str(REALSUMM / "predictions"), "--references",
                                       str(REALSUMM / "references.parquet"), "--output",
                                       "s3://x/y"])
    assert result.exit_code == 4, result.output
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"Error: cannot open s3://x/y: {message} (check the storage settings (docs/cluster.md, "
        "object storage settings) and the network)"]
