"""The engine's stages: rows go through exchange files, the check never reads text.

The split writes each unit's rows, cut by partition, to an Arrow file in the staging
directory; the check reads ids and reference counts from them, the score stage a
partition's whole rows. Nothing of this is left once the run is published.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.api import score
from pipeline.config import ScoreConfig

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"
PREDS = str(DATA / "predictions")
REFS = str(DATA / "references.parquet")


def test_the_check_reads_ids_and_reference_counts_and_the_score_stage_the_rows(
        tmp_path, monkeypatch):
    # (the inline layout reads no exchange of its inputs: tests/engine/test_inline_units.py)
    from pipeline.engine import tasks

    preds, refs = PREDS, REFS
    calls: list[tuple[str, int, tuple[str, ...] | None]] = []
    read_piece = tasks.read_piece

    def recording(loc, index, n_partitions, columns=None):
        calls.append((loc.path.rsplit("/", 1)[-1], index, None if columns is None
                      else tuple(columns)))
        return read_piece(loc, index, n_partitions, columns)

    monkeypatch.setattr(tasks, "read_piece", recording)
    # one process: tasks run here, in order (split, check every partition, score)
    cfg = ScoreConfig(engine="local", num_cpus=1, partition_rows=700, bootstrap=0)
    run = score(preds, references=refs, output=str(tmp_path / "run"), config=cfg)
    n_units = run.manifest["counts"]["prediction_units"] + run.manifest["counts"][
        "reference_units"]
    assert run.manifest["stages"]["split"] == {"units_run": n_units, "units_reused": 0}
    checks, scores = calls[:4 * n_units], calls[4 * n_units:]
    for name, _, columns in checks:
        if name.startswith("predictions"):
            assert columns == ("id",)  # never the prediction text
        else:  # the reference rows: ids, and which references are null (not their text)
            assert columns == ("id", "reference")
    assert [c[1] for c in checks] == [b for b in range(4) for _ in range(n_units)]
    assert [c[2] for c in scores] == [None] * (4 * n_units)  # whole rows, to score
    assert run.manifest["counts"]["examples_scored"] == 2500
    staging = list(tmp_path.glob(".run.overlap-staging-*"))
    assert staging == []  # the exchange files went with the staging directory


def test_a_problem_found_by_the_check_leaves_no_exchange_file(tmp_path):
    from pipeline.errors import InputError

    t = pq.read_table(REFS)
    pq.write_table(t.slice(0, t.num_rows - 40), tmp_path / "refs.parquet")
    with pytest.raises(InputError, match="predictions have no references"):
        score(PREDS, references=str(tmp_path / "refs.parquet"),
              output=str(tmp_path / "run"),
              config=ScoreConfig(engine="local", partition_rows=700, bootstrap=0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["refs.parquet"]


def test_many_groups_aggregate_in_the_driver_and_give_the_same_table(tmp_path, monkeypatch):
    """Above MAX_GROUP_PARTS (file, group) pairs the driver aggregates the values itself:
    the same table as from per-file sums."""
    from pipeline.engine import run as engine_run

    cfg = ScoreConfig(engine="local", partition_rows=700, bootstrap=200, group_by=("system",))
    by_files = score(PREDS, references=REFS, output=str(tmp_path / "a"), config=cfg)
    pairs = sum(1 for _ in (tmp_path / "a" / "examples").iterdir())
    seen = []
    aggregate_examples = engine_run.aggregate_examples

    def watching(*args, **kwargs):
        seen.append(kwargs["group_parts"])
        return aggregate_examples(*args, **kwargs)

    def not_by_files(*args, **kwargs):
        raise AssertionError("aggregated file by file")

    monkeypatch.setattr(engine_run, "MAX_GROUP_PARTS", 0)
    monkeypatch.setattr("pipeline.aggregate.aggregate_parts", not_by_files)
    monkeypatch.setattr("pipeline.engine.session.aggregate_examples", watching)
    in_driver = score(PREDS, references=REFS, output=str(tmp_path / "b"), config=cfg)
    assert seen[0] == 4 * 24 and pairs == 4  # every system in every file
    assert in_driver.aggregate.equals(by_files.aggregate)
    assert in_driver.aggregate.num_rows == 12 * 25


def test_units_split_in_slices_give_the_same_files(tmp_path, monkeypatch):
    """A unit larger than a slice (input row groups of any size) is split slice by slice:
    the same examples and aggregate as split whole."""
    from pipeline.engine import tasks

    cfg = ScoreConfig(engine="local", partition_rows=700, bootstrap=100, group_by=("system",))
    whole = score(PREDS, references=REFS, output=str(tmp_path / "whole"), config=cfg,
                  run_id="r")
    monkeypatch.setattr(tasks, "SLICE_ROWS", 97)  # forked workers inherit it
    sliced = score(PREDS, references=REFS, output=str(tmp_path / "sliced"), config=cfg,
                   run_id="r")
    names = sorted(p.name for p in (tmp_path / "whole" / "examples").iterdir())
    assert len(names) == 4
    for name in names:
        assert pq.read_table(tmp_path / "sliced" / "examples" / name).equals(
            pq.read_table(tmp_path / "whole" / "examples" / name), check_metadata=True)
    assert sliced.aggregate.equals(whole.aggregate)


def test_an_error_in_a_later_slice_names_the_whole_units_rows(tmp_path, monkeypatch):
    import pyarrow as pa

    from pipeline.engine import tasks
    from pipeline.errors import InputError

    raw = [b"fine"] * 10
    raw[3], raw[8] = b"caf\xe9 latin-1", b"\xff\xfe"  # slices 0 and 2 of 4 rows
    p = tmp_path / "p.parquet"
    pq.write_table(pa.table({
        "id": [f"x{i}" for i in range(10)],
        "prediction": pa.array(raw, pa.binary()).view(pa.string()),
        "references": [["ref"]] * 10}), p)
    monkeypatch.setattr(tasks, "SLICE_ROWS", 4)
    with pytest.raises(InputError, match=r"is not valid UTF-8 in 2 rows \(ids 'x3', 'x8'\)"):
        score(str(p), output=str(tmp_path / "out"),
              config=ScoreConfig(engine="local", num_cpus=1, bootstrap=0))
    assert sorted(q.name for q in tmp_path.iterdir()) == ["p.parquet"]
