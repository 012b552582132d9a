"""The inline layout (references in the predictions' rows): no exchange of the inputs.

Each unit is read, checked and scored where it lies; only its ids and its scored rows go
through exchange files, and each partition gathers its scored rows into the same examples
file the joined layouts write. The reference run for every test is the same 2,500 REALSumm
examples with their references in a separate table (layout ``rows``: joined by id, through
the exchange of the inputs), whose examples files hold the same examples, partition by
partition and row by row.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.api import score
from pipeline.config import ScoreConfig
from pipeline.engine.faults import ENV_VAR
from pipeline.errors import ExecutionError, InputError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"
PREDS = str(DATA / "predictions")
REFS = str(DATA / "references.parquet")
# Four partitions of the 2,500 examples; units of at most 700 rows.
SETTINGS = {"partition_rows": 700, "bootstrap": 100, "group_by": ("system",)}


def _inline(folder: Path, *, shards: int = 3) -> str:
    """The bundled predictions with a ``references`` list column, in ``shards`` files."""
    p = pa.concat_tables(pq.read_table(f) for f in sorted(Path(PREDS).glob("*.parquet")))
    r = pq.read_table(REFS).group_by("id", use_threads=False).aggregate(
        [("reference", "list")])
    lists = dict(zip(r.column("id").to_pylist(), r.column("reference_list").to_pylist(),
                     strict=True))
    p = p.append_column("references", pa.array([lists[i] for i in p.column("id").to_pylist()]))
    folder.mkdir()
    step = -(-p.num_rows // shards)
    for k in range(shards):
        pq.write_table(p.slice(k * step, step), folder / f"part-{k}.parquet",
                       row_group_size=300)
    return str(folder)


@pytest.fixture(scope="module")
def joined_run(tmp_path_factory) -> Path:
    """The same examples scored from the separate references table (joined by id)."""
    out = tmp_path_factory.mktemp("joined") / "run"
    score(PREDS, references=REFS, output=str(out), run_id="r",
          config=ScoreConfig(engine="local", **SETTINGS))
    return out


def _same_examples_files(run: Path, joined: Path) -> None:
    names = sorted(p.name for p in (joined / "examples").iterdir())
    assert len(names) == 4
    assert sorted(p.name for p in (run / "examples").iterdir()) == names
    for name in names:  # the same partition layout, rows and values: compare pairs files
        got = pq.read_table(run / "examples" / name)
        want = pq.read_table(joined / "examples" / name)
        assert got.equals(want)
        assert got.schema.metadata == want.schema.metadata  # signature and run id
    assert pq.read_table(run / "aggregate.parquet").equals(
        pq.read_table(joined / "aggregate.parquet"))


def test_units_are_scored_where_they_lie_and_partitions_gather_their_rows(
        tmp_path, monkeypatch, joined_run):
    from pipeline.engine import run as engine_run
    from pipeline.engine import tasks

    def no_exchange(*args):
        raise AssertionError("the inline layout's inputs went through the exchange")

    monkeypatch.setattr(engine_run, "exchange_unit", no_exchange)
    calls: list[tuple[str, int, tuple[str, ...] | None]] = []
    read_piece = tasks.read_piece

    def recording(loc, index, n_partitions, columns=None):
        calls.append((loc.path.rsplit("/", 1)[-1], index,
                      None if columns is None else tuple(columns)))
        return read_piece(loc, index, n_partitions, columns)

    monkeypatch.setattr(tasks, "read_piece", recording)
    # one process: tasks run here, in order (units, check every partition, gather)
    run = score(_inline(tmp_path / "in"), output=str(tmp_path / "run"), run_id="r",
                config=ScoreConfig(engine="local", num_cpus=1, **SETTINGS))
    n_units = run.manifest["counts"]["prediction_units"]
    assert n_units == 6 and run.manifest["counts"]["reference_units"] == 0
    assert run.manifest["stages"] == {
        "split": {"units_run": n_units, "units_reused": 0},
        "check": {"partitions_run": 4, "partitions_reused": 0},
        "score": {"partitions_run": 4, "partitions_reused": 0}}
    units = [f"{u:05d}" for u in range(n_units)]
    # the check reads ids only; the score stage each unit's scored rows of its partition
    assert calls == [*((f"ids-{u}.arrow", b, ("id",)) for b in range(4) for u in units),
                     *((f"scored-{u}.arrow", b, None) for b in range(4) for u in units)]
    assert "units" in run.manifest["seconds"] and "split" not in run.manifest["seconds"]
    _same_examples_files(tmp_path / "run", joined_run)
    assert list(tmp_path.glob(".run.overlap-staging-*")) == []  # the exchange went with it


def test_units_scored_in_slices_give_the_same_files(tmp_path, monkeypatch, joined_run):
    from pipeline.engine import tasks

    monkeypatch.setattr(tasks, "SLICE_ROWS", 97)  # forked workers inherit it
    score(_inline(tmp_path / "in"), output=str(tmp_path / "run"), run_id="r",
          config=ScoreConfig(engine="local", **SETTINGS))
    _same_examples_files(tmp_path / "run", joined_run)


def test_ids_repeated_in_other_units_are_named_as_the_check_names_them(tmp_path):
    ids = [f"d{i}" for i in range(12)]
    shards = (ids[:6], [ids[1], *ids[6:], ids[7]], [ids[1]])  # d1 three times, d7 twice
    folder = tmp_path / "in"
    folder.mkdir()
    for k, part in enumerate(shards):
        pq.write_table(pa.table({"id": part, "prediction": ["a b c"] * len(part),
                                 "references": [["a b"]] * len(part)}),
                       folder / f"part-{k}.parquet")
    for partition_rows in (1, 3, 50):  # every example its own partition .. one partition
        with pytest.raises(InputError) as caught:
            score(str(folder), output=str(tmp_path / "run"),
                  config=ScoreConfig(engine="local", num_cpus=1, bootstrap=0,
                                     partition_rows=partition_rows))
        message = caught.value.message
        assert message.startswith("2 ids occur more than once among the predictions (ids: ")
        assert sorted(message.split("(ids: ")[1].rstrip(")").split(", ")) == ["'d1'", "'d7'"]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # nothing written


def test_problems_of_every_unit_are_counted_together(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for k in range(3):
        n = 4
        pq.write_table(pa.table({
            "id": [f"u{k}-{i}" for i in range(n)], "prediction": ["a b"] * n,
            "references": pa.array([["a"], [], None, ["b"]], pa.list_(pa.string()))}),
            folder / f"part-{k}.parquet")
    with pytest.raises(InputError, match=r"^6 examples have an empty or null list of "
                                         r"references \(ids: .*, \.\.\.\)"):
        score(str(folder), output=str(tmp_path / "run"),
              config=ScoreConfig(engine="local", bootstrap=0, partition_rows=2))
    run = score(str(folder), output=str(tmp_path / "run"),
                config=ScoreConfig(engine="local", bootstrap=0, partition_rows=2,
                                   on_empty_references="skip"))
    assert run.manifest["counts"]["examples_scored"] == 6
    assert run.manifest["counts"]["skipped"]["no_reference"] == 6


def test_a_rerun_after_a_failure_reuses_the_scored_units(tmp_path, monkeypatch, joined_run):
    from pipeline.engine import run as engine_run

    preds = _inline(tmp_path / "in")
    cfg = ScoreConfig(engine="local", num_cpus=1, **SETTINGS)
    monkeypatch.setenv(ENV_VAR, json.dumps({"partition": 2, "action": "transient",
                                             "log": str(tmp_path / "attempts")}))
    with pytest.raises(ExecutionError, match="injected transient failure in partition 2"):
        score(preds, output=str(tmp_path / "run"), config=cfg, run_id="r")
    [staging] = tmp_path.glob(".run.overlap-staging-*")
    assert sorted(p.name for p in (staging / "completions").iterdir()) == [
        "part-00000.json", "part-00001.json"]
    assert sorted(p.name for p in (staging / "exchange").iterdir()) == sorted(
        f"{kind}-{u:05d}.{ext}" for u in range(6)
        for kind, ext in (("ids", "arrow"), ("scored", "arrow"), ("scored", "json")))
    monkeypatch.delenv(ENV_VAR)

    def no_reading(*args):
        raise AssertionError("an input was read again")

    monkeypatch.setattr(engine_run, "score_unit", no_reading)
    run = score(preds, output=str(tmp_path / "run"), config=cfg, run_id="r")
    assert run.manifest["resumed"] is True
    assert run.manifest["stages"] == {
        "split": {"units_run": 0, "units_reused": 6},
        "check": {"partitions_run": 0, "partitions_reused": 4},
        "score": {"partitions_run": 2, "partitions_reused": 2}}
    _same_examples_files(tmp_path / "run", joined_run)


def test_an_inline_run_compares_with_a_joined_run_of_the_same_examples(tmp_path, joined_run):
    from pipeline import api

    score(_inline(tmp_path / "in"), output=str(tmp_path / "run"), run_id="r",
          config=ScoreConfig(engine="local", **SETTINGS))
    api.compare(str(joined_run), str(tmp_path / "run"), output=str(tmp_path / "cmp"),
                n_bootstrap=100)
    doc = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    pairing = doc["pairing"]
    assert (pairing["n_paired"], pairing["n_baseline_only"], pairing["n_candidate_only"]) == (
        2500, 0, 0)
    assert doc["rows"] and all(row["delta"] == 0 for row in doc["rows"])


@pytest.mark.forks
def test_the_scorer_is_built_before_the_workers_fork(tmp_path):
    # Forked workers inherit the driver's scorer (its modules imported, kernels loaded)
    # instead of each building one: at 5,000 rows that was about a third of the run's CPU.
    from pipeline.engine import tasks

    tasks._scorer.cache_clear()
    # num_cpus set: a run this small forks no workers by itself (run.FORK_MIN_ROWS)
    run = score(_inline(tmp_path / "in"), output=str(tmp_path / "run"), run_id="r",
                config=ScoreConfig(engine="local", num_cpus=2, **SETTINGS))
    assert tasks._scorer.cache_info().currsize == 1
    assert run.manifest["engine"]["num_cpus"] == 2


def test_a_slice_is_scored_in_one_call_whatever_the_partitions(tmp_path, monkeypatch,
                                                               joined_run):
    # Scoring each partition's share of a slice alone made batches of slice / partitions
    # rows (about 330 at 10M rows and 200 partitions): 10M rows ran at 0.39x the 1M rate.
    from pipeline.engine import tasks

    log = tmp_path / "calls.jsonl"
    score_rows = tasks.score_rows

    def recorded(spec, settings, joined):  # forked workers append to the file
        ids = joined.predictions.column(spec.id_column)
        parts = sorted(set(tasks.partition_of(ids, 4).tolist())) if len(ids) else []
        with open(log, "a") as fh:
            fh.write(json.dumps({"rows": len(ids), "partitions": parts}) + "\n")
        return score_rows(spec, settings, joined)

    monkeypatch.setattr(tasks, "score_rows", recorded)
    score(_inline(tmp_path / "in"), output=str(tmp_path / "run"), run_id="r",
          config=ScoreConfig(engine="local", **SETTINGS))
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert sum(c["rows"] for c in calls) == 2500
    assert all(c["partitions"] == [0, 1, 2, 3] for c in calls if c["rows"] >= 100), calls
    _same_examples_files(tmp_path / "run", joined_run)
