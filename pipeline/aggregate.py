"""Aggregates of per-example scores: means, percentile-bootstrap intervals, pass rates, groups.

Point estimate: the exact mean of the per-example values, ``math.fsum(values) / n`` (a
correctly rounded sum, so the result does not depend on row order or partitioning). This is
not rouge-score's ``BootstrapAggregator`` ``mid``, which is the median of the bootstrap
means.

Interval: percentile bootstrap (Efron & Tibshirani 1993, ch. 13). ``n_bootstrap`` times, draw
n examples with replacement from the n examples of the group, and take the mean of every
measure over the draw (the same draws for every measure of a group); the interval is the
``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of those means (numpy's
default linear interpolation). Random numbers: ``numpy.random.default_rng(seed)`` for the
whole run (scope ``all``) and ``numpy.random.default_rng([seed, *key])`` for a group, ``key``
being four 32-bit words of the SHA-256 of the group's values, so a group's interval depends
only on the seed and the group's own examples. Draws are made in chunks (at most
``2**22`` indices at a time) so memory stays bounded.

Output (long format, one row per scope/group, metric, measure and statistic):
``scope`` (``all`` or ``group``), the group-by columns (null on ``all`` rows), ``metric``,
``measure`` (``precision``, ``recall``, ``fmeasure``), ``statistic`` (``mean``, or
``pass_rate`` for a threshold), ``threshold`` (the gate for pass rates, else null),
``mean`` (the mean, or the fraction of examples that passed), ``ci_low``, ``ci_high`` (null
when ``n_bootstrap`` is 0), ``n_examples``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.config import Threshold
from pipeline.errors import InputError
from pipeline.scoring import MEASURES

_MAX_DRAWS = 1 << 22


@dataclass(frozen=True)
class _Measure:
    metric: str
    measure: str
    statistic: str
    threshold: float | None
    column: str


def _measures(metrics: Sequence[str], thresholds: Sequence[Threshold]) -> list[_Measure]:
    out = [_Measure(m, x, "mean", None, f"{m}_{x}") for m in metrics for x in MEASURES]
    out += [_Measure(t.metric, t.measure, "pass_rate", t.at, t.column) for t in thresholds]
    return out


def value_columns(metrics: Sequence[str], thresholds: Sequence[Threshold] = ()) -> list[str]:
    """Return the per-example columns an aggregate reads (numeric and bool only)."""
    return [m.column for m in _measures(metrics, thresholds)]


def exact_mean(values: np.ndarray) -> float:
    """``math.fsum(values) / len(values)``: the mean from a correctly rounded sum.

    Args:
        values: float64 array of shape (n,), n >= 1.

    """
    return math.fsum(values.tolist()) / len(values)


def bootstrap_means(values: np.ndarray, *, n_bootstrap: int, rng: np.random.Generator
                    ) -> np.ndarray:
    """Means of every column over ``n_bootstrap`` resamples of the rows, with replacement.

    Args:
        values: float64 array of shape (n, k), n >= 1.
        n_bootstrap: number of resamples, >= 1.
        rng: the random generator (consumed in resample order, chunk by chunk).

    Returns:
        float64 array of shape (n_bootstrap, k): row r holds the column means of resample r.

    """
    n, k = values.shape
    out = np.empty((n_bootstrap, k), dtype=np.float64)
    chunk = max(1, min(n_bootstrap, _MAX_DRAWS // n))
    for start in range(0, n_bootstrap, chunk):
        b = min(chunk, n_bootstrap - start)
        draws = rng.integers(0, n, size=(b, n))
        draws += (np.arange(b) * n)[:, None]
        counts = np.bincount(draws.ravel(), minlength=b * n).reshape(b, n)
        out[start:start + b] = (counts.astype(np.float64) @ values) / n
    return out


def _group_seed(seed: int, key: tuple) -> list[int]:
    digest = hashlib.sha256(json.dumps(list(key), default=str).encode("utf-8")).digest()
    return [seed] + [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]


def _summarize(values: np.ndarray, *, n_bootstrap: int, confidence: float,
               rng: np.random.Generator) -> tuple[list[float], np.ndarray | None]:
    means = [exact_mean(values[:, j]) for j in range(values.shape[1])]
    if not n_bootstrap:
        return means, None
    boot = bootstrap_means(values, n_bootstrap=n_bootstrap, rng=rng)
    alpha = 1.0 - confidence
    return means, np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)


def _group_codes(table: pa.Table, group_by: Sequence[str]) -> tuple[np.ndarray, list[tuple]]:
    """Each row's group number and the groups' values, groups sorted by value (nulls last)."""
    codes = []
    dictionaries = []
    for name in group_by:
        enc = pc.dictionary_encode(table.column(name).combine_chunks(), null_encoding="encode")
        codes.append(np.asarray(enc.indices, dtype=np.int64))
        dictionaries.append(enc.dictionary.to_pylist())
    stacked = np.stack(codes, axis=1)
    uniq, inverse = np.unique(stacked, axis=0, return_inverse=True)
    keys = [tuple(dictionaries[c][i] for c, i in enumerate(row)) for row in uniq]
    order = sorted(range(len(keys)),
                   key=lambda g: tuple((v is None, v if v is not None else 0) for v in keys[g]))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse.ravel()], [keys[g] for g in order]


def aggregate(table: pa.Table, *, metrics: Sequence[str], group_by: Sequence[str] = (),
              thresholds: Sequence[Threshold] = (), n_bootstrap: int = 1000,
              confidence: float = 0.95, seed: int = 12345) -> pa.Table:
    """Aggregate per-example scores over the whole run and per group.

    Args:
        table: per-example rows with the columns of :func:`value_columns` (float64
            ``{metric}_{measure}``, bool ``passed_...``) and the ``group_by`` columns.
        metrics: metric names, in output order.
        group_by: columns whose value combinations form groups (none: only ``all`` rows).
        thresholds: pass/fail gates whose pass rates are reported.
        n_bootstrap: resamples per interval (0: no interval).
        confidence: interval level in (0, 1).
        seed: seed of the random generator.

    Returns:
        The long-format table described in the module docstring; ``all`` rows first, then
        groups in sorted order of their values (nulls last).

    Raises:
        InputError: no rows, or a missing column.

    """
    n = table.num_rows
    if n == 0:
        raise InputError("nothing to aggregate: no example was scored")
    measures = _measures(metrics, thresholds)
    try:
        matrix = np.empty((n, len(measures)), dtype=np.float64)
        for j, m in enumerate(measures):
            col = table.column(m.column)
            if pa.types.is_boolean(col.type):
                col = pc.cast(col, pa.float64())
            matrix[:, j] = col.to_numpy()
    except KeyError as e:
        raise InputError(f"per-example table lacks column {e}") from None
    scopes: list[tuple[str, tuple, np.ndarray, np.random.Generator]] = [
        ("all", tuple(None for _ in group_by), matrix, np.random.default_rng(seed))]
    if group_by:
        codes, keys = _group_codes(table, group_by)
        order = np.argsort(codes, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(keys)))])
        for g, key in enumerate(keys):
            rows = matrix[order[bounds[g]:bounds[g + 1]]]
            scopes.append(("group", key, rows,
                           np.random.default_rng(_group_seed(seed, key))))

    out: dict[str, list] = {name: [] for name in
                            ["scope", *group_by, "metric", "measure", "statistic", "threshold",
                             "mean", "ci_low", "ci_high", "n_examples"]}
    for scope, key, values, rng in scopes:
        means, ci = _summarize(values, n_bootstrap=n_bootstrap, confidence=confidence, rng=rng)
        for j, m in enumerate(measures):
            out["scope"].append(scope)
            for name, v in zip(group_by, key, strict=True):
                out[name].append(v)
            out["metric"].append(m.metric)
            out["measure"].append(m.measure)
            out["statistic"].append(m.statistic)
            out["threshold"].append(m.threshold)
            out["mean"].append(means[j])
            out["ci_low"].append(None if ci is None else float(ci[0, j]))
            out["ci_high"].append(None if ci is None else float(ci[1, j]))
            out["n_examples"].append(len(values))
    fields = [pa.field("scope", pa.string())]
    fields += [pa.field(name, table.schema.field(name).type) for name in group_by]
    fields += [pa.field("metric", pa.string()), pa.field("measure", pa.string()),
               pa.field("statistic", pa.string()), pa.field("threshold", pa.float64()),
               pa.field("mean", pa.float64()), pa.field("ci_low", pa.float64()),
               pa.field("ci_high", pa.float64()), pa.field("n_examples", pa.int64())]
    schema = pa.schema(fields)
    return pa.table({f.name: pa.array(out[f.name], f.type) for f in schema}, schema=schema)


__all__ = ["aggregate", "bootstrap_means", "exact_mean", "value_columns"]
