"""Aggregates: exact means, the seeded percentile bootstrap, groups and pass rates."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.aggregate import aggregate, exact_mean, value_columns
from pipeline.config import Threshold
from pipeline.errors import InputError
from pipeline.io.partition import hash_ids
from pipeline.metrics.base import MetricSpec
from tests.support.plain_bootstrap import plain_mix64, plain_poisson_weights

MEASURES = ("precision", "recall", "fmeasure")


def _examples(n: int, *, seed: int = 0, groups: tuple[str, ...] = ("a", "b", "c")) -> pa.Table:
    rng = np.random.default_rng(seed)
    cols: dict[str, object] = {"system": [groups[i % len(groups)] for i in range(n)]}
    for m in ("rouge1", "rougeL"):
        for x in MEASURES:
            cols[f"{m}_{x}"] = rng.random(n)
    cols["passed_rougeL_fmeasure"] = cols["rougeL_fmeasure"] >= 0.5  # type: ignore[operator]
    return pa.table(cols)


def _rows(table: pa.Table, **where) -> list[dict]:
    return [r for r in table.to_pylist() if all(r[k] == v for k, v in where.items())]


def test_mean_is_the_exact_mean_of_the_values():
    t = _examples(1001)
    agg = aggregate(t, metrics=("rouge1", "rougeL"), n_bootstrap=0)
    for r in _rows(agg, scope="all"):
        values = t.column(f"{r['metric']}_{r['measure']}").to_numpy()
        assert r["mean"] == math.fsum(values) / len(values)
        assert r["mean"] == pytest.approx(np.mean(values), rel=1e-14)
        assert r["ci_low"] is None and r["ci_high"] is None
        assert r["n_examples"] == 1001


@given(st.lists(st.floats(0, 1), min_size=1, max_size=300))
@settings(max_examples=50, deadline=None)
def test_exact_mean_does_not_depend_on_order(values):
    a = np.array(values)
    assert exact_mean(a) == exact_mean(a[::-1]) == exact_mean(np.sort(a))


def test_interval_is_the_percentile_of_plain_poisson_bootstrap_means():
    # The documented method, written out plainly: example i (by position, no id column) has
    # key mix64(mix64(i) ^ mix64(seed ^ C)); resample r takes lane r % 4 of
    # mix64(key + (r // 4 + 1) * gamma) and inverts Poisson(1) at 16 bits.
    t = _examples(400)
    agg = aggregate(t, metrics=("rouge1", "rougeL"), n_bootstrap=300, confidence=0.9, seed=11)
    measures = [f"{m}_{x}" for m in ("rouge1", "rougeL") for x in MEASURES]
    values = np.column_stack([t.column(c).to_numpy() for c in measures])
    weights = plain_poisson_weights([plain_mix64(i) for i in range(400)], seed=11, count=300)
    boot = (weights @ values) / weights.sum(axis=1, keepdims=True)
    low, high = np.quantile(boot, [0.05, 0.95], axis=0)
    for j, r in enumerate(_rows(agg, scope="all", statistic="mean")):
        # exact sums on a 2**-40 grid (400 examples): agreement to ~1e-12
        assert r["ci_low"] == pytest.approx(low[j], abs=1e-11)
        assert r["ci_high"] == pytest.approx(high[j], abs=1e-11)
        assert r["ci_low"] < r["mean"] < r["ci_high"]


def test_resamples_scatter_with_the_standard_error_of_the_mean():
    t = _examples(5000)
    agg = aggregate(t, metrics=("rouge1",), n_bootstrap=1000, confidence=0.6827)
    for r in _rows(agg, scope="all", statistic="mean"):
        values = t.column(f"rouge1_{r['measure']}").to_numpy()
        se = values.std() / math.sqrt(len(values))
        assert (r["ci_high"] - r["ci_low"]) / 2 == pytest.approx(se, rel=0.1)


def test_interval_does_not_depend_on_row_order_or_grouping_with_an_id_column():
    t = _examples(700).append_column("id", pa.array([f"doc-{i}" for i in range(700)]))
    a = aggregate(t, metrics=("rouge1",), n_bootstrap=200, id_column="id")
    shuffled = t.take(pa.array(np.random.default_rng(3).permutation(700)))
    b = aggregate(shuffled, metrics=("rouge1",), n_bootstrap=200, id_column="id")
    c = aggregate(shuffled, metrics=("rouge1",), group_by=("system",), n_bootstrap=200,
                  id_column="id")
    assert a.column("ci_low").equals(b.column("ci_low"))
    assert a.column("ci_high").equals(b.column("ci_high"))
    all_c = c.filter(pa.compute.equal(c.column("scope"), "all"))
    assert all_c.column("ci_low").equals(a.column("ci_low"))
    assert all_c.column("ci_high").equals(a.column("ci_high"))


def test_same_seed_same_interval_other_seed_other_interval():
    t = _examples(500)
    a = aggregate(t, metrics=("rouge1",), group_by=("system",), seed=1, n_bootstrap=200)
    b = aggregate(t, metrics=("rouge1",), group_by=("system",), seed=1, n_bootstrap=200)
    c = aggregate(t, metrics=("rouge1",), group_by=("system",), seed=2, n_bootstrap=200)
    assert a.equals(b)
    assert a.column("mean").equals(c.column("mean"))
    assert not a.column("ci_low").equals(c.column("ci_low"))


def test_groups_sorted_and_a_groups_interval_depends_only_on_its_examples():
    t = _examples(600, groups=("b", "a", "c"))
    t = t.append_column("id", pa.array(range(600)))
    agg = aggregate(t, metrics=("rouge1", "rougeL"), group_by=("system",), n_bootstrap=100,
                    id_column="id")
    assert [r["system"] for r in _rows(agg, metric="rouge1", measure="recall")] \
        == [None, "a", "b", "c"]
    without_c = t.filter(pa.compute.not_equal(t.column("system"), "c"))
    agg2 = aggregate(without_c, metrics=("rouge1", "rougeL"), group_by=("system",),
                     n_bootstrap=100, id_column="id")
    for g in ("a", "b"):
        assert _rows(agg, scope="group", system=g) == _rows(agg2, scope="group", system=g)
    for r in _rows(agg, scope="group", system="a", statistic="mean"):
        values = [v for v, s in zip(t.column(f"{r['metric']}_{r['measure']}").to_pylist(),
                                    t.column("system").to_pylist(), strict=True) if s == "a"]
        assert r["mean"] == math.fsum(values) / len(values)
        assert r["n_examples"] == len(values) == 200


def test_two_group_columns_and_null_group_values_last():
    t = _examples(60).append_column("split", pa.array(["dev", None] * 30))
    agg = aggregate(t, metrics=("rouge1",), group_by=("system", "split"), n_bootstrap=0)
    keys = [(r["system"], r["split"]) for r in _rows(agg, measure="fmeasure")]
    assert keys == [(None, None), ("a", "dev"), ("a", None), ("b", "dev"), ("b", None),
                    ("c", "dev"), ("c", None)]
    assert _rows(agg, measure="fmeasure")[0]["scope"] == "all"
    assert sum(r["n_examples"] for r in _rows(agg, scope="group", measure="fmeasure")) == 60


def test_pass_rates():
    t = _examples(1000)
    th = (Threshold("rougeL", "fmeasure", 0.5),)
    agg = aggregate(t, metrics=("rouge1", "rougeL"), thresholds=th, n_bootstrap=100)
    [r] = _rows(agg, scope="all", statistic="pass_rate")
    passed = t.column("passed_rougeL_fmeasure").to_numpy(zero_copy_only=False)
    assert (r["metric"], r["measure"], r["threshold"]) == ("rougeL", "fmeasure", 0.5)
    assert r["mean"] == passed.mean()
    assert 0 <= r["ci_low"] <= r["mean"] <= r["ci_high"] <= 1
    assert value_columns(("rouge1",), th)[-1] == "passed_rougeL_fmeasure"


def test_output_schema_and_errors():
    agg = aggregate(_examples(10), metrics=("rouge1",), group_by=("system",), n_bootstrap=5)
    assert agg.schema.names == ["scope", "system", "metric", "measure", "statistic",
                                "threshold", "mean", "ci_low", "ci_high", "n_examples"]
    assert agg.schema.field("n_examples").type == pa.int64()
    with pytest.raises(InputError, match="no example"):
        aggregate(_examples(0), metrics=("rouge1",))
    with pytest.raises(InputError, match="lacks column"):
        aggregate(_examples(5), metrics=("rouge2",))


def test_single_example_interval_is_the_value():
    t = _examples(1)
    agg = aggregate(t, metrics=("rouge1",), n_bootstrap=50)
    for r in agg.to_pylist():
        # resamples with weight 0 are left out; the others are the value on the exact grid
        assert r["ci_low"] == r["ci_high"] == pytest.approx(r["mean"], abs=2.0**-48)


def test_where_and_in_which_order_chunks_run_does_not_matter():
    t = _examples(300)

    def backwards(fn, args_list):
        return [fn(*args) for args in reversed(args_list)][::-1]

    a = aggregate(t, metrics=("rouge1",), group_by=("system",), n_bootstrap=230)
    b = aggregate(t, metrics=("rouge1",), group_by=("system",), n_bootstrap=230,
                  map_chunks=backwards)
    assert a.equals(b)


def _ratio_times_100(sums: np.ndarray) -> np.ndarray:
    return 100.0 * sums[:, 0] / sums[:, 1]


def test_corpus_metric_row_from_summed_statistics():
    spec = MetricSpec(name="toy", family="toy", measures=("score",), primary="score",
                      statistics=(("hits", "int64"), ("total", "int64")),
                      reference_rule="max", corpus=_ratio_times_100, scale=100.0)
    hits = [1, 2, 0, 3, 5, 1]
    total = [2, 4, 1, 3, 5, 4]
    t = pa.table({"id": ["a", "b", "c", "d", "e", "f"], "toy_hits": hits, "toy_total": total,
                  "toy_score": [100.0 * h / n for h, n in zip(hits, total, strict=True)]})
    agg = aggregate(t, metrics=(spec,), n_bootstrap=400, id_column="id", seed=2)
    [mean] = _rows(agg, statistic="mean")
    [corpus] = _rows(agg, statistic="corpus")
    assert (corpus["metric"], corpus["measure"]) == ("toy", "score")
    assert corpus["mean"] == 100.0 * 12 / 19  # sum of hits / sum of totals
    assert mean["mean"] == pytest.approx(100.0 * (0.5 + 0.5 + 0 + 1 + 1 + 0.25) / 6)
    w = plain_poisson_weights(
        [int(h) for h in hash_ids(t.column("id"))], seed=2, count=400)
    boot = 100.0 * (w @ np.array(hits)) / (w @ np.array(total))
    boot = boot[w.sum(axis=1) > 0]
    low, high = np.quantile(boot, [0.025, 0.975])
    assert corpus["ci_low"] == pytest.approx(low, rel=1e-12)
    assert corpus["ci_high"] == pytest.approx(high, rel=1e-12)
    assert value_columns((spec,)) == ["toy_score", "toy_hits", "toy_total"]


def test_nan_null_and_values_are_distinct_groups():
    t = pa.table({"g": pa.array([1.0, float("nan"), None, 1.0, float("nan"), None, 2.0]),
                  "rouge1_precision": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
                  "rouge1_recall": [0.0] * 7, "rouge1_fmeasure": [0.0] * 7})
    agg = aggregate(t, metrics=("rouge1",), group_by=("g",), n_bootstrap=0)
    rows = _rows(agg, scope="group", measure="precision")
    keys = [r["g"] for r in rows]
    assert keys[:2] == [1.0, 2.0] and math.isnan(keys[2]) and keys[3] is None
    assert [r["n_examples"] for r in rows] == [2, 1, 2, 2]
    assert [r["mean"] for r in rows] == pytest.approx([0.25, 0.7, 0.35, 0.45])


# ---- mergeable aggregation: per-file sums, added ----------------------------------------

@given(st.lists(st.floats(-1e6, 1e6, allow_subnormal=True), min_size=0, max_size=200),
       st.lists(st.integers(0, 200), max_size=4))
@settings(max_examples=100, deadline=None)
def test_partials_of_any_parts_give_math_fsum_of_all_values(values, cuts):
    from pipeline.stats import exact_partials

    a = np.array(values, dtype=np.float64)
    bounds = [0, *sorted(c for c in cuts if c <= len(a)), len(a)]
    partials = [p for lo, hi in zip(bounds, bounds[1:], strict=False)
                for p in exact_partials(a[lo:hi])]
    assert math.fsum(partials) == math.fsum(values)


def test_partials_of_values_of_every_magnitude():
    from pipeline.stats import exact_partials

    rng = np.random.default_rng(3)
    a = rng.random(10_000) * 10.0 ** rng.integers(-300, 300, 10_000)
    a[::7] *= -1
    parts = [exact_partials(a[i::3]) for i in range(3)]
    assert math.fsum([p for ps in parts for p in ps]) == math.fsum(a.tolist())


def _files(tmp_path, table: pa.Table, n_files: int, seed: int) -> list[str]:
    import pyarrow.parquet as pq

    part = np.random.default_rng(seed).integers(0, n_files, table.num_rows)
    uris = []
    for f in range(n_files):
        path = tmp_path / f"part-{f}.parquet"
        pq.write_table(table.filter(pa.array(part == f)), path)
        uris.append(str(path))
    return uris


@pytest.mark.parametrize("n_files", [1, 3, 7])
def test_aggregate_of_files_equals_aggregate_of_all_rows_bit_for_bit(tmp_path, n_files):
    from pipeline.aggregate import aggregate_parts

    t = _examples(2000, seed=5, groups=("a", "b", "c", "d", "e"))
    t = t.append_column("id", pa.array([f"ex{i}" for i in range(t.num_rows)]))
    kw = {"metrics": ("rouge1", "rougeL"), "group_by": ("system",), "n_bootstrap": 301,
          "thresholds": (Threshold("rougeL", "fmeasure", 0.5),), "id_column": "id", "seed": 9}
    t = t.rename_columns([c if c != "passed_rougeL_fmeasure" else
                          kw["thresholds"][0].column for c in t.column_names])
    whole = aggregate(t, **kw)
    assert aggregate_parts(_files(tmp_path, t, n_files, n_files), **kw).equals(whole)


def test_aggregate_of_files_with_nan_and_null_groups_and_a_corpus_metric(tmp_path):
    from pipeline.aggregate import aggregate_parts

    spec = MetricSpec(name="toy", family="toy", measures=("score",), primary="score",
                      statistics=(("hits", "int64"), ("total", "int64")),
                      reference_rule="max", corpus=_ratio_times_100, scale=100.0)
    rng = np.random.default_rng(1)
    n = 500
    total = rng.integers(1, 30, n)
    hits = rng.integers(0, total + 1)
    g = pa.array([[1.0, float("nan"), None, 2.5][i % 4] for i in range(n)])
    t = pa.table({"id": np.arange(n) * 7, "g": g, "toy_score": 100.0 * hits / total,
                  "toy_hits": hits, "toy_total": total})
    kw = {"metrics": (spec,), "group_by": ("g",), "n_bootstrap": 200, "id_column": "id"}
    got, want = aggregate_parts(_files(tmp_path, t, 4, 0), **kw), aggregate(t, **kw)
    assert got.schema == want.schema and got.num_rows == want.num_rows == 10
    # Table.equals takes NaN for unequal to itself: compare NaN-aware, nulls apart
    assert got.to_pandas().equals(want.to_pandas())
    assert got.column("g").is_null().equals(want.column("g").is_null())


def test_groups_in_blocks_give_the_same_table(tmp_path, monkeypatch):
    """With room for one scope's resamples at a time (many passes), nothing changes."""
    from pipeline import aggregate as agg_module

    t = _examples(600, seed=2, groups=tuple("abcdefghij"))
    t = t.append_column("id", pa.array(np.arange(600)))
    kw = {"metrics": ("rouge1",), "group_by": ("system",), "n_bootstrap": 120,
          "id_column": "id"}
    whole = aggregate(t, **kw)
    files = _files(tmp_path, t, 3, 1)
    calls = []

    def counting(fn, args_list):
        calls.append(len(args_list))
        return [fn(*a) for a in args_list]

    monkeypatch.setattr(agg_module, "SUMS_BLOCK_BYTES", 1)
    assert aggregate(t, **kw).equals(whole)
    assert agg_module.aggregate_parts(files, map_parts=counting, **kw).equals(whole)
    assert len(calls) == 1 + 11  # one pass of sums, then one pass per scope


def _shares(table: pa.Table, n_parts: int, seed: int, spec) -> list:
    from pipeline.aggregate import part_share

    part = np.random.default_rng(seed).integers(0, n_parts, table.num_rows)
    return [part_share(table.filter(pa.array(part == p)), spec, part=p)
            for p in range(n_parts)]


@pytest.mark.parametrize(("n_parts", "n_bootstrap", "chunk_rows"),
                         [(1, 301, 65_536), (3, 301, 65_536), (7, 301, 65_536), (4, 0, 65_536),
                          (1, 301, 97), (3, 200, 97)])
def test_aggregate_of_shares_equals_aggregate_of_all_rows_bit_for_bit(
        n_parts, n_bootstrap, chunk_rows, monkeypatch):
    from pipeline import aggregate as agg
    from pipeline.aggregate import ShareSpec, aggregate_shares

    monkeypatch.setattr(agg, "SHARE_CHUNK_ROWS", chunk_rows)  # parts laid out in chunks

    t = _examples(2000, seed=6)
    t = t.append_column("id", pa.array([f"ex{i}" for i in range(t.num_rows)]))
    threshold = Threshold("rougeL", "fmeasure", 0.5)
    t = t.rename_columns([c if c != "passed_rougeL_fmeasure" else threshold.column
                          for c in t.column_names])
    kw = {"metrics": ("rouge1", "rougeL"), "n_bootstrap": n_bootstrap,
          "thresholds": (threshold,)}
    spec = ShareSpec(tuple(value_columns(kw["metrics"], kw["thresholds"])), "id",
                     t.num_rows, n_bootstrap, 9)
    whole = aggregate(t, id_column="id", seed=9, **kw)
    got = aggregate_shares(_shares(t, n_parts, n_parts, spec), **kw)
    assert got is not None and got.equals(whole)


def test_shares_of_a_corpus_metric_with_an_empty_part():
    from pipeline.aggregate import ShareSpec, aggregate_shares

    spec = MetricSpec(name="toy", family="toy", measures=("score",), primary="score",
                      statistics=(("hits", "int64"), ("total", "int64")),
                      reference_rule="max", corpus=_ratio_times_100, scale=100.0)
    rng = np.random.default_rng(2)
    total = rng.integers(1, 30, 500)
    hits = rng.integers(0, total + 1)
    t = pa.table({"id": np.arange(500) * 7, "toy_score": 100.0 * hits / total,
                  "toy_hits": hits, "toy_total": total})
    share = ShareSpec(tuple(value_columns((spec,))), "id", 500, 200, 12345)
    shares = [*_shares(t, 3, 1, share), *_shares(t.slice(0, 0), 1, 0, share)]
    assert shares[-1].sums.n == 0
    got = aggregate_shares(shares, metrics=(spec,), n_bootstrap=200)
    assert got is not None and got.equals(aggregate(t, metrics=(spec,), n_bootstrap=200,
                                                    id_column="id"))


def test_shares_resampled_on_another_grid_are_refused():
    # a part guessing the scope's count 1 puts its values on a finer grid than the scope's
    from pipeline.aggregate import ShareSpec, aggregate_shares

    t = _examples(1000, seed=7).drop_columns(["passed_rougeL_fmeasure"])
    t = t.append_column("id", pa.array([f"ex{i}" for i in range(t.num_rows)]))
    columns = tuple(value_columns(("rouge1", "rougeL")))
    right = _shares(t, 2, 3, ShareSpec(columns, "id", 1000, 100, 1))
    wrong = _shares(t, 2, 3, ShareSpec(columns, "id", 1, 100, 1))
    assert not np.array_equal(right[0].scales, wrong[0].scales)
    kw = {"metrics": ("rouge1", "rougeL"), "n_bootstrap": 100}
    assert aggregate_shares([right[0], wrong[1]], **kw) is None
    assert aggregate_shares(right, **kw).equals(aggregate(t, id_column="id", seed=1, **kw))
