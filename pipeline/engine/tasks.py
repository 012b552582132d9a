"""The work of a run, as functions that every engine runs the same way.

1. :func:`exchange_unit`: read one unit (row groups of one file), split its rows by
   partition (hash of the id) and write them to the unit's exchange file in the staging
   directory (:mod:`pipeline.io.exchange`): one pass over the input, nothing kept in memory.
2. :func:`check_partition`: join one partition's ids (and reference counts) from every unit's
   exchange file and report problems (missing, duplicate or empty references) and reference
   counts. It reads the id and list-length columns only, never the text. The driver fails
   the run here, before any expensive work, if anything is wrong.
3. :func:`score_partition`: read one partition's rows from the exchange files, join them,
   score and write ``examples/part-*.parquet`` (:func:`score_joined`).

Each task holds at most one partition (or one unit) and returns small results (counts, file
names), so no text passes through the driver or an engine's object store. They take and
return plain data (Arrow tables, dataclasses), never touch Ray, and keep the expensive state
(the :class:`~pipeline.scoring.Scorer`) once per worker process.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import socket
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import from_numpy, scalar, to_numpy
from pipeline.engine.base import small_result
from pipeline.engine.faults import Faults
from pipeline.engine.plan import Unit
from pipeline.errors import ConfigError, InputError
from pipeline.io.exchange import SLICE_ROWS, Exchange, PiecesWriter, exchange_name, read_piece
from pipeline.io.files import locate
from pipeline.io.partition import partition_of, split_by_partition
from pipeline.io.read import iter_row_groups, read_row_groups
from pipeline.io.schema import (
    RUN_ID_COLUMN,
    RUN_ID_KEY,
    SIGNATURE_KEY,
    TEXT_COLUMN,
    TRUNCATED_COLUMN,
    InputSpec,
    check_utf8,
    normalize,
)
from pipeline.io.write import write_json, write_parquet
from pipeline.scoring import DataWarning, Scorer, ScoringSettings

# Rows scored per call of the scorer: bounds the tokenizer's working memory.
SCORE_BATCH_ROWS = 8192
# Example ids shown in a problem report.
SAMPLE_IDS = 5
# Problem kinds, in the order they are reported: (one, several) as the count agrees.
PROBLEMS = {
    "duplicate_prediction_id": ("id occurs more than once among the predictions",
                                "ids occur more than once among the predictions"),
    "missing_references": ("prediction has no references", "predictions have no references"),
    "orphan_references": ("id in the references has no prediction",
                          "ids in the references have no prediction"),
    "duplicate_reference_id": ("id occurs more than once in the references list table",
                               "ids occur more than once in the references list table"),
    "no_reference": ("example has an empty or null list of references",
                     "examples have an empty or null list of references"),
    "null_reference": ("reference is null", "references are null"),
    "long_text": ("example has a text longer than max_tokens",
                  "examples have a text longer than max_tokens"),
}
# Why examples are left out with on_missing/on_empty_references "skip" (manifest
# counts.skipped): the problem kinds above that a setting turns into skips.
SKIP_REASONS = ("missing_references", "orphan_references", "no_reference", "null_reference")
# How a user makes the run go on despite a problem kind (the error's hint).
_REMEDIES = {
    "missing_references": "--on-missing skip or zero scores the rest",
    "orphan_references": "--on-missing skip or zero scores the rest",
    "no_reference": "--on-empty-references skip leaves them out",
    "null_reference": "--on-empty-references skip leaves them out",
    "long_text": "raise --max-tokens, or --on-long-text truncate cuts and flags them",
}


@functools.lru_cache(maxsize=4)
def _scorer(settings: ScoringSettings) -> Scorer:
    # Built once per worker process (and per settings): names validated, kernels loaded.
    return Scorer(settings)


def warm_scorer(settings: ScoringSettings) -> None:
    """Build the scorer of ``settings`` in this process and score one pair with it.

    The modules it imports, the kernels it loads and its first batch's one-time work are
    then done once, and shared by the workers the local engine forks from this process.
    """
    scorer = _scorer(settings)
    if settings.input_columns():  # scoring needs per-row columns (a language column)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer.score_batch(["a b"], [["a b"]])


@dataclass
class Problems:
    """Counts of each problem kind and the first example ids of each (partition order)."""

    counts: dict[str, int] = field(default_factory=dict)
    samples: dict[str, list] = field(default_factory=dict)

    def add(self, kind: str, ids: pa.Array | list) -> None:
        """Record ``len(ids)`` occurrences of ``kind``, keeping the first few ids."""
        n = len(ids)
        if not n:
            return
        self.counts[kind] = self.counts.get(kind, 0) + n
        have = self.samples.setdefault(kind, [])
        if len(have) < SAMPLE_IDS:
            head = ids[:SAMPLE_IDS - len(have)]
            have.extend(head.to_pylist() if isinstance(head, (pa.Array, pa.ChunkedArray))
                        else list(head))

    def merge(self, other: Problems) -> None:
        """Add another partition's problems (call in partition order)."""
        for kind, n in other.counts.items():
            self.counts[kind] = self.counts.get(kind, 0) + n
            have = self.samples.setdefault(kind, [])
            have.extend(other.samples.get(kind, [])[:SAMPLE_IDS - len(have)])

    def error(self) -> InputError | None:
        """One InputError describing every problem (at most 5 ids each), or None."""
        parts = []
        for kind, (one, many) in PROBLEMS.items():
            n = self.counts.get(kind)
            if n:
                text = one if n == 1 else many
                ids = ", ".join(repr(i) for i in self.samples.get(kind, []))
                more = ", ..." if n > len(self.samples.get(kind, [])) else ""
                parts.append(f"{n} {text} (ids: {ids}{more})")
        remedies = dict.fromkeys(_REMEDIES[k] for k in PROBLEMS
                                 if self.counts.get(k) and k in _REMEDIES)
        return InputError("; ".join(parts), hint="; ".join(remedies) or None) if parts \
            else None


@dataclass
class PartitionCheck:
    """Result of :func:`check_partition`.

    Attributes:
        index: the partition.
        n_examples: examples to score in the partition (after skipping).
        min_references, max_references: references per example (0 and 0 when empty).
        problems: what would stop the run.
        seconds: time spent in the task.
        skipped: examples left out by ``on_missing``/``on_empty_references``, by reason.

    """

    index: int
    n_examples: int
    min_references: int
    max_references: int
    problems: Problems
    seconds: float
    skipped: Problems = field(default_factory=Problems)


@dataclass
class PartitionResult:
    """Result of :func:`score_partition`.

    Attributes:
        index: the partition.
        name: the examples file name (``part-*.parquet``), or None when it had no example.
        num_rows: examples written.
        size_bytes: size of the written file.
        n_null_predictions: null predictions (scored as empty texts).
        seconds: time spent in the task.
        n_truncated: examples with a text cut at ``max_tokens``.
        n_missing_predictions: reference ids without a prediction, scored as an empty
            prediction (``on_missing="zero"``).
        problems: texts over ``max_tokens`` with ``on_long_text="error"`` (nothing written).
        where: where the task ran (:func:`worker_location`).
        n_groups: distinct values of the task's ``group_by`` columns among the examples
            (0 without groups): what the aggregate costs per file.
        counts: the families' data-note counts, by key (see
            :class:`pipeline.metrics.base.DataNote`).

    """

    index: int
    name: str | None
    num_rows: int
    size_bytes: int
    n_null_predictions: int
    seconds: float
    n_truncated: int = 0
    n_missing_predictions: int = 0
    problems: Problems = field(default_factory=Problems)
    where: dict[str, Any] = field(default_factory=dict)
    n_groups: int = 0
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PartitionTask:
    """What a score task needs besides the data: where results go, and how to label them.

    Attributes:
        index: the partition.
        part_uri: where to write the examples (``.../examples/part-*.parquet``).
        marker_uri: the completion marker, written after the examples file (see
            :mod:`pipeline.engine.resume`); None writes none.
        run_id: written in the ``run_id`` column and the file metadata.
        signature: written in the file metadata (key ``overlap.signature``).
        exchange: where the partition's rows are (every unit's exchange file).
        group_by: the run's group columns (their distinct values are counted).
        faults: injected faults (tests only, see :mod:`pipeline.engine.faults`), or None.

    """

    index: int
    part_uri: str
    marker_uri: str | None
    run_id: str
    signature: str
    exchange: Exchange
    faults: Faults | None = None
    group_by: tuple[str, ...] = ()


def worker_location() -> dict[str, Any]:
    """Return where this process runs: host, pid, package directory, Ray node IP and id.

    ``package`` is the directory this package was loaded from (on a cluster: the copy Ray
    unpacked from the shipped package). Ray is not imported here: a Ray worker has loaded it
    already.
    """
    where: dict[str, Any] = {"host": socket.gethostname(), "pid": os.getpid(),
                             "package": os.path.dirname(os.path.dirname(
                                 os.path.abspath(__file__)))}
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        where["node_ip"] = ray.util.get_node_ip_address()
        where["node_id"] = ray.get_runtime_context().get_node_id()
    return where


def read_unit(spec: InputSpec, unit: Unit) -> pa.Table:
    """Read a unit's columns, with normalized types.

    Args:
        spec: the resolved inputs.
        unit: the row groups to read.

    Raises:
        InputError: the file cannot be read, its ids contain nulls or its text is not
            UTF-8 (names the file).

    """
    columns = (spec.prediction_read_columns if unit.side == "predictions"
               else spec.reference_read_columns)
    table = read_row_groups(unit.uri, unit.row_groups, columns, size_bytes=unit.size_bytes,
                            mtime_ns=unit.mtime_ns, what=unit.side)
    check_utf8(table, spec, uri=unit.uri, side=unit.side)
    table = normalize(table, spec, side=unit.side, uri=unit.uri)
    ids = table.column(spec.id_column)
    if ids.null_count:
        raise InputError(f"{unit.side}: {unit.uri} has {ids.null_count} null ids in column "
                         f"{spec.id_column!r}")
    return table


@dataclass
class UnitSplit:
    """Result of :func:`exchange_unit`.

    Attributes:
        side: ``predictions`` or ``references``.
        index: the unit.
        rows: rows sent to each partition, in partition order.
        size_bytes: size of the exchange file written.
        seconds: time spent in the task.

    """

    side: str
    index: int
    rows: list[int]
    size_bytes: int
    seconds: float


@small_result
def exchange_unit(spec: InputSpec, unit: Unit, exchange: Exchange) -> UnitSplit:
    """Read a unit, split its rows by partition and write them to its exchange file.

    The unit is read, checked, split and written in slices of at most
    :data:`~pipeline.io.exchange.SLICE_ROWS` rows: a task holds one slice, however large the
    input's row groups.

    Args:
        spec: the resolved inputs.
        unit: the row groups to read.
        exchange: where the exchange files go, and how many partitions there are.

    Raises:
        InputError: as :func:`read_unit` (the same message: the unit is then read whole).
        ExecutionError: the storage refused the write (transient: Ray retries it).

    """
    start = time.perf_counter()
    n = exchange.n_partitions
    columns = (spec.prediction_read_columns if unit.side == "predictions"
               else spec.reference_read_columns)
    writer = PiecesWriter(locate(exchange.unit_uri(unit.side, unit.index)), n)
    rows = [0] * n
    try:
        for raw in iter_row_groups(unit.uri, unit.row_groups, columns, slice_rows=SLICE_ROWS,
                                   size_bytes=unit.size_bytes, mtime_ns=unit.mtime_ns,
                                   what=unit.side):
            table = _checked(spec, unit, raw)
            pieces = [table] if n == 1 else split_by_partition(
                table, partition_of(table.column(spec.id_column), n), n)
            writer.write(pieces)
            rows = [r + p.num_rows for r, p in zip(rows, pieces, strict=True)]
        size = writer.close()
    except InputError:
        writer.abort()
        read_unit(spec, unit)  # the whole unit: the message names its counts and rows
        raise
    except BaseException:
        writer.abort()
        raise
    return UnitSplit(unit.side, unit.index, rows, size, time.perf_counter() - start)


def _checked(spec: InputSpec, unit: Unit, table: pa.Table) -> pa.Table:
    """A slice of a unit, checked and normalized as :func:`read_unit` does a whole unit."""
    check_utf8(table, spec, uri=unit.uri, side=unit.side)
    table = normalize(table, spec, side=unit.side, uri=unit.uri)
    if table.column(spec.id_column).null_count:
        raise InputError(f"{unit.side}: {unit.uri} has null ids")
    return table


def _list_skeleton(refs: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A list column with the same lists, nulls and null elements, every text empty.

    What the check needs of references (how many, which are null) without their text.
    """
    if isinstance(refs, pa.ChunkedArray):
        refs = refs.combine_chunks()
    refs = refs.cast(pa.large_list(pa.large_string()))
    values = refs.values
    skeleton = pc.if_else(pc.is_null(values), pa.scalar(None, pa.large_string()),
                          pa.scalar("", pa.large_string()))
    offsets = pc.subtract(refs.offsets, refs.offsets[0]) if len(refs) else refs.offsets
    start = refs.offsets[0].as_py() if len(refs) else 0
    stop = refs.offsets[len(refs)].as_py() if len(refs) else 0
    return pa.LargeListArray.from_arrays(offsets, skeleton.slice(start, stop - start),
                                         mask=pc.is_null(refs) if refs.null_count else None)


def _text_skeleton(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Empty strings where ``texts`` has a value, nulls where it has none."""
    return pc.if_else(pc.is_null(texts), pa.scalar(None, pa.large_string()),
                      pa.scalar("", pa.large_string()))


def _keys_of(spec: InputSpec, table: pa.Table, side: str) -> pa.Table:
    """The columns :func:`_join` reads for its checks, texts replaced by their skeletons."""
    if side == "predictions":
        columns = {spec.id_column: table.column(spec.id_column)}
        if spec.layout == "inline":
            columns[spec.reference_column] = _list_skeleton(
                table.column(spec.reference_column))
        return pa.table(columns)
    refs = table.column(spec.reference_column)
    return pa.table({spec.id_column: table.column(spec.id_column),
                     spec.reference_column: _list_skeleton(refs) if spec.layout == "list"
                     else _text_skeleton(refs)})


@dataclass
class Joined:
    """One partition joined: predictions in input order, each with its references."""

    predictions: pa.Table
    references: pa.Array  # large_list<large_string>, aligned with predictions
    problems: Problems
    skipped: Problems  # examples left out, by reason
    n_missing_predictions: int = 0  # rows added for reference ids without a prediction


def _concat(pieces: Sequence[pa.Table]) -> pa.Table:
    return pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]


def _join(spec: InputSpec, pred_pieces: Sequence[pa.Table], ref_pieces: Sequence[pa.Table],
          *, unique_ids: bool = True) -> Joined:
    """Gather one partition: predictions in input order, each with its list of references.

    Ids on one side only and empty reference lists are problems, or are left out (counted
    in ``skipped``) or, for reference ids without a prediction and ``on_missing="zero"``,
    appended as rows with a null prediction, as ``spec`` says. ``unique_ids=False`` leaves
    out the duplicate prediction id check (the caller checks ids across units).
    """
    problems, skipped = Problems(), Problems()
    missing_kind = problems if spec.on_missing == "error" else skipped
    preds = _concat(pred_pieces).combine_chunks()
    ids = preds.column(spec.id_column)
    if unique_ids:
        problems.add("duplicate_prediction_id", _duplicates(ids))
    list_type = pa.large_list(pa.large_string())
    missing = None
    n_added = 0
    if spec.layout == "inline":
        refs = preds.column(spec.reference_column).combine_chunks()
        preds = preds.drop_columns([spec.reference_column])
    else:
        ref_table = _concat(ref_pieces)
        if spec.layout == "rows":
            if spec.on_empty_references == "error":  # else skipped per example below
                null_rows = ref_table.filter(pc.is_null(ref_table.column(spec.reference_column)))
                problems.add("null_reference", null_rows.column(spec.id_column).combine_chunks())
            grouped = ref_table.group_by(spec.id_column, use_threads=False).aggregate(
                [(spec.reference_column, "list")])
            ref_ids = grouped.column(spec.id_column)
            ref_lists = pc.cast(grouped.column(f"{spec.reference_column}_list"), list_type)
        else:
            ref_ids = ref_table.column(spec.id_column)
            ref_lists = ref_table.column(spec.reference_column)
            ref_counts = pc.value_counts(ref_ids)
            ref_dup = ref_counts.filter(pc.greater(ref_counts.field("counts"), 1))
            if len(ref_dup):
                problems.add("duplicate_reference_id", ref_dup.field("values"))
        if len(ref_ids):
            found = pc.is_in(ref_ids, value_set=ids)
            orphans = _unique(pc.filter(ref_ids, pc.invert(found)))
            if spec.on_missing == "zero" and len(orphans):
                preds = pa.concat_tables([preds, _rows_without_prediction(preds, spec, orphans)])
                ids = preds.column(spec.id_column).combine_chunks()
                n_added = len(orphans)
            else:
                missing_kind.add("orphan_references", orphans)
        position = pc.index_in(ids, value_set=ref_ids.combine_chunks()
                               if isinstance(ref_ids, pa.ChunkedArray) else ref_ids)
        missing = pc.is_null(position)
        if pc.any(missing).as_py():
            missing_kind.add("missing_references", ids.filter(missing))
        refs = ref_lists.combine_chunks() if isinstance(ref_lists, pa.ChunkedArray) \
            else ref_lists
        refs = refs.take(position)
    if refs.type != list_type:
        refs = pc.cast(refs, list_type)
    lengths = pc.list_value_length(refs)
    empty = pc.fill_null(pc.equal(lengths, scalar(0, lengths.type)), scalar(True, pa.bool_()))
    if missing is not None:  # missing ids are reported as such, not as empty lists
        empty = pc.and_(empty, pc.invert(missing))
    flat_null = pc.is_null(pc.list_flatten(refs))
    with_null = np.zeros(len(refs), dtype=bool)
    if pc.any(flat_null).as_py():
        with_null[to_numpy(pc.filter(pc.list_parent_indices(refs), flat_null))] = True
    if spec.on_empty_references == "error":
        problems.add("no_reference", ids.filter(empty))
        if spec.layout != "rows":  # rows: null reference rows were counted above
            problems.add("null_reference", ids.filter(from_numpy(with_null)))
    else:
        skipped.add("no_reference", ids.filter(empty))
        skipped.add("null_reference", ids.filter(from_numpy(with_null)))
    drop = pc.or_(empty, from_numpy(with_null))
    if missing is not None:
        drop = pc.or_(drop, missing)
    if not problems.counts and pc.any(drop).as_py():
        keep = pc.invert(drop)
        preds, refs = preds.filter(keep), refs.filter(keep)
    return Joined(preds, refs, problems, skipped, n_added)


def _duplicates(ids: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The ids that occur more than once, each once, in order of first occurrence."""
    counts = pc.value_counts(ids)
    times = counts.field("counts")
    return counts.filter(pc.greater(times, scalar(1, times.type))).field("values")


def _rows_without_prediction(preds: pa.Table, spec: InputSpec, ids: pa.Array) -> pa.Table:
    """Rows for ids that have references but no prediction: null text and ride-alongs."""
    return pa.Table.from_arrays(
        [pc.cast(ids, f.type) if f.name == spec.id_column else pa.nulls(len(ids), f.type)
         for f in preds.schema], schema=preds.schema)


def _unique(ids: pa.Array | pa.ChunkedArray) -> pa.Array:
    return pc.unique(ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids)


@small_result
def check_partition(spec: InputSpec, index: int, exchange: Exchange) -> PartitionCheck:
    """Join one partition's ids and report its problems and reference counts, without scoring.

    Only the id column and the references' counts and nulls are read from the exchange
    files (text columns are never touched on a local filesystem: they are memory-mapped).

    Args:
        spec: the resolved inputs.
        index: the partition.
        exchange: where every unit's rows are.

    """
    start = time.perf_counter()
    pred_cols = [spec.id_column] + ([spec.reference_column] if spec.layout == "inline" else [])
    ref_cols = [spec.id_column, spec.reference_column]
    n = exchange.n_partitions
    preds = [_keys_of(spec, read_piece(locate(u), index, n, pred_cols), "predictions")
             for u in exchange.uris("predictions")]
    refs = [_keys_of(spec, read_piece(locate(u), index, n, ref_cols), "references")
            for u in exchange.uris("references")]
    joined = _join(spec, preds, refs)
    lengths = _reference_counts(joined.references)
    return PartitionCheck(
        index=index, n_examples=len(lengths),
        min_references=int(lengths.min()) if len(lengths) else 0,
        max_references=int(lengths.max()) if len(lengths) else 0,
        problems=joined.problems, seconds=time.perf_counter() - start,
        skipped=joined.skipped)


@small_result
def score_partition(spec: InputSpec, settings: ScoringSettings, task: PartitionTask
                    ) -> PartitionResult:
    """Read one partition's rows from the exchange files, join them, :func:`score_joined`.

    Args:
        spec: the resolved inputs.
        settings: scoring settings.
        task: the partition, where its rows are, where to write, how to label.

    Raises:
        InputError: the partition has a problem (the check stage should have caught it).
        ExecutionError: the storage refused a read or a write (transient: Ray retries it).

    """
    start = time.perf_counter()
    ex = task.exchange
    n = ex.n_partitions
    joined = _join(spec, [read_piece(locate(u), task.index, n) for u in ex.uris("predictions")],
                   [read_piece(locate(u), task.index, n) for u in ex.uris("references")])
    return score_joined(spec, settings, task, joined, started=start)


@dataclass
class ScoredRows:
    """Examples scored by :func:`score_rows`, not yet written.

    Attributes:
        table: the examples file's columns but ``run_id``, in their order (id, ride-alongs,
            text, score and statistic columns, ``truncated``, thresholds); one row per example.
        truncated: bool (rows,), texts cut at ``max_tokens``.
        counts: the families' data-note counts, by key.
        n_null: null predictions (scored as empty texts).
        long: texts over ``max_tokens`` with ``on_long_text="error"`` (then ``table`` is
            still complete: the caller writes nothing).

    """

    table: pa.Table
    truncated: np.ndarray
    counts: dict[str, int]
    n_null: int
    long: Problems


def _check_language_column(spec: InputSpec, settings: ScoringSettings,
                           preds: pa.Table) -> None:
    """Refuse empty or null ``--language column:COL`` values, naming the first few ids.

    Raises:
        ConfigError: a row whose language is null, empty or only white space.
    """
    from pipeline.metrics.rouge.languages import language_column

    column = language_column(dict(settings.options).get("language"))
    if not column or column not in preds.column_names:
        return
    values = preds.column(column)
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return  # the family names a column of the wrong type
    empty = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(values), ""), True)
    n_empty = pc.sum(empty).as_py() or 0
    if n_empty:
        ids = preds.column(spec.id_column).filter(empty)[:SAMPLE_IDS].to_pylist()
        more = ", ..." if n_empty > len(ids) else ""
        raise ConfigError(f"predictions: column {column!r} has an empty or null language in "
                          f"{n_empty} {'row' if n_empty == 1 else 'rows'} (ids: "
                          f"{', '.join(repr(i) for i in ids)}{more})",
                          hint="give every row a language name")


def score_rows(spec: InputSpec, settings: ScoringSettings, joined: Joined) -> ScoredRows:
    """Score joined examples in batches of :data:`SCORE_BATCH_ROWS` (none written).

    Zero examples give a table of zero rows with every column.

    Args:
        spec: the resolved inputs.
        settings: scoring settings.
        joined: the examples, each with its references (``joined.problems`` empty).

    """
    preds = joined.predictions
    n = preds.num_rows
    _check_language_column(spec, settings, preds)
    scorer = _scorer(settings)
    texts = preds.column(spec.prediction_column).combine_chunks()
    scored: list[pa.Table] = []
    cut: list[np.ndarray] = []
    counts: dict[str, int] = {}
    with warnings.catch_warnings(record=True) as caught:
        # The scorer's data warnings become counts in the manifest, not worker log lines.
        warnings.simplefilter("ignore", DataWarning)
        read = settings.input_columns()
        for lo in range(0, max(n, 1), SCORE_BATCH_ROWS):
            batch = scorer.score_batch(texts.slice(lo, SCORE_BATCH_ROWS),
                                       joined.references.slice(lo, SCORE_BATCH_ROWS),
                                       columns={c: preds.column(c).slice(lo, SCORE_BATCH_ROWS)
                                                for c in read} or None)
            scored.append(batch.table)
            cut.append(batch.truncated if batch.truncated is not None
                       else np.zeros(batch.table.num_rows, dtype=bool))
            for key, value in batch.counts.items():
                counts[key] = counts.get(key, 0) + int(value)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    truncated = np.concatenate(cut)
    long = Problems()
    if settings.on_long_text == "error" and truncated.any():
        long.add("long_text", preds.column(spec.id_column).filter(from_numpy(truncated)))
    scores = pa.concat_tables(scored).combine_chunks()
    columns: list[pa.Array | pa.ChunkedArray] = [preds.column(spec.id_column)]
    names = [spec.id_column]
    for c in spec.carry_columns:
        columns.append(preds.column(c))
        names.append(c)
    if spec.keep_text:
        columns.append(texts)
        names.append(TEXT_COLUMN)
    columns += [*scores.columns, from_numpy(truncated)]
    names += [*scores.column_names, TRUNCATED_COLUMN]
    for t in settings.thresholds:
        columns.append(pc.greater_equal(scores.column(f"{t.metric}_{t.measure}"), t.at))
        names.append(t.column)
    return ScoredRows(pa.table(columns, names=names), truncated, counts, texts.null_count,
                      long)


def score_joined(spec: InputSpec, settings: ScoringSettings, task: PartitionTask,
                 joined: Joined, *, started: float | None = None) -> PartitionResult:
    """Score and write one joined partition's examples, then its completion marker.

    Both files are written atomically (temporary name, rename), the marker last: a marker
    means its examples file is complete.

    Args:
        spec: the resolved inputs.
        settings: scoring settings.
        task: the partition, where to write, how to label.
        joined: the partition, joined by :func:`score_partition`.
        started: when the task started (``time.perf_counter``), for ``seconds``.

    Returns:
        What was written; with ``settings.on_long_text == "error"`` and a text over
        ``settings.max_tokens``, nothing is written (no marker either) and ``problems``
        names the examples.

    Raises:
        InputError: the partition has a problem (the check stage should have caught it).
        ExecutionError: the storage refused a write (transient: Ray retries it).

    """
    start = time.perf_counter() if started is None else started
    index, run_id = task.index, task.run_id
    err = joined.problems.error()
    if err is not None:
        raise err
    preds = joined.predictions
    n = preds.num_rows
    if n == 0:
        if task.faults is not None:
            task.faults.before_write(index)
        return _completed(task, PartitionResult(index, None, 0, 0, 0,
                                                time.perf_counter() - start))
    rows = score_rows(spec, settings, joined)
    n_missing = joined.n_missing_predictions
    if rows.long.counts:
        return PartitionResult(index, None, 0, 0, 0, time.perf_counter() - start,
                               problems=rows.long)
    table = rows.table.add_column(0, RUN_ID_COLUMN, pa.repeat(pa.scalar(run_id, pa.string()), n))
    return _write_part(task, table, PartitionResult(
        index, None, n, 0, rows.n_null - n_missing, 0.0, n_truncated=int(rows.truncated.sum()),
        n_missing_predictions=n_missing, counts=rows.counts), started=start)


def _write_part(task: PartitionTask, table: pa.Table, result: PartitionResult, *,
                started: float) -> PartitionResult:
    """Write a partition's examples (``table``, >= 1 row), then its completion marker.

    ``result`` gives the counts; its name, size, groups, seconds and place are filled in.
    """
    if task.faults is not None:
        task.faults.before_write(task.index)
    loc = locate(task.part_uri)
    result.size_bytes = write_parquet(table, loc, metadata={
        SIGNATURE_KEY: task.signature.encode(), RUN_ID_KEY: task.run_id.encode()})
    result.name = loc.path.rsplit("/", 1)[-1]
    result.n_groups = (table.select(list(task.group_by)).group_by(list(task.group_by),
                                                                   use_threads=False)
                       .aggregate([]).num_rows if task.group_by else 0)
    result.seconds = time.perf_counter() - started
    return _completed(task, result)


def _completed(task: PartitionTask, result: PartitionResult) -> PartitionResult:
    """Record where the task ran and write its completion marker (after the examples)."""
    result.where = worker_location()
    if task.marker_uri is not None:
        write_json(dataclasses.asdict(result), locate(task.marker_uri))
    return result


# The inline layout (references in the predictions' rows): nothing to join, so each unit is
# read, checked and scored where it lies (score_unit); only its scored rows (numbers, ids,
# ride-alongs) and its ids go through exchange files, and a partition's task gathers them
# (gather_partition) into the same examples file the joined layouts write.


def unit_names(index: int) -> tuple[str, str, str]:
    """A scored unit's files in the staging directory: its ids, its scored rows, its record.

    ``exchange/ids-00003.arrow``, ``exchange/scored-00003.arrow``, ``exchange/scored-00003.json``.
    """
    rows = exchange_name("scored", index)
    return exchange_name("ids", index), rows, rows.removesuffix(".arrow") + ".json"


@dataclass
class UnitScored:
    """Result of :func:`score_unit`: one unit's share of every partition.

    Attributes:
        index: the unit.
        checks: per partition, in order: the unit's rows of it checked (examples, reference
            counts, problems but duplicate ids, which :func:`check_ids` finds across units,
            and skipped examples); ``seconds`` 0.
        parts: per partition, in order: the unit's scored rows of it (``num_rows``,
            ``n_null_predictions``, ``n_truncated``, ``counts``, and ``problems``: texts over
            ``max_tokens`` with ``on_long_text="error"``); no file name or size.
        seconds: time spent in the task.

    """

    index: int
    checks: list[PartitionCheck]
    parts: list[PartitionResult]
    seconds: float


def _reference_counts(references: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """References per example, shape (n,), 0 for a null list (pandas left unimported)."""
    counted = pc.list_value_length(references)
    return to_numpy(pc.fill_null(counted, scalar(0, counted.type)))


def _add_check(check: PartitionCheck, joined: Joined) -> None:
    """Add one piece's examples, reference counts, problems and skips to ``check``."""
    lengths = _reference_counts(joined.references)
    if len(lengths):
        lo, hi = int(lengths.min()), int(lengths.max())
        if check.n_examples:
            lo, hi = min(lo, check.min_references), max(hi, check.max_references)
        check.min_references, check.max_references = lo, hi
        check.n_examples += len(lengths)
    check.problems.merge(joined.problems)
    check.skipped.merge(joined.skipped)


@small_result
def score_unit(spec: InputSpec, settings: ScoringSettings, unit: Unit, exchange: Exchange
               ) -> UnitScored:
    """Read, check and score one unit of the inline layout, split by partition.

    In slices of at most :data:`~pipeline.io.exchange.SLICE_ROWS` rows: each slice is
    checked and split by partition (hash of the id); its ids go to the unit's ids file and
    each partition's rows are scored as :func:`score_partition` scores them and go to the
    unit's scored file (:func:`unit_names`; batch ``s * n_partitions + b``, as
    :class:`~pipeline.io.exchange.PiecesWriter` writes). Once a slice has a problem, nothing
    more is scored (the run stops at the check) and no scored file is written; every slice
    is still checked, so the counts are complete. The result is also written to the unit's
    record (JSON, last): a rerun reuses a unit whose record and files are there.

    Args:
        spec: the resolved inputs (layout ``inline``).
        settings: scoring settings.
        unit: the row groups to read.
        exchange: where the unit's files go, and how many partitions there are.

    Raises:
        InputError: as :func:`read_unit` (the same message: the unit is then read whole).
        ExecutionError: the storage refused a write (transient: Ray retries it).

    """
    start = time.perf_counter()
    n = exchange.n_partitions
    ids_name, rows_name, record_name = unit_names(unit.index)
    base = exchange.uri.rstrip("/")
    ids_writer = PiecesWriter(locate(f"{base}/{ids_name}"), n)
    rows_writer: PiecesWriter | None = PiecesWriter(locate(f"{base}/{rows_name}"), n)
    checks = [PartitionCheck(b, 0, 0, 0, Problems(), 0.0) for b in range(n)]
    parts = [PartitionResult(b, None, 0, 0, 0, 0.0) for b in range(n)]
    try:
        for raw in iter_row_groups(unit.uri, unit.row_groups, spec.prediction_read_columns,
                                   slice_rows=SLICE_ROWS, size_bytes=unit.size_bytes,
                                   mtime_ns=unit.mtime_ns, what=unit.side):
            table = _checked(spec, unit, raw)
            pieces = [table] if n == 1 else split_by_partition(
                table, partition_of(table.column(spec.id_column), n), n)
            ids_writer.write([p.select([spec.id_column]) for p in pieces])
            joined = [_join(spec, [p], [], unique_ids=False) for p in pieces]
            for check, j in zip(checks, joined, strict=True):
                _add_check(check, j)
            if rows_writer is not None and any(j.problems.counts for j in joined):
                rows_writer.abort()
                rows_writer = None
            if rows_writer is None:
                continue
            # The slice is scored in one call (batches of SCORE_BATCH_ROWS), then cut back
            # into its partitions' rows: scoring each partition's share alone made batches
            # of slice / partitions rows (about 330 at 10M rows), whose per-call cost
            # dominated.
            rows = score_rows(spec, settings, Joined(
                _concat([j.predictions for j in joined]),
                pa.chunked_array([c for j in joined for c in (
                    j.references.chunks if isinstance(j.references, pa.ChunkedArray)
                    else [j.references])], type=joined[0].references.type).combine_chunks(),
                Problems(), Problems()))
            lengths = [j.predictions.num_rows for j in joined]
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            rows_writer.write([rows.table.slice(lo, hi - lo)
                               for lo, hi in zip(offsets[:-1], offsets[1:], strict=True)])
            for b, (part, j) in enumerate(zip(parts, joined, strict=True)):
                part.num_rows += lengths[b]
                part.n_null_predictions += j.predictions.column(
                    spec.prediction_column).null_count
                part.n_truncated += int(rows.truncated[offsets[b]:offsets[b + 1]].sum())
            first = parts[0]  # the slice's totals: the run sums them over partitions
            for key, value in rows.counts.items():
                first.counts[key] = first.counts.get(key, 0) + value
            first.problems.merge(rows.long)
        ids_writer.close()
        if rows_writer is not None:
            rows_writer.close()
    except InputError:
        ids_writer.abort()
        if rows_writer is not None:
            rows_writer.abort()
        read_unit(spec, unit)  # the whole unit: the message names its counts and rows
        raise
    except BaseException:
        ids_writer.abort()
        if rows_writer is not None:
            rows_writer.abort()
        raise
    result = UnitScored(unit.index, checks, parts, time.perf_counter() - start)
    write_json(dataclasses.asdict(result), locate(f"{base}/{record_name}"))
    return result


@small_result
def check_ids(spec: InputSpec, index: int, exchange: Exchange) -> PartitionCheck:
    """Find one partition's duplicate prediction ids across every unit (inline layout).

    Reads the id column of the units' ids files (:func:`score_unit`) only.

    Returns:
        The partition's check with its duplicate ids as ``problems`` (in input order, as
        :func:`check_partition` reports them) and no examples: the units' checks add those.

    """
    start = time.perf_counter()
    n = exchange.n_partitions
    base = exchange.uri.rstrip("/")
    pieces = [read_piece(locate(f"{base}/{unit_names(u)[0]}"), index, n, [spec.id_column])
              for u in range(exchange.n_prediction_units)]
    problems = Problems()
    problems.add("duplicate_prediction_id",
                 _duplicates(_concat(pieces).column(spec.id_column).combine_chunks()))
    return PartitionCheck(index, 0, 0, 0, problems, time.perf_counter() - start)


@small_result
def gather_partition(task: PartitionTask, result: PartitionResult) -> PartitionResult:
    """Gather one partition's scored rows from every unit and write its examples file.

    The rows come in unit order, each unit's in input order: the order, and so the file,
    :func:`score_partition` writes for the same partition.

    Args:
        task: the partition, where the units' files are, where to write, how to label.
        result: the units' counts of the partition, added up (see :class:`UnitScored`); with
            ``problems`` (texts over ``max_tokens``), nothing is written and it is returned.

    Raises:
        ExecutionError: the storage refused a read or a write (transient: Ray retries it).

    """
    start = time.perf_counter()
    if result.problems.counts:
        return result
    ex = task.exchange
    base = ex.uri.rstrip("/")
    table = _concat([read_piece(locate(f"{base}/{unit_names(u)[1]}"), task.index,
                                ex.n_partitions) for u in range(ex.n_prediction_units)])
    n = table.num_rows
    if n == 0:
        if task.faults is not None:
            task.faults.before_write(task.index)
        return _completed(task, PartitionResult(task.index, None, 0, 0, 0,
                                                time.perf_counter() - start))
    table = table.combine_chunks().add_column(
        0, RUN_ID_COLUMN, pa.repeat(scalar(task.run_id, pa.string()), n))
    return _write_part(task, table, result, started=start)


@small_result
def aggregate_sums(uri: str, part: int, columns: Sequence[str], group_by: Sequence[str],
                   id_column: str | None) -> Any:
    """A part's mergeable sums (:func:`pipeline.aggregate.part_sums_of_file`)."""
    from pipeline.aggregate import part_sums_of_file

    return part_sums_of_file(uri, part, columns, group_by, id_column)


@small_result
def aggregate_resamples(uri: str, columns: Sequence[str], group_by: Sequence[str],
                        id_column: str | None, scales: Any, n_bootstrap: int, seed: int
                        ) -> Any:
    """A part's share of the bootstrap (:func:`pipeline.aggregate.part_resamples_of_file`)."""
    from pipeline.aggregate import part_resamples_of_file

    return part_resamples_of_file(uri, columns, group_by, id_column, scales, n_bootstrap,
                                  seed)


def warm_up(settings: ScoringSettings) -> int:
    """Build this worker's scorer and load its compiled kernels; returns the process id."""
    # a per-row column the scoring reads gets a placeholder value (e.g. a language name)
    _scorer(settings).score_batch(["warm up"], [["warm up"]],
                                  columns={c: ["english"] for c in settings.input_columns()})
    return os.getpid()
