"""Aggregates of per-example scores: means, percentile-bootstrap intervals, pass rates, groups.

Point estimate: the exact mean of the per-example values, ``math.fsum(values) / n`` (a
correctly rounded sum, so the result does not depend on row order or partitioning). This is
not rouge-score's ``BootstrapAggregator`` ``mid``, which is the median of the bootstrap
means.

Interval: percentile bootstrap (Efron & Tibshirani 1993, ch. 13). ``n_bootstrap`` times, draw
n examples with replacement from the n examples of the scope (the whole run, or one group),
and take the mean of every measure over the draw (the same draws for every measure of a
scope); the interval is the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles
of those means (numpy's default linear interpolation).

Random numbers: the resamples are cut into chunks of :data:`RESAMPLES_PER_CHUNK`; chunk ``c``
of a scope draws from ``numpy.random.default_rng([seed, c])`` for the whole run and
``numpy.random.default_rng([seed, *key, c])`` for a group, ``key`` being four 32-bit words of
the SHA-256 of the group's values. So a group's interval depends only on the seed and the
group's own examples, chunks can run anywhere (an engine may spread them over workers) and
the result never depends on where or in which order they ran. Within a chunk, indices are
drawn with ``integers(0, n, dtype=uint32)`` in blocks of at most ``2**22`` and counted by a
compiled kernel, so memory stays bounded.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from pipeline.config import Threshold
from pipeline.errors import InputError
from pipeline.metrics import registry

RESAMPLES_PER_CHUNK = 50
_MAX_DRAWS = 1 << 22

# map_chunks(fn, args_list) -> results in order: how an engine runs the bootstrap chunks.
MapChunks = Callable[[Callable[..., Any], list[tuple[Any, ...]]], list[Any]]


@dataclass(frozen=True)
class _Measure:
    metric: str
    measure: str
    statistic: str
    threshold: float | None
    column: str


@dataclass(frozen=True)
class Scope:
    """A set of examples aggregated together: the whole run or one group.

    Attributes:
        kind: ``all`` or ``group``.
        key: the group's values (None for each group column on ``all``).
        start, stop: the scope's rows in the group-sorted value matrix.
        seed_words: the entropy of the scope's random streams, before the chunk index.

    """

    kind: str
    key: tuple
    start: int
    stop: int
    seed_words: tuple[int, ...]


def _measures(metrics: Sequence[str], thresholds: Sequence[Threshold]) -> list[_Measure]:
    out = [_Measure(m, x, "mean", None, f"{m}_{x}") for m in metrics
           for x in registry.spec(m, {}).measures]
    out += [_Measure(t.metric, t.measure, "pass_rate", t.at, t.column) for t in thresholds]
    return out


def value_columns(metrics: Sequence[str], thresholds: Sequence[Threshold] = ()) -> list[str]:
    """Return the per-example columns an aggregate reads (numeric and bool only)."""
    return [m.column for m in _measures(metrics, thresholds)]


def exact_mean(values: np.ndarray) -> float:
    """Return ``math.fsum(values) / len(values)``: the mean from a correctly rounded sum.

    Args:
        values: float64 array of shape (n,), n >= 1.

    """
    return math.fsum(values.tolist()) / len(values)


@njit(cache=True, nogil=True)
def _resample_sums(values, draws, out, first):  # pragma: no cover - compiled
    # values (m, k) float64; draws (r, m) uint32 in [0, m); out[first + i] = column sums of
    # the rows drawn by draws[i], computed from per-row counts (one pass over values).
    m, k = values.shape
    counts = np.zeros(m, dtype=np.int32)
    for i in range(draws.shape[0]):
        counts[:] = 0
        for j in range(m):
            counts[draws[i, j]] += 1
        for q in range(k):
            out[first + i, q] = 0.0
        for row in range(m):
            c = counts[row]
            if c:
                for q in range(k):
                    out[first + i, q] += c * values[row, q]


def bootstrap_means(values: np.ndarray, *, n_bootstrap: int, rng: np.random.Generator
                    ) -> np.ndarray:
    """Means of every column over ``n_bootstrap`` resamples of the rows, with replacement.

    Args:
        values: float64 array of shape (n, k), n >= 1.
        n_bootstrap: number of resamples, >= 1.
        rng: the random generator, consumed block by block: ``integers(0, n, size=(r, n),
            dtype=uint32)`` with ``r = max(1, min(n_bootstrap, 2**22 // n))`` resamples per
            block (the last block may be smaller).

    Returns:
        float64 array of shape (n_bootstrap, k): row i holds the column means of resample i.

    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    n, k = values.shape
    out = np.empty((n_bootstrap, k), dtype=np.float64)
    block = max(1, min(n_bootstrap, _MAX_DRAWS // n))
    for first in range(0, n_bootstrap, block):
        draws = rng.integers(0, n, size=(min(block, n_bootstrap - first), n), dtype=np.uint32)
        _resample_sums(values, draws, out, first)
    out /= n
    return out


def bootstrap_chunk(values: np.ndarray, scopes: Sequence[Scope], chunk: int,
                    n_resamples: int) -> list[np.ndarray]:
    """One chunk of every scope's bootstrap (a unit of work an engine may run anywhere).

    Args:
        values: the group-sorted value matrix, float64 (n, k).
        scopes: the scopes (see :func:`scopes_of`).
        chunk: the chunk index (part of every random stream's seed).
        n_resamples: resamples in this chunk.

    Returns:
        One float64 array (n_resamples, k) of resample means per scope, in scope order.

    """
    return [bootstrap_means(values[s.start:s.stop], n_bootstrap=n_resamples,
                            rng=np.random.default_rng([*s.seed_words, chunk]))
            for s in scopes]


def _group_words(key: tuple) -> tuple[int, ...]:
    digest = hashlib.sha256(json.dumps(list(key), default=str).encode("utf-8")).digest()
    return tuple(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))


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


def scopes_of(table: pa.Table, *, metrics: Sequence[str], group_by: Sequence[str] = (),
              thresholds: Sequence[Threshold] = (), seed: int = 12345
              ) -> tuple[np.ndarray, list[Scope]]:
    """Arrange per-example values for aggregation.

    Args:
        table: per-example rows with the :func:`value_columns` and ``group_by`` columns.
        metrics: metric names, in output order.
        group_by: the group columns.
        thresholds: pass/fail gates.
        seed: the bootstrap seed.

    Returns:
        The value matrix, float64 (n, k) with one column per measure (bool columns as 0/1),
        in the given row order; when grouped, followed by the same n rows sorted by group
        (stably), so that the ``all`` interval does not depend on the grouping. And the
        scopes: ``all`` first (rows 0..n), then each group in sorted order of its values
        (nulls last).

    Raises:
        InputError: no rows, or a missing column.

    """
    n = table.num_rows
    if n == 0:
        raise InputError("nothing to aggregate: no example was scored")
    measures = _measures(metrics, thresholds)
    matrix = np.empty((n, len(measures)), dtype=np.float64)
    try:
        for j, m in enumerate(measures):
            col = table.column(m.column)
            if pa.types.is_boolean(col.type):
                col = pc.cast(col, pa.float64())
            matrix[:, j] = col.to_numpy()
    except KeyError as e:
        raise InputError(f"per-example table lacks column {e}") from None
    scopes = [Scope("all", tuple(None for _ in group_by), 0, n, (seed,))]
    if group_by:
        codes, keys = _group_codes(table, group_by)
        matrix = np.concatenate([matrix, matrix[np.argsort(codes, kind="stable")]])
        bounds = n + np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(keys)))])
        scopes += [Scope("group", key, int(bounds[g]), int(bounds[g + 1]),
                         (seed, *_group_words(key))) for g, key in enumerate(keys)]
    return matrix, scopes


def _in_process(fn: Callable[..., Any], args_list: list[tuple[Any, ...]]) -> list[Any]:
    return [fn(*args) for args in args_list]


def aggregate(table: pa.Table, *, metrics: Sequence[str], group_by: Sequence[str] = (),
              thresholds: Sequence[Threshold] = (), n_bootstrap: int = 1000,
              confidence: float = 0.95, seed: int = 12345,
              map_chunks: MapChunks | None = None) -> pa.Table:
    """Aggregate per-example scores over the whole run and per group.

    Args:
        table: per-example rows with the columns of :func:`value_columns` (float64
            ``{metric}_{measure}``, bool ``passed_...``) and the ``group_by`` columns.
        metrics: metric names, in output order.
        group_by: columns whose value combinations form groups (none: only ``all`` rows).
        thresholds: pass/fail gates whose pass rates are reported.
        n_bootstrap: resamples per interval (0: no interval).
        confidence: interval level in (0, 1).
        seed: seed of the random streams (see the module docstring).
        map_chunks: runs ``bootstrap_chunk`` over a list of argument tuples and returns the
            results in order (an engine passes one that spreads them over workers); default:
            one after the other in this process. The result does not depend on it.

    Returns:
        The long-format table described in the module docstring; ``all`` rows first, then
        groups in sorted order of their values (nulls last).

    Raises:
        InputError: no rows, or a missing column.

    """
    matrix, scopes = scopes_of(table, metrics=metrics, group_by=group_by,
                               thresholds=thresholds, seed=seed)
    measures = _measures(metrics, thresholds)
    intervals: list[np.ndarray | None] = [None] * len(scopes)
    if n_bootstrap:
        sizes = [min(RESAMPLES_PER_CHUNK, n_bootstrap - first)
                 for first in range(0, n_bootstrap, RESAMPLES_PER_CHUNK)]
        chunks = (map_chunks or _in_process)(
            bootstrap_chunk, [(matrix, scopes, c, size) for c, size in enumerate(sizes)])
        alpha = 1.0 - confidence
        for s in range(len(scopes)):
            boot = np.concatenate([chunk[s] for chunk in chunks])
            intervals[s] = np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)

    out: dict[str, list] = {name: [] for name in
                            ["scope", *group_by, "metric", "measure", "statistic", "threshold",
                             "mean", "ci_low", "ci_high", "n_examples"]}
    for scope, ci in zip(scopes, intervals, strict=True):
        values = matrix[scope.start:scope.stop]
        for j, m in enumerate(measures):
            out["scope"].append(scope.kind)
            for name, v in zip(group_by, scope.key, strict=True):
                out[name].append(v)
            out["metric"].append(m.metric)
            out["measure"].append(m.measure)
            out["statistic"].append(m.statistic)
            out["threshold"].append(m.threshold)
            out["mean"].append(exact_mean(values[:, j]))
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


__all__ = ["RESAMPLES_PER_CHUNK", "Scope", "aggregate", "bootstrap_chunk", "bootstrap_means",
           "exact_mean", "scopes_of", "value_columns"]
