"""Every reference layout and every way of sharding the inputs gives the same scores.

Runs in-process (``engine="local"``); the Ray engine is tested in test_pipeline_ray.py.
Per-example values are checked against the expected rouge-score 0.1.2 values of the bundled
REALSumm data (tests/data), not against our own output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.api import score
from pipeline.config import ScoreConfig

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipeline" / "data" / "realsumm"
EXPECTED = ROOT / "tests" / "data" / "realsumm_expected_rouge_score.parquet"
METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")
MEASURES = ("precision", "recall", "fmeasure")


def _local(**kw) -> ScoreConfig:
    return ScoreConfig(engine="local", bootstrap=0, **kw)


@pytest.fixture(scope="module")
def realsumm() -> tuple[pa.Table, pa.Table]:
    """The bundled predictions (2,500 rows) and references (one row per reference)."""
    return pq.read_table(DATA / "predictions"), pq.read_table(DATA / "references.parquet")


def expected_wide(stemmer: str = "none") -> pd.DataFrame:
    exp = pd.read_parquet(EXPECTED)
    exp = exp[exp.stemmer == stemmer]
    wide = exp.pivot(index="id", columns="metric", values=list(MEASURES))
    wide.columns = [f"{m}_{x}" for x, m in wide.columns]
    return wide


def read_examples(out: Path) -> pd.DataFrame:
    files = sorted((out / "examples").glob("part-*.parquet"))
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


def assert_matches_rouge_score(examples: pd.DataFrame, stemmer: str = "none") -> None:
    want = expected_wide(stemmer)
    got = examples.set_index("id").loc[want.index]
    assert len(got) == len(want) == 2500
    for col in want.columns:
        mismatch = got[col].to_numpy() != want[col].to_numpy()
        assert not mismatch.any(), f"{col}: {mismatch.sum()} differ"


def _write_shards(table: pa.Table, folder: Path, n: int, *, seed: int) -> Path:
    """Shuffle rows and write them as n uneven shards."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    table = table.take(pa.array(rng.permutation(table.num_rows)))
    cuts = np.sort(rng.choice(np.arange(1, table.num_rows), size=n - 1, replace=False))
    bounds = [0, *cuts.tolist(), table.num_rows]
    for i in range(n):
        pq.write_table(table.slice(bounds[i], bounds[i + 1] - bounds[i]),
                       folder / f"shard-{i:03d}.parquet", row_group_size=97)
    return folder


def test_rows_layout_bundled_data_equals_rouge_score(tmp_path):
    run = score(str(DATA / "predictions"), references=str(DATA / "references.parquet"),
                output=str(tmp_path / "run"), config=_local(group_by=("system",)))
    assert run.manifest["inputs"]["layout"] == "rows"
    assert_matches_rouge_score(read_examples(tmp_path / "run"))


def test_porter_stemming_equals_rouge_score(tmp_path):
    score(str(DATA / "predictions"), references=str(DATA / "references.parquet"),
          output=str(tmp_path / "run"), config=_local(stemmer="porter"))
    assert_matches_rouge_score(read_examples(tmp_path / "run"), stemmer="porter")


def _reference_lists(refs: pa.Table) -> pa.Table:
    return refs.group_by("id", use_threads=False).aggregate([("reference", "list")])


def test_inline_list_column_layout(tmp_path, realsumm):
    preds, refs = realsumm
    lists = _reference_lists(refs)
    position = pc.index_in(preds.column("id"), value_set=lists.column("id"))
    inline = preds.append_column("references", lists.column("reference_list").take(position))
    _write_shards(inline, tmp_path / "inline", 3, seed=1)
    run = score(str(tmp_path / "inline"), output=str(tmp_path / "run"), config=_local())
    assert run.manifest["inputs"]["layout"] == "inline"
    assert run.manifest["inputs"]["references"] is None
    assert_matches_rouge_score(read_examples(tmp_path / "run"))


def test_separate_list_table_layout(tmp_path, realsumm):
    preds, refs = realsumm
    lists = _reference_lists(refs).rename_columns(["id", "references"])
    _write_shards(lists, tmp_path / "refs", 2, seed=2)
    run = score(str(DATA / "predictions"), references=str(tmp_path / "refs"),
                output=str(tmp_path / "run"), config=_local())
    assert run.manifest["inputs"]["layout"] == "list"
    assert_matches_rouge_score(read_examples(tmp_path / "run"))


@pytest.mark.parametrize("n_pred, n_ref, partition_rows", [(1, 7, 50_000), (5, 2, 333),
                                                            (9, 13, 1000)])
def test_shards_differing_in_count_and_order(tmp_path, realsumm, n_pred, n_ref,
                                             partition_rows):
    preds, refs = realsumm
    _write_shards(preds, tmp_path / "p", n_pred, seed=n_pred)
    _write_shards(refs, tmp_path / "r", n_ref, seed=100 + n_ref)
    run = score(str(tmp_path / "p"), references=str(tmp_path / "r"),
                output=str(tmp_path / "run"), config=_local(partition_rows=partition_rows))
    assert run.manifest["counts"]["partitions"] == -(-2500 // partition_rows)
    assert len(run.manifest["outputs"]["examples"]) == run.manifest["counts"]["partitions"]
    assert_matches_rouge_score(read_examples(tmp_path / "run"))


def test_glob_and_file_uri_inputs(tmp_path, realsumm):
    preds, refs = realsumm
    chosen = pq.read_table(f"{DATA}/predictions/part-0000.parquet").column("id")
    chosen = pa.concat_arrays([chosen.combine_chunks(), pq.read_table(
        f"{DATA}/predictions/part-0002.parquet").column("id").combine_chunks()])
    pq.write_table(refs.filter(pc.is_in(refs.column("id"), value_set=chosen)),
                   tmp_path / "refs.parquet")
    run = score(f"{DATA}/predictions/part-000[02].parquet",
                references=f"file://{tmp_path}/refs.parquet",
                output=str(tmp_path / "run"), config=_local())
    assert run.n_examples == 700 + 800
    assert [f["path"].rsplit("/", 1)[1] for f in run.manifest["inputs"]["predictions"]["files"]
            ] == ["part-0000.parquet", "part-0002.parquet"]


def _multi_reference_inputs(tmp_path: Path) -> tuple[Path, Path]:
    preds = pa.table({"example": pa.array([3, 1, 2], pa.int64()),
                      "text": ["the cat sat on the mat", "a dog barked", None]})
    refs = pa.table({"example": pa.array([1, 3, 3, 2, 3, 1], pa.int32()),
                     "gold": ["the dog barked loudly", "a cat", "the cat sat on the mat",
                              "nothing here", "the cat sat", "a dog barked"]})
    pq.write_table(preds, tmp_path / "p.parquet")
    (tmp_path / "r").mkdir()
    pq.write_table(refs.slice(0, 4), tmp_path / "r" / "b.parquet")
    pq.write_table(refs.slice(4), tmp_path / "r" / "a.parquet")
    return tmp_path / "p.parquet", tmp_path / "r"


def test_several_references_integer_ids_and_column_options(tmp_path):
    p, r = _multi_reference_inputs(tmp_path)
    run = score(str(p), references=str(r), output=str(tmp_path / "run"),
                config=_local(id_column="example", prediction_column="text",
                              reference_column="gold", metrics=("rouge1",)))
    ex = read_examples(tmp_path / "run").set_index("example").sort_index()
    assert run.signature.split("|")[5] == "nrefs:var"
    # References keep the order of the sorted files, then rows: a.parquet first.
    # id 1: a.parquet has "a dog barked" -> refs ["a dog barked", "the dog barked loudly"]
    assert ex.loc[1, "n_references"] == 2
    assert ex.loc[1, "rouge1_reference_index"] == 0 and ex.loc[1, "rouge1_fmeasure"] == 1.0
    # id 3: refs ["the cat sat", "a cat", "the cat sat on the mat"]: the exact one wins.
    assert ex.loc[3, "n_references"] == 3
    assert ex.loc[3, "rouge1_reference_index"] == 2 and ex.loc[3, "rouge1_fmeasure"] == 1.0
    # id 2: a null prediction scores as an empty text and is counted.
    assert ex.loc[2, "rouge1_fmeasure"] == 0.0
    assert run.manifest["counts"]["null_predictions"] == 1
    assert ex.index.dtype == np.int64


def test_same_results_whatever_the_partitioning(tmp_path):
    a = score(str(DATA / "predictions"), references=str(DATA / "references.parquet"),
              output=str(tmp_path / "a"), config=_local(partition_rows=50_000))
    b = score(str(DATA / "predictions"), references=str(DATA / "references.parquet"),
              output=str(tmp_path / "b"), config=_local(partition_rows=400))
    ea = read_examples(tmp_path / "a").drop(columns="run_id").sort_values("id")
    eb = read_examples(tmp_path / "b").drop(columns="run_id").sort_values("id")
    pd.testing.assert_frame_equal(ea.reset_index(drop=True), eb.reset_index(drop=True))
    # Means are exact (correctly rounded sums): equal whatever the row order.
    assert a.aggregate.column("mean").equals(b.aggregate.column("mean"))


def test_output_files_are_named_deterministically(tmp_path):
    cfg = _local(partition_rows=700)
    for name in ("a", "b"):
        score(str(DATA / "predictions"), references=str(DATA / "references.parquet"),
              output=str(tmp_path / name), config=cfg, run_id="same")
    names = sorted(p.name for p in (tmp_path / "a" / "examples").iterdir())
    assert names == [f"part-{i:05d}.parquet" for i in range(4)]
    for n in names:
        ta = pq.read_table(tmp_path / "a" / "examples" / n)
        tb = pq.read_table(tmp_path / "b" / "examples" / n)
        assert ta.equals(tb)


def test_rows_keep_input_order_within_a_partition(tmp_path, realsumm):
    preds, _ = realsumm
    score(str(DATA / "predictions"), references=str(DATA / "references.parquet"),
          output=str(tmp_path / "run"), config=_local())
    ex = pq.read_table(tmp_path / "run" / "examples" / "part-00000.parquet")
    assert ex.column("id").to_pylist() == preds.column("id").to_pylist()


def test_keep_text_and_keep_columns(tmp_path, realsumm):
    preds, _ = realsumm
    score(str(DATA / "predictions"), references=str(DATA / "references.parquet"),
          output=str(tmp_path / "run"),
          config=_local(keep_text=True, keep_columns=("system",), metrics=("rougeL",)))
    ex = pq.read_table(tmp_path / "run" / "examples" / "part-00000.parquet")
    assert ex.column("prediction").to_pylist() == preds.column("prediction").to_pylist()
    assert ex.column("system").to_pylist() == preds.column("system").to_pylist()
    assert pc.all(pc.equal(ex.column("run_id"), ex.column("run_id")[0])).as_py()
