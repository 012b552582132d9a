"""The hostile matrix of `overlap publish` (issue 19): a run damaged after scoring, a run id
published twice with other rows, hostile names, types the table formats widen or cannot
hold, half-done work across two formats, and a catalog that is not one.

Every case: the documented exit code, one line on stderr naming what is at fault, no
traceback, and nothing written (or lost) in the warehouse.
"""

from __future__ import annotations

import json
import shutil
import sqlite3

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.hostile_runs import (
    copy,
    edit_a_score,
    invoke,
    one_line_error,
    parts,
    scored_runs,
    set_manifest_field,
)
from tests.support.warehouse_runs import reseal, retyped_copy, sha256_of

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg.catalog")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return scored_runs(tmp_path_factory.mktemp("hostile-publish"))


def publish(*args):
    return invoke("publish", *args)


def delta_rows(root, table="examples") -> int:
    return deltalake.DeltaTable(str(root / table)).to_pyarrow_table().num_rows


def iceberg(tmp_path):
    return f"sqlite:///{tmp_path}/catalog.db"


# --------------------------------------------------------------------------------------------
# The run: verified against its manifest before anything is written
# --------------------------------------------------------------------------------------------

def test_a_part_file_deleted_after_scoring_is_refused(runs, tmp_path):
    run = copy(runs["a"], tmp_path / "run")
    rows = pq.read_metadata(parts(run)[2]).num_rows
    parts(run)[2].unlink()
    result = publish(run, "--delta", tmp_path / "wh")
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "examples/part-00002.parquet is missing" in line and f"({rows} rows)" in line
    assert not (tmp_path / "wh").exists()


def test_a_part_file_of_another_run_dropped_in_is_refused(runs, tmp_path):
    # added beside the run's own files
    run = copy(runs["a"], tmp_path / "added")
    shutil.copy(parts(runs["b"])[0], run / "examples" / "part-00009.parquet")
    result = publish(run, "--delta", tmp_path / "wh")
    assert result.exit_code == 2
    assert "part-00009.parquet is not a file of this run" in one_line_error(result)
    # in place of one of them (other columns: run b has rouge2)
    run = copy(runs["a"], tmp_path / "replaced")
    shutil.copy(parts(runs["b"])[1], parts(run)[1])
    result = publish(run, "--delta", tmp_path / "wh")
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "part-00001.parquet" in line and "written by run run-b" in line
    assert not (tmp_path / "wh").exists()


def test_examples_edited_after_scoring_are_refused(runs, tmp_path):
    run = copy(runs["a"], tmp_path / "run")
    edit_a_score(parts(run)[3])
    result = publish(run, "--delta", tmp_path / "wh")
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "part-00003.parquet" in line and "changed since the run was scored" in line
    assert not (tmp_path / "wh").exists()


def test_a_run_scored_before_checksums_is_verified_for_the_rest(runs, tmp_path):
    """Older runs (no sha256 in the manifest) publish; files, rows and run ids still count."""
    run = copy(runs["a"], tmp_path / "old")
    manifest = json.loads((run / "manifest.json").read_text())
    for entry in [*manifest["outputs"]["examples"], manifest["outputs"]["aggregate"]]:
        del entry["sha256"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert publish(run, "--delta", tmp_path / "wh").exit_code == 0
    assert delta_rows(tmp_path / "wh") == 40
    parts(run)[0].unlink()
    result = publish(run, "--delta", tmp_path / "wh2")
    assert result.exit_code == 2 and "part-00000.parquet is missing" in one_line_error(result)


@pytest.mark.parametrize("field,value", [("counts", "x"), ("inputs", "x"),
                                         ("config", {"metrics": 5}), ("started_at", 5),
                                         ("outputs", {"examples": "x"})])
def test_a_manifest_field_of_another_type_is_refused_naming_it(runs, tmp_path, field, value):
    run = copy(runs["a"], tmp_path / "run")
    set_manifest_field(run, field, value)
    result = publish(run, "--delta", tmp_path / "wh")
    assert result.exit_code == 2
    assert "manifest.json: field" in one_line_error(result)
    assert not (tmp_path / "wh").exists()


# --------------------------------------------------------------------------------------------
# One run id, one run
# --------------------------------------------------------------------------------------------

def _same_id_other_rows(runs, tmp_path):
    """Run b's rows under run a's id (a consistent run of its own)."""
    return retyped_copy(runs["b"], tmp_path / "impostor", run_id="run-a",
                        column="rouge1_matches", to=pa.int64())


def test_another_run_under_a_published_run_id_is_refused(runs, tmp_path):
    wh = tmp_path / "wh"
    cat = iceberg(tmp_path)
    assert publish(runs["a"], "--delta", wh, "--iceberg", cat, "--namespace", "ev"
                   ).exit_code == 0
    impostor = _same_id_other_rows(runs, tmp_path)
    for target in (["--delta", wh], ["--iceberg", cat, "--namespace", "ev"]):
        result = publish(impostor, *target)
        assert result.exit_code == 2, result.output
        line = one_line_error(result)
        assert "already holds run id run-a with other rows" in line
    assert delta_rows(wh) == 40
    # the same run with another label is other rows too; the identical run is found
    result = publish(runs["a"], "--delta", wh, "--label", "model=x")
    assert result.exit_code == 2 and "other rows" in one_line_error(result)
    again = publish(runs["a"], "--delta", wh, "--iceberg", cat, "--namespace", "ev")
    assert again.exit_code == 0 and again.output.count("already there, nothing written") == 4


# --------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------

def test_a_nested_namespace_as_our_own_message_suggests_publishes(runs, tmp_path):
    result = publish(runs["a"], "--iceberg", iceberg(tmp_path), "--namespace", "evals.nightly")
    assert result.exit_code == 0, result.output
    assert "evals.nightly.examples" in result.output
    from pipeline.warehouse.iceberg import load_catalog

    catalog = load_catalog(iceberg(tmp_path))
    assert catalog.load_table(("evals", "nightly", "examples")).scan().to_arrow().num_rows == 40


@pytest.mark.parametrize("namespace", ["/abs", "a/b", "..", "a\\b", "ev\nil", "a..b", " ev"])
def test_namespaces_that_are_paths_are_refused_before_anything(runs, tmp_path, namespace):
    result = publish(runs["a"], "--delta", tmp_path / "wh", "--iceberg", iceberg(tmp_path),
                     "--namespace", namespace)
    assert result.exit_code == 2
    assert "namespace" in one_line_error(result)
    assert not (tmp_path / "wh").exists() and not (tmp_path / "catalog.db").exists()


def test_a_label_that_differs_from_a_run_column_only_in_case_is_refused(runs, tmp_path):
    for target in (["--delta", tmp_path / "wh"],
                   ["--iceberg", iceberg(tmp_path), "--namespace", "ev"]):
        result = publish(runs["a"], *target, "--label", "rougel_fmeasure=x")
        assert result.exit_code == 2
        assert "'rougel_fmeasure'" in one_line_error(result)
        assert "rougeL_fmeasure" in result.output
    assert not (tmp_path / "wh").exists()


# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------

def _grouped_by(run_src, tmp_path, name: str, array: pa.Array):
    """A copy of a run whose examples have one more column, `g` (as if grouped by it)."""
    run = copy(run_src, tmp_path / name)
    manifest = json.loads((run / "manifest.json").read_text())
    for part, entry in zip(parts(run), manifest["outputs"]["examples"], strict=True):
        table = pq.read_table(part)
        table = table.append_column("g", pa.array(
            [array[i % len(array)].as_py() for i in range(table.num_rows)], array.type))
        pq.write_table(table, part)
        entry.update(size_bytes=part.stat().st_size, sha256=sha256_of(part))
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


WIDENED = {
    "uint8": pa.array([0, 255], pa.uint8()),
    "uint16": pa.array([0, 65535], pa.uint16()),
    "uint32": pa.array([0, 4_294_967_295], pa.uint32()),
    "uint64": pa.array([0, 2**63 - 1], pa.uint64()),
    "int8": pa.array([-128, 127], pa.int8()),
    "int16": pa.array([-32768, 32767], pa.int16()),
    "float16": pa.array(np.array([0.5, -2.0], dtype=np.float16)),
    "fixed_size_binary": pa.array([b"ab", b"cd"], pa.binary(2)),
    "map": pa.array([[("k", 1)], [("l", 2)]], pa.map_(pa.string(), pa.int64())),
    "date64": pa.array([0, 86_400_000], pa.date64()),
    "timestamp_ns": pa.array([0, 1_000], pa.timestamp("ns")),
}


@pytest.mark.parametrize("kind", sorted(WIDENED))
@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_a_column_of_a_type_the_format_widens_publishes_with_its_values(runs, tmp_path, kind,
                                                                       fmt):
    run = _grouped_by(runs["a"], tmp_path, "run", WIDENED[kind])
    target = ["--delta", tmp_path / "wh"] if fmt == "delta" else \
        ["--iceberg", iceberg(tmp_path), "--namespace", "ev"]
    result = publish(run, *target)
    assert result.exit_code == 0, result.output
    again = publish(run, *target)  # and the table it made takes the same run again
    assert again.exit_code == 0 and "already there" in again.output
    if fmt == "delta":
        back = deltalake.DeltaTable(str(tmp_path / "wh" / "examples")).to_pyarrow_table()
    else:
        from pipeline.warehouse.iceberg import load_catalog

        back = load_catalog(iceberg(tmp_path)).load_table("ev.examples").scan().to_arrow()
    values = back.sort_by("id").column("g").to_pylist()
    expected = pq.read_table(list(parts(run))).sort_by("id").column("g").to_pylist()
    if kind == "fixed_size_binary":
        expected = [bytes(v) for v in expected]
    if kind == "map":
        values = [sorted(dict(v).items()) for v in values]
        expected = [sorted(dict(v).items()) for v in expected]
    if kind == "timestamp_ns":
        values = [v.replace(tzinfo=None) for v in values]
    assert values == expected


@pytest.mark.parametrize("fmt,array,what", [
    ("delta", pa.array([1, 2], pa.duration("s")), "durations"),
    ("iceberg", pa.array([1, 2], pa.duration("s")), "durations"),
    ("delta", pa.array([1, 2], pa.time64("us")), "a time of day"),
    ("iceberg", pa.array([None, None], pa.null()), "without a type"),
    ("delta", pa.array([2**63, 1], pa.uint64()), "without changing values"),
    ("iceberg", pa.array([1, 1001], pa.timestamp("ns")), "without changing values"),
])
def test_a_type_the_format_cannot_hold_is_bad_input_and_nothing_is_made(runs, tmp_path, fmt,
                                                                        array, what):
    run = _grouped_by(runs["a"], tmp_path, "run", array)
    target = ["--delta", tmp_path / "wh"] if fmt == "delta" else \
        ["--iceberg", iceberg(tmp_path), "--namespace", "ev"]
    result = publish(run, *target)
    assert result.exit_code == 2, result.output
    line = one_line_error(result)
    assert "'g'" in line and what in line
    assert not (tmp_path / "wh").exists() and not (tmp_path / "catalog.db").exists()


# --------------------------------------------------------------------------------------------
# Everything checked before anything is written
# --------------------------------------------------------------------------------------------

def test_a_bad_namespace_after_a_good_delta_target_writes_nothing(runs, tmp_path):
    result = publish(runs["a"], "--delta", tmp_path / "wh", "--iceberg", iceberg(tmp_path),
                     "--namespace", "a/b")
    assert result.exit_code == 2
    assert not (tmp_path / "wh").exists()


def test_an_iceberg_type_change_after_a_good_delta_target_writes_nothing(runs, tmp_path):
    cat = iceberg(tmp_path)
    assert publish(runs["a"], "--iceberg", cat, "--namespace", "ev").exit_code == 0
    changed = retyped_copy(runs["a"], tmp_path / "changed", run_id="run-c",
                           column="rouge1_matches", to=pa.float64())
    result = publish(changed, "--delta", tmp_path / "wh", "--iceberg", cat, "--namespace", "ev")
    assert result.exit_code == 2 and "'rouge1_matches'" in one_line_error(result)
    assert not (tmp_path / "wh").exists()


# --------------------------------------------------------------------------------------------
# Catalogs
# --------------------------------------------------------------------------------------------

def test_a_sqlite_database_that_is_not_a_catalog_is_refused_and_left_alone(runs, tmp_path):
    db = tmp_path / "mine.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
        con.execute("INSERT INTO notes (text) VALUES ('keep me')")
    before = db.read_bytes()
    result = publish(runs["a"], "--delta", tmp_path / "wh", "--iceberg", f"sqlite:///{db}",
                     "--namespace", "ev")
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "mine.db" in line and "not an Iceberg catalog" in line and "notes" in line
    assert db.read_bytes() == before
    assert not (tmp_path / "wh").exists()
    # a file that is no SQLite database at all
    other = tmp_path / "text.db"
    other.write_text("just text\n")
    result = publish(runs["a"], "--iceberg", f"sqlite:///{other}", "--namespace", "ev")
    assert result.exit_code == 2 and "text.db" in one_line_error(result)
    assert other.read_text() == "just text\n"
    # a database with a table of the catalog's name but not its columns
    lookalike = tmp_path / "lookalike.db"
    with sqlite3.connect(lookalike) as con:
        con.execute("CREATE TABLE iceberg_tables (x)")
    result = publish(runs["a"], "--iceberg", f"sqlite:///{lookalike}", "--namespace", "ev")
    assert result.exit_code == 2 and "not an Iceberg catalog" in one_line_error(result)


def test_a_run_published_before_fingerprints_is_told_apart_by_its_rows(runs, tmp_path,
                                                                       monkeypatch):
    """Tables written before fingerprints were recorded: the same run id with as many rows
    counts as the same run; with another count it is refused."""
    from pipeline.warehouse import delta as delta_module

    wh = tmp_path / "wh"
    with monkeypatch.context() as patch:  # an older publish: no overlap.fingerprint recorded
        patch.setattr(delta_module, "FINGERPRINT_KEY", "not.the.fingerprint")
        assert publish(runs["a"], "--delta", wh).exit_code == 0
    assert all("overlap.fingerprint" not in c for c in
               deltalake.DeltaTable(str(wh / "examples")).history())
    again = publish(runs["a"], "--delta", wh)
    assert again.exit_code == 0 and again.output.count("already there") == 2
    impostor = copy(runs["a"], tmp_path / "fewer")
    parts(impostor)[0].unlink()
    manifest_path = impostor / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["outputs"]["examples"] = manifest["outputs"]["examples"][1:]
    manifest_path.write_text(json.dumps(manifest))
    reseal(impostor)
    result = publish(impostor, "--delta", wh)
    assert result.exit_code == 2 and "other rows" in one_line_error(result)
    assert delta_rows(wh) == 40


@pytest.mark.parametrize("given", ["dir", "file.db", "relative", "new"])
def test_a_plain_path_as_iceberg_is_usage_with_the_uri_to_give(runs, tmp_path, monkeypatch,
                                                               given):
    # docs/warehouse.md: --iceberg takes sqlite:///PATH, another catalog URI, or a name
    # configured for pyiceberg; a path is none of these (a retry cannot fix it: exit 2)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ice").mkdir()
    target = {"dir": str(tmp_path / "ice"), "file.db": str(tmp_path / "cat.db"),
              "relative": "./ice", "new": str(tmp_path / "nothing")}[given]
    result = publish(runs["a"], "--iceberg", target, "--namespace", "evals")
    assert result.exit_code == 2, result.output
    line = one_line_error(result)
    assert "is a path, not an Iceberg catalog" in line and "URI missing" not in line
    want = {"dir": f"sqlite:///{tmp_path / 'ice' / 'catalog.db'}",
            "file.db": f"sqlite:///{tmp_path / 'cat.db'}",
            "relative": f"sqlite:///{tmp_path / 'ice' / 'catalog.db'}",
            "new": f"sqlite:///{tmp_path / 'nothing' / 'catalog.db'}"}[given]
    assert f"--iceberg {want};" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ice"]  # nothing made
    assert not any((tmp_path / "ice").iterdir())


def test_a_catalog_name_nobody_configured_is_usage(runs, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.pyiceberg.yaml
    monkeypatch.delenv("PYICEBERG_HOME", raising=False)
    result = publish(runs["a"], "--iceberg", "nosuchcatalog", "--namespace", "evals")
    assert result.exit_code == 2, result.output
    line = one_line_error(result)
    assert "no Iceberg catalog of that name is configured" in line and "sqlite:///" in line
