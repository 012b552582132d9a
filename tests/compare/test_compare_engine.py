"""`overlap compare` on the engine gives the in-memory comparison's outputs, bit for bit.

The in-memory comparison (:func:`pipeline.compare.compare_examples`, both runs' examples at
once) is the reference: the partitioned one (:func:`pipeline.engine.compare.compare_on_engine`)
pairs the runs part by part and only adds per-part sums, and must give the same
``compare.json``, ``compare.parquet`` and moved examples whatever the partitioning: the runs'
own partitions (runs written by ``overlap score``) or an exchange by id into 1 to 9 parts.
Runs: the bundled REALSumm texts scored by rouge-score's rules (``score_texts``), 10% of the
candidate's predictions cut to half their words; and /work/shared/data's SummEval when present.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline import api
from pipeline.compare import compare_runs
from pipeline.engine.compare import compare_on_engine, matching_parts
from pipeline.engine.local import LocalRunner
from pipeline.io.runs import open_run
from tests.compare.test_compare_fixtures import (
    cut_a_tenth,
    realsumm,
    score,
    truncate_half,
    write_run,
)

# /work/shared/data beside the checkout (or beside the worktrees' folder)
SHARED = next((p / "shared" / "data" for p in Path(__file__).resolve().parents
               if (p / "shared" / "data").is_dir()), Path("/nonexistent"))


def _engine(part_rows: int = 50_000, processes: int = 2):
    runner = LocalRunner(processes=processes)
    return runner, functools.partial(compare_on_engine, runner=runner, part_rows=part_rows)


def both(base, cand, *, part_rows: int = 50_000, **options):
    """(in-memory, partitioned) comparisons of the same runs with the same options."""
    memory = compare_runs(str(base), str(cand), **options)
    runner, engine = _engine(part_rows)
    try:
        parts = compare_runs(str(base), str(cand), engine=engine, **options)
    finally:
        runner.close()
    return memory, parts


def assert_same(memory, parts) -> None:
    assert parts.comparison.scheme == "partitioned"
    a, b = memory.to_document(), parts.to_document()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert memory.to_arrow().equals(parts.to_arrow(), check_metadata=True)
    pd.testing.assert_frame_equal(memory.top, parts.top)
    # the partitioned comparison kept nothing per example until asked
    assert not isinstance(parts.comparison.examples, type(memory.comparison.examples))


@pytest.fixture(scope="module")
def texts() -> pd.DataFrame:
    return realsumm()


@pytest.fixture(scope="module")
def scored(texts) -> pd.DataFrame:
    return score(texts)


@pytest.fixture(scope="module")
def cut(texts) -> pd.DataFrame:
    return score(cut_a_tenth(texts)[0])


@pytest.mark.parametrize("part_rows", [50_000, 300, 997])
def test_exchanged_parts_give_the_in_memory_outputs(tmp_path, scored, cut, part_rows):
    base = write_run(tmp_path / "b", scored, run_id="b", keep_text=True, n_shards=3)
    cand = write_run(tmp_path / "c", cut, run_id="c", keep_text=True, n_shards=2)
    memory, parts = both(base, cand, part_rows=part_rows, band=0.002, top=25)
    assert memory.alarm  # a real change: alarms, intervals away from 0
    assert_same(memory, parts)


def test_groups_and_examples_in_one_run_only(tmp_path, scored, cut):
    """Grouped by system, 40 baseline ids missing from the candidate, one system gone."""
    gone = scored["system"] == scored["system"].iloc[0]
    cand_frame = cut[~gone.to_numpy()].iloc[40:]
    extra = cut.iloc[:5].assign(id=[f"extra-{i}" for i in range(5)])
    cand_frame = pd.concat([cand_frame, extra], ignore_index=True)
    base = write_run(tmp_path / "b", scored, run_id="b", group_by=["system"])
    cand = write_run(tmp_path / "c", cand_frame, run_id="c", group_by=["system"])
    memory, parts = both(base, cand, part_rows=400, adjust="bh", max_missing=0.05)
    rows = memory.comparison.rows
    assert rows["missing"].any() and rows["n_candidate_only"].iloc[0] == 5
    assert_same(memory, parts)


def test_integer_ids_and_a_single_pair_group(tmp_path, scored, cut):
    frame_b = scored.assign(id=range(len(scored)), g=np.where(np.arange(len(scored)) == 3,
                                                                "lonely", "many"))
    frame_c = cut.assign(id=range(len(cut)), g=frame_b["g"])
    base = write_run(tmp_path / "b", frame_b, run_id="b", group_by=["g"])
    cand = write_run(tmp_path / "c", frame_c, run_id="c", group_by=["g"])
    memory, parts = both(base, cand, part_rows=600, n_bootstrap=200, seed=3)
    lonely = memory.comparison.rows.query("group == 'g=lonely'")
    assert (lonely["n_paired"] == 1).all() and lonely["ci_low"].isna().all()
    assert_same(memory, parts)


def test_identical_runs(tmp_path, scored):
    base = write_run(tmp_path / "b", scored, run_id="b")
    cand = write_run(tmp_path / "c", scored, run_id="c")
    memory, parts = both(base, cand, part_rows=700)
    assert not memory.alarm and (memory.comparison.rows["p_value"] == 1.0).all()
    assert_same(memory, parts)


def test_the_plot_still_reads_per_example_deltas(tmp_path, scored, cut):
    base = write_run(tmp_path / "b", scored, run_id="b")
    cand = write_run(tmp_path / "c", cut, run_id="c")
    memory, parts = both(base, cand, part_rows=700)
    pd.testing.assert_frame_equal(memory.comparison.paired, parts.comparison.paired)
    assert parts.comparison.n_paired == len(parts.comparison.paired) == len(scored)


def _inputs(path: Path, frame: pd.DataFrame) -> Path:
    path.mkdir(parents=True)
    table = pa.table({"id": frame["id"], "system": frame["system"],
                      "prediction": frame["prediction"],
                      "references": [[r] for r in frame["reference"]]})
    for k, chunk in enumerate(np.array_split(np.arange(len(table)), 3)):
        pq.write_table(table.take(pa.array(chunk)), path / f"part-{k}.parquet")
    return path


@pytest.fixture(scope="module")
def scored_runs(tmp_path_factory, texts):
    """Two runs of `overlap score` (ROUGE and BLEU, 5 partitions), the candidate cut."""
    root = tmp_path_factory.mktemp("scored")
    frame = texts.copy()
    rng = np.random.default_rng(11)
    picked = rng.choice(len(frame), size=len(frame) // 8, replace=False)
    frame.loc[picked, "prediction"] = [truncate_half(t) for t in frame.loc[picked, "prediction"]]
    out = {}
    for name, f in (("base", texts), ("cand", frame)):
        out[name] = api.score(str(_inputs(root / f"in-{name}", f)),
                              output=str(root / name), run_id=name,
                              config=api.ScoreConfig(metrics=["rouge1", "rougeL", "bleu"],
                                                     partition_rows=500, group_by=["system"],
                                                     bootstrap=0, engine="local",
                                                     num_cpus=1)).output
    return out


def test_runs_of_score_are_paired_file_by_file(scored_runs):
    for name in ("base", "cand"):
        parts = matching_parts(open_run(scored_runs[name]))
        assert parts is not None and sorted(parts) == [0, 1, 2, 3, 4]
    memory, parts = both(scored_runs["base"], scored_runs["cand"],
                         measures=["rouge1.fmeasure", "rougeL.recall", "bleu.score"])
    assert set(memory.comparison.rows["statistic"]) == {"mean", "corpus"}
    assert_same(memory, parts)


def test_api_compare_runs_on_the_engine_and_writes_the_same_files(scored_runs, tmp_path):
    memory = compare_runs(scored_runs["base"], scored_runs["cand"])
    result = api.compare(scored_runs["base"], scored_runs["cand"], output=str(tmp_path / "o"),
                         engine="local")
    assert result.comparison.scheme == "partitioned"
    assert_same(memory, result)
    written = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert written == json.loads(json.dumps(memory.to_document()))
    assert pq.read_table(tmp_path / "o" / "compare.parquet").equals(memory.to_arrow())


def test_a_bad_part_fails_the_comparison_as_in_memory(tmp_path, scored, cut):
    """A duplicated key is an input error (exit 2), found by the part that holds it."""
    dup = pd.concat([scored, scored.iloc[[17]]], ignore_index=True)
    base = write_run(tmp_path / "b", dup, run_id="b")
    cand = write_run(tmp_path / "c", cut, run_id="c")
    from pipeline.errors import InputError

    runner, engine = _engine(500)
    try:
        with pytest.raises(InputError, match="same key"):
            compare_runs(str(base), str(cand), engine=engine)
    finally:
        runner.close()


@pytest.mark.skipif(not (SHARED / "summeval_multiref11" / "examples.parquet").exists(),
                    reason="no shared/data/summeval_multiref11")
def test_shared_summeval_runs(tmp_path):
    """SummEval's 1,600 examples (11 references each), grouped by system, in 4 partitions."""
    table = pq.read_table(SHARED / "summeval_multiref11" / "examples.parquet",
                          columns=["id", "system", "prediction", "references"])
    preds = table.column("prediction").to_pylist()
    cut_preds = [truncate_half(p) if i % 7 == 0 else p for i, p in enumerate(preds)]
    out = {}
    for name, p in (("base", preds), ("cand", cut_preds)):
        (tmp_path / f"in-{name}").mkdir()
        pq.write_table(table.set_column(2, "prediction", pa.array(p, pa.string())),
                       tmp_path / f"in-{name}" / "part-0.parquet")
        out[name] = api.score(str(tmp_path / f"in-{name}"), output=str(tmp_path / name),
                              run_id=name,
                              config=api.ScoreConfig(partition_rows=math.ceil(
                                  table.num_rows / 4), bootstrap=0, engine="local",
                                  group_by=["system"])).output
    memory, parts = both(out["base"], out["cand"], band=0.0)
    assert memory.comparison.n_paired == table.num_rows and memory.alarm
    assert_same(memory, parts)


def test_parts_arriving_read_only_are_merged():
    """Ray hands results over zero-copy from its object store: read-only arrays (the
    three-node test failed so: 'output array is read-only')."""
    from pipeline.compare.parts import ALL_SCOPE, PairingMerger, pair_part, part_resamples

    rng = np.random.default_rng(1)
    frames = [pd.DataFrame({"id": [f"e{i}" for i in range(j, j + 50)],
                            "rouge1_fmeasure": rng.uniform(0, 1, 50)}) for j in (0, 50)]
    merger = PairingMerger(measures=["rouge1.fmeasure"])
    parts = [pair_part(f, f.assign(rouge1_fmeasure=f["rouge1_fmeasure"] * 0.9),
                       measures=["rouge1.fmeasure"]) for f in frames]
    for pairing, _ in parts:
        pairing.scopes[ALL_SCOPE].max_abs.setflags(write=False)
        merger.add(pairing)
    grids = merger.grids()
    for pairing, arrays in parts:
        share = part_resamples(arrays, pairing.local, grids, n_bootstrap=8, n_trials=8, seed=1)
        for res in share.values():
            for a in (res.boot_sums, res.boot_totals, res.kept, res.d_total):
                a.setflags(write=False)
        merger.add_resamples(share)
    rows = merger.comparison(n_bootstrap=8).rows
    assert rows["n_paired"].iloc[0] == 100 and rows["delta"].iloc[0] < 0
