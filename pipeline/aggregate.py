"""Aggregates of per-example rows: means, corpus scores, pass rates, groups and intervals.

What is reported comes from the metric registry (:func:`pipeline.metrics.registry.specs`):
for every metric, a ``mean`` row per per-example measure (``precision``, ``recall``,
``fmeasure`` for ROUGE; ``score`` for BLEU...), and for a corpus metric (a spec with
``corpus``) one more row, ``measure = spec.primary`` and ``statistic = corpus``: the corpus
function of the summed per-example statistics (sacrebleu's ``corpus_bleu`` is not the mean of
sentence BLEU). Thresholds add ``pass_rate`` rows.

Point estimates: a mean is ``math.fsum(values) / n`` (correctly rounded: the same whatever the
row order or partitioning; not rouge-score's ``BootstrapAggregator`` ``mid``, a median of
bootstrap means); a corpus value is the function of the correctly rounded column sums.

Interval: percentile interval of a Poisson bootstrap (:mod:`pipeline.stats`): ``n_bootstrap``
resamples give each example a Poisson(1) weight drawn from the seed and the example's id
(its position when no id column is given), and recompute every value of the scope from the
weighted sums: ``sum(w x) / sum(w)`` for a mean, ``f(sum(w s))`` for a corpus score (for a
spec with ``corpus_sized``, BLEU, ``f(sum(w s) x n / sum(w))``: see
:func:`pipeline.stats.evaluate`). All values
of a scope share the resamples. An example has the same weights in the whole run and in its
group, so the ``all`` interval does not depend on the grouping, and a group's interval only on
its own examples; sums are exact, so nothing depends on row order, partitioning, chunking or
where the chunks ran (an engine may spread chunks of resamples over workers).

Output (long format, one row per scope/group, metric, measure and statistic):
``scope`` (``all`` or ``group``), the group-by columns (null on ``all`` rows), ``metric``,
``measure``, ``statistic`` (``mean``, ``corpus``, or ``pass_rate`` for a threshold),
``threshold`` (the gate for pass rates, else null), ``mean`` (the value of the statistic: the
mean, the corpus score or the fraction of examples that passed), ``ci_low``, ``ci_high`` (null
when ``n_bootstrap`` is 0 or no resample had an example), ``n_examples``; then, for each
requested corpus metric whose spec declares a breakdown (``MetricSpec.breakdown_columns``),
its columns ``{metric}_{part}`` (BLEU: ``bleu_precision_1`` .. ``bleu_precision_4``,
``bleu_bp``, ``bleu_ratio``, ``bleu_sys_len``, ``bleu_ref_len``, as sacrebleu's
``BLEUScore``), computed from the scope's exact statistic sums and filled on that metric's
``corpus`` rows only (null elsewhere; no interval).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline import stats
from pipeline.arrays import from_pylist, scalar, to_numpy
from pipeline.errors import InputError
from pipeline.machine import usable_cpus
from pipeline.metrics.base import MetricSpec
from pipeline.metrics.registry import specs as registry_specs
from pipeline.scoring import Threshold
from pipeline.stats import Estimate, exact_mean

RESAMPLES_PER_CHUNK = 252
# Bytes of resampled sums and replicates alive at once in the bootstrap (scopes are done in
# blocks of about this size): without a bound, 100,000 groups x 1,000 resamples took 11.6 GB.
SUMS_BLOCK_BYTES = 256 << 20

# map_chunks(fn, args_list) -> results in order: how an engine runs the bootstrap chunks.
MapChunks = Callable[[Callable[..., Any], list[tuple[Any, ...]]], list[Any]]


@dataclass(frozen=True)
class _Row:
    metric: str
    measure: str
    statistic: str
    threshold: float | None
    estimate: Estimate
    spec: MetricSpec | None = None  # a corpus row whose spec has a breakdown


@dataclass(frozen=True)
class Scope:
    """A set of examples aggregated together: the whole run or one group.

    Attributes:
        kind: ``all`` or ``group``.
        key: the group's values (None for each group column on ``all``).
        start, stop: the scope's rows in the scope-ordered arrays of :func:`scopes_of`.

    """

    kind: str
    key: tuple
    start: int
    stop: int


def resolve_specs(metrics: Sequence[str | MetricSpec], options: Mapping[str, Any] | None = None
                  ) -> tuple[MetricSpec, ...]:
    """Specs of ``metrics`` (names go through the registry; specs are kept as given)."""
    names = [m for m in metrics if isinstance(m, str)]
    found = iter(registry_specs(names, options or {}))
    return tuple(next(found) if isinstance(m, str) else m for m in metrics)


def _layout(specs: Sequence[MetricSpec], thresholds: Sequence[Threshold]
            ) -> tuple[list[str], list[_Row]]:
    columns: list[str] = []

    def col(name: str) -> int:
        if name not in columns:
            columns.append(name)
        return columns.index(name)

    rows = []
    for s in specs:
        for measure, name in zip(s.measures, s.measure_columns, strict=True):
            rows.append(_Row(s.name, measure, "mean", None, Estimate((col(name),))))
        if s.corpus is not None:
            rows.append(_Row(s.name, s.primary, "corpus", None,
                             Estimate(tuple(col(c) for c in s.statistic_columns), s.corpus,
                                      s.corpus_sized),
                             s if s.breakdown is not None else None))
    for t in thresholds:
        rows.append(_Row(t.metric, t.measure, "pass_rate", t.at, Estimate((col(t.column),))))
    return columns, rows


def value_columns(metrics: Sequence[str | MetricSpec], thresholds: Sequence[Threshold] = (),
                  options: Mapping[str, Any] | None = None) -> list[str]:
    """Return the per-example columns an aggregate reads (numeric and bool only)."""
    return _layout(resolve_specs(metrics, options), thresholds)[0]


def bootstrap_bytes(metrics: Sequence[str | MetricSpec], thresholds: Sequence[Threshold] = (),
                    options: Mapping[str, Any] | None = None) -> int:
    """Bytes an aggregate holds per bootstrap resample at least (for one scope).

    A scope's resampled sums (one float64 per value column and the weights' total), their
    evaluation (one per output row) and the percentile's sorted copy of it, all alive at
    once: ``8 * (columns + 1 + 2 * rows)``. Used to refuse a ``bootstrap`` no machine can
    hold before a run starts (:func:`pipeline.machine.check_fits`).
    """
    columns, rows = _layout(resolve_specs(metrics, options), thresholds)
    return 8 * (len(columns) + 1 + 2 * len(rows))


def _sort_key(value: Any) -> tuple:
    # regular values in order, then NaN, then null: three distinct groups
    if value is None:
        return (2, 0)
    if isinstance(value, float) and math.isnan(value):
        return (1, 0)
    return (0, value)


def _group_codes(table: pa.Table, group_by: Sequence[str]) -> tuple[np.ndarray, list[tuple]]:
    """Each row's group number and the groups' values, sorted by value (NaN, then null last).

    NaN and null are distinct groups (and distinct from every other value).
    """
    codes = []
    dictionaries = []
    for name in group_by:
        column = table.column(name).combine_chunks()
        enc = pc.dictionary_encode(column, null_encoding="encode")
        values = enc.dictionary.to_pylist()
        indices = to_numpy(enc.indices, np.int64)
        # dictionary_encode may fold every NaN into one entry or keep several: merge them
        nan_at = [i for i, v in enumerate(values) if isinstance(v, float) and math.isnan(v)]
        if len(nan_at) > 1:
            remap = np.arange(len(values))
            remap[nan_at] = nan_at[0]
            indices = remap[indices]
        codes.append(indices)
        dictionaries.append(values)
    stacked = np.stack(codes, axis=1)
    uniq, inverse = np.unique(stacked, axis=0, return_inverse=True)
    keys = [tuple(dictionaries[c][i] for c, i in enumerate(row)) for row in uniq]
    order = sorted(range(len(keys)), key=lambda g: tuple(_sort_key(v) for v in keys[g]))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse.ravel()], [keys[g] for g in order]


@dataclass(frozen=True)
class Prepared:
    """Per-example values laid out for aggregation (see :func:`scopes_of`).

    Attributes:
        values: float64 (n, k): the value columns in the given row order, then (when
            grouped) the same rows ordered by group.
        hashes: uint64 (len(values),): each row's identity hash, in the same order.
        scopes: ``all`` (rows 0..n), then each group in sorted order of its values.
        group_types: the Arrow type of each group column.

    """

    values: np.ndarray
    hashes: np.ndarray
    scopes: list[Scope]
    group_types: tuple[pa.DataType, ...] = ()


def scopes_of(table: pa.Table, *, columns: Sequence[str], group_by: Sequence[str] = (),
              id_column: str | None = None) -> Prepared:
    """Arrange per-example values for aggregation.

    Args:
        table: per-example rows with ``columns``, ``group_by`` and ``id_column``.
        columns: the value columns (numeric or bool; bool as 0/1).
        group_by: the group columns.
        id_column: the example id (its hash keys the random weights); None: the row position.

    Returns:
        A :class:`Prepared`.

    Raises:
        InputError: no rows, a missing column, or null ids.

    """
    from pipeline.io.partition import hash_ids

    n = table.num_rows
    if n == 0:
        raise InputError("nothing to aggregate: no example was scored")
    matrix = np.empty((n, len(columns)), dtype=np.float64)
    try:
        for j, name in enumerate(columns):
            col = table.column(name)
            if pa.types.is_boolean(col.type):
                col = pc.cast(col, pa.float64())
            matrix[:, j] = to_numpy(col)
        if id_column is None:
            hashes = stats.position_hashes(n)
        else:
            hashes = hash_ids(table.column(id_column))
    except KeyError as e:
        raise InputError(f"per-example table lacks column {e}") from None
    except TypeError as e:
        raise InputError(f"cannot aggregate by id column {id_column!r}: {e}") from None
    scopes = [Scope("all", tuple(None for _ in group_by), 0, n)]
    if group_by:
        codes, keys = _group_codes(table, group_by)
        order = np.argsort(codes, kind="stable")
        matrix = np.concatenate([matrix, matrix[order]])
        hashes = np.concatenate([hashes, hashes[order]])
        bounds = n + np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(keys)))])
        scopes += [Scope("group", key, int(bounds[g]), int(bounds[g + 1]))
                   for g, key in enumerate(keys)]
    return Prepared(matrix, hashes, scopes,
                    tuple(table.schema.field(name).type for name in group_by))


def grids_of(prepared: Prepared, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each scope's exact-sum grid and stream keys, flattened for shipping to workers.

    Returns:
        ``(grid, keys)``: float64 of length ``k * rows``, the scopes' ``(k, rows)`` grids of
        :func:`pipeline.stats.to_grid` one after the other; uint64 (rows,) stream keys.

    """
    k = prepared.values.shape[1]
    grid = np.empty(k * len(prepared.values))
    for s in prepared.scopes:
        stats.to_grid(prepared.values[s.start:s.stop], max_weight=stats.MAX_WEIGHT["poisson"],
                      out=grid[k * s.start:k * s.stop].reshape(k, s.stop - s.start))
    keys = stats.stream_keys(prepared.hashes, seed=seed, weights="poisson")
    return grid, keys


def bootstrap_chunk(grid: np.ndarray, keys: np.ndarray, bounds: Sequence[tuple[int, int]],
                    first: int, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """One chunk of resamples of every scope (a unit of work an engine may run anywhere).

    Args:
        grid: the flattened grids of :func:`grids_of`.
        keys: the stream keys of :func:`grids_of`.
        bounds: each scope's ``(start, stop)`` rows.
        first: the chunk's first resample (a multiple of 4).
        count: resamples in this chunk.

    Returns:
        Per scope, ``(sums, totals)`` of :func:`pipeline.stats.resample_sums`.

    """
    k = len(grid) // len(keys)
    return [stats.resample_sums(grid[k * a:k * b].reshape(k, b - a), keys[a:b],
                                weights="poisson", first=first, count=count)
            for a, b in bounds]


def _threads(fn: Callable[..., Any], args_list: list[tuple[Any, ...]]) -> list[Any]:
    cpus = usable_cpus()
    if cpus <= 1 or len(args_list) <= 1:
        return [fn(*args) for args in args_list]
    with ThreadPoolExecutor(max_workers=min(cpus, len(args_list))) as pool:
        return list(pool.map(lambda args: fn(*args), args_list))


def aggregate(table: pa.Table | Callable[[list[str]], pa.Table], *,
              metrics: Sequence[str | MetricSpec],
              group_by: Sequence[str] = (), thresholds: Sequence[Threshold] = (),
              n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 12345,
              map_chunks: MapChunks | None = None, id_column: str | None = None,
              options: Mapping[str, Any] | None = None) -> pa.Table:
    """Aggregate per-example rows over the whole run and per group.

    Args:
        table: per-example rows with the columns of :func:`value_columns` (float64
            ``{metric}_{measure}``, the statistics of corpus metrics, bool ``passed_...``),
            the ``group_by`` columns and ``id_column``; or a function that reads those
            columns (given their names) into such a table: it is then freed as soon as its
            values are laid out, so the driver never holds the table and the matrix of
            values and the bootstrap's grid at once.
        metrics: metric names (resolved by the registry under ``options``) or specs, in
            output order.
        group_by: columns whose value combinations form groups (none: only ``all`` rows);
            null and NaN are groups of their own.
        thresholds: pass/fail gates whose pass rates are reported.
        n_bootstrap: resamples per interval (0: no interval).
        confidence: interval level in (0, 1).
        seed: seed of the random streams, in [0, 2**64).
        map_chunks: runs ``bootstrap_chunk`` over a list of argument tuples and returns the
            results in order (an engine passes one that spreads them over workers); default:
            threads of this process. The result does not depend on it.
        id_column: the example id, which keys each example's random weights (default: the
            row position, so the intervals then depend on the row order).
        options: the flat scoring options, for the registry.

    Returns:
        The long-format table described in the module docstring; ``all`` rows first, then
        groups in sorted order of their values (NaN, then null, last).

    Raises:
        InputError: no rows, or a missing column.
        ConfigError: an unknown metric name.

    """
    specs = resolve_specs(metrics, options)
    columns, rows = _layout(specs, thresholds)
    # A reader is called here, so that its table is freed once its values are laid out.
    needed = list(dict.fromkeys([*([id_column] if id_column else []), *group_by, *columns]))
    prepared = scopes_of(table(needed) if callable(table) else table, columns=columns,
                         group_by=group_by, id_column=id_column)
    pa.default_memory_pool().release_unused()
    scopes = prepared.scopes
    estimates = [r.estimate for r in rows]
    intervals: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(scopes)
    if n_bootstrap:
        grid, keys = grids_of(prepared, seed=seed)
        chunks = [(first, min(RESAMPLES_PER_CHUNK, n_bootstrap - first))
                  for first in range(0, n_bootstrap, RESAMPLES_PER_CHUNK)]
        # Scopes in blocks: only one block's resampled sums are alive at once, so the memory
        # does not grow with the number of groups (each scope is computed alone: the same
        # values whatever the blocks).
        per_scope = n_bootstrap * (prepared.values.shape[1] + 1 + len(rows)) * 8
        block = max(1, SUMS_BLOCK_BYTES // per_scope)
        for b0 in range(0, len(scopes), block):
            bounds = [(s.start, s.stop) for s in scopes[b0:b0 + block]]
            results = (map_chunks or _threads)(
                bootstrap_chunk,
                [(grid, keys, bounds, first, count) for first, count in chunks])
            for s in range(len(bounds)):
                sums = np.concatenate([r[s][0] for r in results])
                totals = np.concatenate([r[s][1] for r in results])
                stop, start = bounds[s][1], bounds[s][0]
                intervals[b0 + s] = stats.percentile_interval(
                    stats.evaluate(estimates, sums, totals, size=stop - start), confidence)
            del results

    used = sorted({c for e in estimates for c in e.columns})
    out = []
    for scope, ci in zip(scopes, intervals, strict=True):
        # stats.point_estimates, keeping the exact sums for the breakdowns
        n = scope.stop - scope.start
        sums = np.zeros((1, prepared.values.shape[1]))
        sums[0, used] = stats.exact_sums(prepared.values[scope.start:scope.stop, used])
        out.append((scope.kind, scope.key, n,
                    stats.evaluate(estimates, sums, np.array([float(n)]))[0], ci, sums[0]))
    return _output(out, rows, group_by, prepared.group_types)


def _breakdowns(scopes: Sequence[tuple[Any, ...]], rows: Sequence[_Row]
                ) -> tuple[list[pa.Field], dict[tuple[int, str], np.ndarray]]:
    """The breakdown columns, and per (row, column) its values over the scopes in order."""
    fields: list[pa.Field] = []
    values: dict[tuple[int, str], np.ndarray] = {}
    for j, r in enumerate(rows):
        if r.spec is None or r.spec.breakdown is None:
            continue
        summed = np.array([sc[5][list(r.estimate.columns)] for sc in scopes])
        parts = r.spec.breakdown(summed.reshape(len(scopes), len(r.estimate.columns)))
        for (name, type_name), (part, _) in zip(r.spec.breakdown_fields,
                                                r.spec.breakdown_columns, strict=True):
            if name not in {f.name for f in fields}:
                fields.append(pa.field(name, pa.type_for_alias(type_name)))
            values[(j, name)] = np.asarray(parts[part])
    return fields, values


def _output(scopes: Sequence[tuple[str, tuple, int, np.ndarray,
                                   tuple[np.ndarray, np.ndarray] | None, np.ndarray]],
            rows: Sequence[_Row], group_by: Sequence[str],
            group_types: Sequence[pa.DataType]) -> pa.Table:
    """The long-format table from each scope's ``(kind, key, n, values, interval, sums)``.

    ``sums`` holds the exact column sums a breakdown reads (other entries unused).
    """
    extra, parts = _breakdowns(scopes, rows)
    out: dict[str, list] = {name: [] for name in
                            ["scope", *group_by, "metric", "measure", "statistic", "threshold",
                             "mean", "ci_low", "ci_high", "n_examples",
                             *(f.name for f in extra)]}
    for s, (kind, key, n, means, ci, _) in enumerate(scopes):
        for j, r in enumerate(rows):
            out["scope"].append(kind)
            for name, v in zip(group_by, key, strict=True):
                out[name].append(v)
            out["metric"].append(r.metric)
            out["measure"].append(r.measure)
            out["statistic"].append(r.statistic)
            out["threshold"].append(r.threshold)
            out["mean"].append(float(means[j]))
            low = None if ci is None or np.isnan(ci[0][j]) else float(ci[0][j])
            high = None if ci is None or np.isnan(ci[1][j]) else float(ci[1][j])
            out["ci_low"].append(low)
            out["ci_high"].append(high)
            out["n_examples"].append(n)
            for f in extra:
                part = parts.get((j, f.name))
                out[f.name].append(None if part is None else part[s].item())
    fields = [pa.field("scope", pa.string())]
    fields += [pa.field(name, t) for name, t in zip(group_by, group_types, strict=True)]
    fields += [pa.field("metric", pa.string()), pa.field("measure", pa.string()),
               pa.field("statistic", pa.string()), pa.field("threshold", pa.float64()),
               pa.field("mean", pa.float64()), pa.field("ci_low", pa.float64()),
               pa.field("ci_high", pa.float64()), pa.field("n_examples", pa.int64()),
               *extra]
    schema = pa.schema(fields)
    return pa.table({f.name: from_pylist(out[f.name], f.type) for f in schema}, schema=schema)


# ---------------------------------------------------------------------------------------
# Mergeable aggregation: every partition's examples file gives sums, the caller only adds.
# (TFMA's combiners: create, add, merge, extract.) Same table as aggregate(), bit for bit.

# map_parts(fn, args_list) -> results in order: how an engine runs one task per part.
MapParts = Callable[[Callable[..., Any], list[tuple[Any, ...]]], list[Any]]


def _merge_key(kind: str, key: tuple) -> tuple:
    """A scope's key for merging across parts: NaN (never equal to itself) made one value."""
    return (kind, *(("nan",) if isinstance(v, float) and math.isnan(v) else ("v", v)
                    for v in key))


@dataclass
class ScopeSums:
    """One scope's sufficient statistics over some parts (mergeable by :meth:`merge`).

    Attributes:
        kind: ``all`` or ``group``.
        key: the group's values (None for each group column on ``all``).
        n: examples.
        max_abs: float64 (k,), each value column's largest absolute value (fixes the
            scope's exact-summation grid: :func:`pipeline.stats.grid_scales`).
        partials: per value column, floats whose exact sum is the column's exact sum
            (:func:`pipeline.stats.exact_partials`).
        parts: the parts (positions in the caller's list) holding examples of the scope.

    """

    kind: str
    key: tuple
    n: int
    max_abs: np.ndarray
    partials: list[list[float]]
    parts: list[int]

    def merge(self, other: ScopeSums) -> None:
        """Add another part's statistics of the same scope."""
        self.n += other.n
        self.max_abs = np.maximum(self.max_abs, other.max_abs)
        stats.merge_partials(self.partials, other.partials)
        self.parts.extend(other.parts)

    def sums(self) -> np.ndarray:
        """float64 (k,): each column's correctly rounded sum (``math.fsum`` of all values)."""
        return np.array([math.fsum(p) for p in self.partials])


def part_sums(table: pa.Table, *, part: int, columns: Sequence[str],
              group_by: Sequence[str] = (), id_column: str | None = None
              ) -> tuple[dict[tuple, ScopeSums], tuple[pa.DataType, ...]]:
    """One part's :class:`ScopeSums` of every scope it holds (``all`` and its groups).

    Args:
        table: the part's examples (value, group and id columns), >= 1 row.
        part: the part's position (recorded in ``ScopeSums.parts``).
        columns: the value columns (see :func:`value_columns`).
        group_by: the group columns.
        id_column: the example id.

    Returns:
        The scopes by merge key, and the Arrow types of the group columns.

    """
    prepared = scopes_of(table, columns=columns, group_by=group_by, id_column=id_column)
    out = {}
    for scope in prepared.scopes:
        values = prepared.values[scope.start:scope.stop]
        out[_merge_key(scope.kind, scope.key)] = ScopeSums(
            scope.kind, scope.key, scope.stop - scope.start, stats.column_max_abs(values),
            [stats.exact_partials(values[:, q]) for q in range(values.shape[1])], [part])
    return out, prepared.group_types


def part_resamples(table: pa.Table, *, columns: Sequence[str], group_by: Sequence[str],
                   id_column: str | None, scales: Mapping[tuple, np.ndarray], n_bootstrap: int,
                   seed: int) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
    """One part's share of the bootstrap of the scopes in ``scales``.

    Each example's Poisson weights come from the seed and its id, and its values are put on
    its scope's grid (``scales``, from the whole scope), so the sums of the parts add up,
    exactly, to the sums over the whole scope.

    Args:
        table: the part's examples.
        columns: the value columns.
        group_by: the group columns.
        id_column: the example id.
        scales: by merge key, the scopes wanted and each one's grid scales (k,).
        n_bootstrap: resamples.
        seed: the seed.

    Returns:
        By merge key (scopes of ``scales`` the part holds): ``(sums, totals)``, float64
        (n_bootstrap, k) and (n_bootstrap,), exact.

    """
    prepared = scopes_of(table, columns=columns, group_by=group_by, id_column=id_column)
    keys = stats.stream_keys(prepared.hashes, seed=seed, weights="poisson")
    out = {}
    for scope in prepared.scopes:
        mk = _merge_key(scope.kind, scope.key)
        if mk not in scales:
            continue
        grid = stats.to_grid(prepared.values[scope.start:scope.stop],
                             max_weight=stats.MAX_WEIGHT["poisson"], scales=scales[mk])
        out[mk] = stats.resample_sums(grid, keys[scope.start:scope.stop], weights="poisson",
                                      first=0, count=n_bootstrap)
    return out


def read_part(uri: str, columns: Sequence[str]) -> pa.Table:
    """Read some columns of one examples file (never the text)."""
    from pipeline.io.files import locate
    from pipeline.io.read import read_columns

    return read_columns([locate(uri)], columns)


def part_sums_of_file(uri: str, part: int, columns: Sequence[str], group_by: Sequence[str],
                      id_column: str | None
                      ) -> tuple[dict[tuple, ScopeSums], tuple[pa.DataType, ...]]:
    """:func:`part_sums` of an examples file (a task)."""
    needed = list(dict.fromkeys([*([id_column] if id_column else []), *group_by, *columns]))
    return part_sums(read_part(uri, needed), part=part, columns=columns, group_by=group_by,
                     id_column=id_column)


def part_resamples_of_file(uri: str, columns: Sequence[str], group_by: Sequence[str],
                           id_column: str | None, scales: Mapping[tuple, np.ndarray],
                           n_bootstrap: int, seed: int
                           ) -> dict[tuple, tuple[np.ndarray, np.ndarray]]:
    """:func:`part_resamples` of an examples file (a task)."""
    needed = list(dict.fromkeys([*([id_column] if id_column else []), *group_by, *columns]))
    return part_resamples(read_part(uri, needed), columns=columns, group_by=group_by,
                          id_column=id_column, scales=scales, n_bootstrap=n_bootstrap,
                          seed=seed)


def _serial(fn: Callable[..., Any], args_list: list[tuple[Any, ...]]) -> list[Any]:
    return [fn(*args) for args in args_list]


def aggregate_parts(uris: Sequence[str], *, metrics: Sequence[str | MetricSpec],
                    group_by: Sequence[str] = (), thresholds: Sequence[Threshold] = (),
                    n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 12345,
                    id_column: str | None = None, options: Mapping[str, Any] | None = None,
                    map_parts: MapParts | None = None,
                    sums_fn: Callable[..., Any] = part_sums_of_file,
                    resamples_fn: Callable[..., Any] = part_resamples_of_file) -> pa.Table:
    """:func:`aggregate` of examples files, from mergeable per-file sums: the same table.

    Two passes of one task per file (``map_parts``), which read only value, group and id
    columns: the first returns each scope's count, largest values and exact partial sums
    (the means are then exact: ``math.fsum`` of every value); the second, the file's share
    of each scope's resampled sums on the scope's grid (exact, so they add up to the sums of
    :func:`aggregate` bit for bit). The caller only adds; it holds nothing per example, and
    the resampled sums of at most about :data:`SUMS_BLOCK_BYTES` at once (scopes in blocks:
    a file is read once per block it has scopes in).

    Args:
        uris: the examples files (each with at least one row).
        metrics: as :func:`aggregate`.
        group_by: as :func:`aggregate`.
        thresholds: as :func:`aggregate`.
        n_bootstrap: as :func:`aggregate`.
        confidence: as :func:`aggregate`.
        seed: as :func:`aggregate`.
        id_column: as :func:`aggregate`; give it, for the result not to depend on the files
            (it keys the weights; without it, a row's position in its file does).
        options: as :func:`aggregate`.
        map_parts: runs a task function over a list of argument tuples, results in order
            (an engine's workers); default: here, one after the other.
        sums_fn: the first pass's task function (an engine passes a wrapped one).
        resamples_fn: the second pass's task function.

    Raises:
        InputError: no example, or a missing column.
        ConfigError: an unknown metric name.

    """
    specs = resolve_specs(metrics, options)
    columns, rows = _layout(specs, thresholds)
    estimates = [r.estimate for r in rows]
    run = map_parts or _serial
    if not uris:
        raise InputError("nothing to aggregate: no example was scored")
    found = run(sums_fn, [(u, i, columns, tuple(group_by), id_column)
                          for i, u in enumerate(uris)])
    merged: dict[tuple, ScopeSums] = {}
    group_types = found[0][1]
    for scopes, _ in found:
        for mk, sc in scopes.items():
            if mk in merged:
                merged[mk].merge(sc)
            else:
                merged[mk] = sc
    del found
    everything = merged.pop(_merge_key("all", tuple(None for _ in group_by)))
    ordered = [everything] + sorted(merged.values(),
                                    key=lambda sc: tuple(_sort_key(v) for v in sc.key))
    del merged
    intervals: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(ordered)
    if n_bootstrap:
        per_copy = n_bootstrap * (len(columns) + 1) * 8
        blocks: list[list[int]] = [[]]
        size = 0
        for i, sc in enumerate(ordered):
            cost = per_copy * (len(sc.parts) + 1) + n_bootstrap * len(rows) * 8
            if blocks[-1] and size + cost > SUMS_BLOCK_BYTES:
                blocks.append([])
                size = 0
            blocks[-1].append(i)
            size += cost
        for block in blocks:
            scales = {_merge_key(ordered[i].kind, ordered[i].key): stats.grid_scales(
                ordered[i].n, ordered[i].max_abs, max_weight=stats.MAX_WEIGHT["poisson"])
                for i in block}
            wanted: dict[int, dict[tuple, np.ndarray]] = {}
            for i in block:
                mk = _merge_key(ordered[i].kind, ordered[i].key)
                for p in ordered[i].parts:
                    wanted.setdefault(p, {})[mk] = scales[mk]
            shares = run(resamples_fn, [(uris[p], columns, tuple(group_by), id_column,
                                         wanted[p], n_bootstrap, seed)
                                        for p in sorted(wanted)])
            del wanted
            for i in block:
                mk = _merge_key(ordered[i].kind, ordered[i].key)
                sums = np.zeros((n_bootstrap, len(columns)))
                totals = np.zeros(n_bootstrap)
                for share in shares:
                    if mk in share:
                        sums += share[mk][0]  # exact: multiples of the scope's grid
                        totals += share[mk][1]
                intervals[i] = stats.percentile_interval(
                    stats.evaluate(estimates, sums, totals, size=ordered[i].n), confidence)
            del shares
    out = []
    used = sorted({c for e in estimates for c in e.columns})
    for sc, ci in zip(ordered, intervals, strict=True):
        sums = np.zeros((1, len(columns)))
        sums[0, used] = sc.sums()[used]
        out.append((sc.kind, sc.key, sc.n,
                    stats.evaluate(estimates, sums, np.array([float(sc.n)]))[0], ci, sums[0]))
    return _output(out, rows, group_by, group_types)


# ---------------------------------------------------------------------------------------
# The aggregate as a result object: what HF evaluate's compute() and sacrebleu's
# corpus_score() return, read from the long-format table (never computed again).


@dataclass(frozen=True)
class Interval:
    """One value with its bootstrap percentile interval.

    Attributes:
        value: the mean or corpus score, in the measure's units (0-1 ROUGE, 0-100 BLEU).
        ci_low: the interval's lower end; None without an interval.
        ci_high: the interval's upper end; None without an interval.

    """

    value: float
    ci_low: float | None
    ci_high: float | None

    def to_dict(self) -> dict[str, float | None]:
        """``{"value", "ci_low", "ci_high"}``."""
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high}


@dataclass(frozen=True)
class MetricAggregate:
    """One metric's aggregate over a set of examples.

    Attributes:
        metric: the metric name, e.g. ``rouge1``, ``bleu``.
        statistic: ``corpus`` when the headline is a corpus score from summed statistics
            (sacrebleu's ``corpus_score``: BLEU, chrF), else ``mean`` (the mean of the
            primary measure, as HF evaluate's ``compute()`` reports ROUGE).
        measure: the headline's measure (the spec's primary), e.g. ``fmeasure``, ``score``.
        score: the headline value with its interval.
        means: per measure, the mean of the per-example values with its interval (for BLEU,
            ``score`` is the mean of sentence BLEU, which is not corpus BLEU).
        breakdown: the corpus score's parts by name (BLEU: ``precision_1`` ..
            ``precision_4``, ``bp``, ``ratio``, ``sys_len``, ``ref_len``); empty when the
            metric has none.
        breakdown_text: the breakdown as the reference implementation prints it ("" none).

    """

    metric: str
    statistic: str
    measure: str
    score: Interval
    means: dict[str, Interval]
    breakdown: dict[str, float | int]
    breakdown_text: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The aggregate as a JSON-ready dict.

        Keys: ``score``, ``ci_low``, ``ci_high`` (the headline), ``statistic``, ``measure``,
        ``means`` (per measure ``{value, ci_low, ci_high}``), then the breakdown's parts.
        """
        out: dict[str, Any] = {"score": self.score.value, "ci_low": self.score.ci_low,
                               "ci_high": self.score.ci_high, "statistic": self.statistic,
                               "measure": self.measure,
                               "means": {m: i.to_dict() for m, i in self.means.items()}}
        out.update(self.breakdown)
        return out


def metric_aggregates(table: pa.Table, metrics: Sequence[str | MetricSpec], *,
                      options: Mapping[str, Any] | None = None) -> dict[str, MetricAggregate]:
    """Each metric's ``all`` rows of an aggregate table, as :class:`MetricAggregate`.

    Args:
        table: the long-format table of :func:`aggregate` (``aggregate.parquet``).
        metrics: the metric names (resolved by the registry under ``options``) or specs.
        options: the flat scoring options.

    Returns:
        By metric name, in the order given; a metric without a headline row in the table
        (neither a corpus row nor the mean of its primary measure) is left out.

    """
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    scope = table.column("scope")
    for r in table.filter(pc.equal(scope, scalar("all", scope.type))).to_pylist():
        if r["statistic"] in ("mean", "corpus"):
            rows[(r["metric"], r["measure"], r["statistic"])] = r
    out = {}
    for spec in resolve_specs(metrics, options):
        means = {m: Interval(r["mean"], r["ci_low"], r["ci_high"]) for m in spec.measures
                 if (r := rows.get((spec.name, m, "mean"))) is not None}
        corpus = rows.get((spec.name, spec.primary, "corpus")) if spec.corpus else None
        if corpus is None and spec.primary not in means:
            continue  # a table without this metric's rows
        parts: dict[str, float | int] = {}
        if corpus is not None:
            parts = {part: corpus[name] for (part, _), (name, _) in
                     zip(spec.breakdown_columns, spec.breakdown_fields, strict=True)
                     if corpus.get(name) is not None}
        text = spec.breakdown_text(parts) if parts and spec.breakdown_text else ""
        head = (Interval(corpus["mean"], corpus["ci_low"], corpus["ci_high"])
                if corpus is not None else means[spec.primary])
        out[spec.name] = MetricAggregate(spec.name, "corpus" if corpus else "mean",
                                         spec.primary, head, means, parts, text)
    return out


__all__ = ["RESAMPLES_PER_CHUNK", "SUMS_BLOCK_BYTES", "Interval", "MapChunks", "MapParts",
           "MetricAggregate", "Prepared", "Scope", "ScopeSums", "aggregate", "aggregate_parts",
           "bootstrap_bytes", "bootstrap_chunk", "exact_mean", "grids_of", "metric_aggregates",
           "part_resamples", "part_sums", "resolve_specs", "scopes_of", "value_columns"]
