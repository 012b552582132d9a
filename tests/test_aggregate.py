"""Aggregates: exact means, the seeded percentile bootstrap, groups and pass rates."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.aggregate import aggregate, bootstrap_means, exact_mean, value_columns
from pipeline.config import Threshold
from pipeline.errors import InputError

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


def test_bootstrap_matches_a_plain_implementation():
    rng_values = np.random.default_rng(1).random((300, 4))
    got = bootstrap_means(rng_values, n_bootstrap=500, rng=np.random.default_rng(42))
    # 500 x 300 draws fit in one block: the same draws as one integers() call.
    idx = np.random.default_rng(42).integers(0, 300, size=(500, 300), dtype=np.uint32)
    want = rng_values[idx].mean(axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_bootstrap_in_chunks_is_bounded_and_deterministic():
    values = np.random.default_rng(2).random((5000, 3))
    a = bootstrap_means(values, n_bootstrap=1200, rng=np.random.default_rng(5))
    b = bootstrap_means(values, n_bootstrap=1200, rng=np.random.default_rng(5))
    assert a.shape == (1200, 3)
    assert np.array_equal(a, b)
    # Resample means scatter around the mean with the standard error of the mean.
    se = values.std(axis=0) / math.sqrt(len(values))
    np.testing.assert_allclose(a.std(axis=0), se, rtol=0.1)


def test_interval_is_the_percentile_of_the_bootstrap_means():
    t = _examples(400)
    agg = aggregate(t, metrics=("rouge1", "rougeL"), n_bootstrap=300, confidence=0.9, seed=11)
    measures = [f"{m}_{x}" for m in ("rouge1", "rougeL") for x in MEASURES]
    values = np.column_stack([t.column(c).to_numpy() for c in measures])
    # Chunks of 50 resamples, chunk c drawn from default_rng([seed, c]).
    boot = np.concatenate([
        values[np.random.default_rng([11, c]).integers(0, 400, size=(50, 400),
                                                        dtype=np.uint32)].mean(axis=1)
        for c in range(6)])
    low, high = np.quantile(boot, [0.05, 0.95], axis=0)
    for j, r in enumerate(_rows(agg, scope="all", statistic="mean")):
        assert r["ci_low"] == pytest.approx(low[j], rel=1e-12)
        assert r["ci_high"] == pytest.approx(high[j], rel=1e-12)
        assert r["ci_low"] < r["mean"] < r["ci_high"]


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
    agg = aggregate(t, metrics=("rouge1", "rougeL"), group_by=("system",), n_bootstrap=100)
    assert [r["system"] for r in _rows(agg, metric="rouge1", measure="recall")] \
        == [None, "a", "b", "c"]
    without_c = t.filter(pa.compute.not_equal(t.column("system"), "c"))
    agg2 = aggregate(without_c, metrics=("rouge1", "rougeL"), group_by=("system",),
                     n_bootstrap=100)
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
        assert r["ci_low"] == r["mean"] == r["ci_high"]


def test_where_and_in_which_order_chunks_run_does_not_matter():
    t = _examples(300)

    def backwards(fn, args_list):
        return [fn(*args) for args in reversed(args_list)][::-1]

    a = aggregate(t, metrics=("rouge1",), group_by=("system",), n_bootstrap=230)
    b = aggregate(t, metrics=("rouge1",), group_by=("system",), n_bootstrap=230,
                  map_chunks=backwards)
    assert a.equals(b)
