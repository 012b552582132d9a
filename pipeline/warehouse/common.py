"""What a published run looks like in a warehouse table, whatever the table format.

A complete run directory (``_SUCCESS``; see :mod:`pipeline.io.runs`) becomes two tables:

- ``examples``: the rows of ``examples/part-*.parquet``;
- ``aggregates``: the rows of ``aggregate.parquet``;

each preceded by the columns ``run_id`` (string), ``run_date`` (date: the run's start in
UTC, or as given), ``signature`` (string) and one string column per label
(``--label model=m7``). Both are partitioned by ``run_date``. Columns follow the run:
whatever metrics it holds become columns (never a fixed list), so a run with a new metric
adds columns to the tables (additive schema evolution), and a column whose type changed is
refused, naming it.

Idempotency: each table format records, in the same commit as the rows, that the run id was
written (:mod:`pipeline.warehouse.delta`, :mod:`pipeline.warehouse.iceberg`); publishing
checks that record per table first, so publishing a run again (after a crash between two
tables' commits, or by mistake) writes only what is missing.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config_checks import parse_run_date
from pipeline.errors import ConfigError, InputError

EXAMPLES_TABLE = "examples"
AGGREGATES_TABLE = "aggregates"
TABLES = (EXAMPLES_TABLE, AGGREGATES_TABLE)
# the table of comparisons (pipeline.warehouse.comparisons), named here for the wording
COMPARISONS_TABLE = "comparisons"
RUN_ID_COLUMN = "run_id"
RUN_DATE_COLUMN = "run_date"
SIGNATURE_COLUMN = "signature"
PARTITION_COLUMN = RUN_DATE_COLUMN
# Faults for the tests of a publish interrupted between two commits (never set otherwise):
# OVERLAP_PUBLISH_FAULTS='{"kill_after": "delta.examples"}' makes the process SIGKILL itself
# right after that table's commit.
FAULTS_ENV_VAR = "OVERLAP_PUBLISH_FAULTS"
# Recorded with each append (Delta commit info, Iceberg snapshot summary).
RUN_ID_KEY = "overlap.run_id"
FINGERPRINT_KEY = "overlap.fingerprint"

_LABEL_KEY = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_RESERVED = (RUN_ID_COLUMN, RUN_DATE_COLUMN, SIGNATURE_COLUMN)


class SchemaChangeError(InputError):
    """A run's column has another type than the same column in the table (exit 2)."""


@dataclass(frozen=True)
class PublishedTable:
    """What happened to one table.

    Attributes:
        format: ``delta`` or ``iceberg``.
        table: ``examples``, ``aggregates`` or ``comparisons``.
        location: the table's path or URI (Delta) or ``namespace.table`` (Iceberg).
        rows: rows of the run in the table after this publish.
        appended: False when the run was already in the table (nothing written).
        version: the table version holding the run: Delta version or Iceberg snapshot id.
        added_columns: columns this publish added to the table's schema.

    """

    format: str
    table: str
    location: str
    rows: int
    appended: bool
    version: int | None
    added_columns: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the terminal."""
        what = "appended" if self.appended else "already there, nothing written:"
        extra = f"; new columns {', '.join(self.added_columns)}" if self.added_columns else ""
        kind = "snapshot" if self.format == "iceberg" else "version"
        plural = "" if self.rows == 1 else "s"
        rows = (f"{self.rows} comparison row{plural}" if self.table == COMPARISONS_TABLE
                else f"{self.rows} row{plural} of the run")
        return (f"{self.format} {self.table}: {what} {rows} "
                f"({self.location}, {kind} {self.version}){extra}")


@dataclass(frozen=True)
class RunTables:
    """A run's rows, ready to publish.

    Attributes:
        run_id: the run's id (the idempotency key).
        run_date: the partition value.
        signature: the run's signature string.
        labels: label columns and their values, in the given order.
        tables: ``examples`` and ``aggregates`` Arrow tables, columns ``run_id``,
            ``run_date``, ``signature``, the labels, then the run's own columns.
        fingerprint: SHA-256 (hex) of what the rows are made of: the run id, date,
            signature, labels and the SHA-256 of every file of the run. Recorded with the
            rows in each table, so that another run published under the same run id (or
            the same run with other labels or date) is told apart from the same rows.
        key_column: the column holding ``run_id`` in every table (``run_id``; a
            comparison's rows are keyed by ``comparison_id``,
            :mod:`pipeline.warehouse.comparisons`).

    """

    run_id: str
    run_date: date
    signature: str
    labels: tuple[tuple[str, str], ...]
    tables: Mapping[str, pa.Table]
    fingerprint: str = ""
    key_column: str = RUN_ID_COLUMN

    def rows(self, table: str) -> int:
        """Rows of the run in ``table``."""
        return int(self.tables[table].num_rows)

    def for_format(self, fmt: str) -> RunTables:
        """The same run with its tables cast for a table format (:func:`cast_for`).

        Raises:
            InputError: a column the format cannot hold, naming it.

        """
        tables = {name: cast_for(t, fmt, what=name) for name, t in self.tables.items()}
        return RunTables(run_id=self.run_id, run_date=self.run_date, signature=self.signature,
                         labels=self.labels, tables=tables, fingerprint=self.fingerprint,
                         key_column=self.key_column)


class RunConflictError(InputError):
    """A table holds the run id with other rows than this publish would write (exit 2)."""


def conflict(where: str, run: RunTables, *, found: str) -> RunConflictError:
    """The error for a run id already published with other rows (see :class:`RunTables`).

    Args:
        where: the table, for the message.
        run: the run being published.
        found: what the table holds under the run id (e.g. "a run with another fingerprint").

    """
    return RunConflictError(
        f"{where} already holds run id {run.run_id} with other rows ({found}): another run, "
        "or this run with other labels or run date; nothing written",
        hint="a run id names one run: score again under a new run id, or publish with the "
             "labels and date it was published with")


def parse_labels(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """Parse ``KEY=VALUE`` labels.

    Args:
        items: strings ``KEY=VALUE``; KEY is a column name (lower-case letters, digits and
            ``_``, not starting with a digit, at most 63 characters), not ``run_id``,
            ``run_date`` or ``signature``; VALUE any string (may be empty).

    Returns:
        ``(key, value)`` pairs in order.

    Raises:
        ConfigError: no ``=``, an invalid or reserved key, or a key given twice.

    """
    labels: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"label {item!r}: use KEY=VALUE, e.g. model=m7")
        if not _LABEL_KEY.fullmatch(key) or key in _RESERVED:
            raise ConfigError(f"label key {key!r}: use lower-case letters, digits and '_' "
                              f"(a column name), not {', '.join(_RESERVED)}")
        if key in labels:
            raise ConfigError(f"label {key!r} given twice")
        labels[key] = value
    return tuple(labels.items())


def _run_date_of(manifest: dict[str, Any], path: str) -> date:
    started = manifest.get("started_at")
    try:
        stamp = datetime.fromisoformat(str(started))
    except ValueError:
        raise InputError(f"{path}/manifest.json has no readable started_at ({started!r})",
                         hint="give --run-date YYYY-MM-DD") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return stamp.astimezone(timezone.utc).date()


def warehouse_type(t: pa.DataType) -> pa.DataType:
    """The type a column is published with: 32-bit offsets and plain (undictionaried) values.

    Delta and Iceberg have one string, one binary and one list type; ``large_*`` and
    dictionary types are written as those.
    """
    if pa.types.is_dictionary(t):
        return warehouse_type(t.value_type)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return pa.list_(warehouse_type(t.value_type))
    if pa.types.is_list(t):
        return pa.list_(warehouse_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, warehouse_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(warehouse_type(t.key_type), warehouse_type(t.item_type))
    return t


def format_type(t: pa.DataType, fmt: str, *, column: str) -> pa.DataType:
    """The type a column is written to a table format with, so that it reads back the same.

    Lossless widening where the format has no such type or would narrow it (measured with
    deltalake 1.6 and pyiceberg 0.12: Delta reads uint8..uint64 back as int8..int64 and
    has no float16, time or fixed-size binary; Iceberg reads uint8, uint16, uint32, int8 and
    int16 back as int32 and has no nanosecond timestamps or date64): uint8 to int16 (Delta)
    or int32 (Iceberg), uint16 to int32, uint32 to int64, uint64 to int64 (values above
    2**63 - 1 are refused when cast), int8 and int16 to int32 on Iceberg, float16 to
    float32, fixed-size binary to binary, date64 to date32, timestamps to microseconds
    (values finer than a microsecond are refused when cast), fixed-size lists to lists,
    time to microseconds on Iceberg; then :func:`warehouse_type`, recursively.

    Args:
        t: the run's column type.
        fmt: ``delta`` or ``iceberg``.
        column: the column, for the message.

    Raises:
        InputError: a type the format cannot hold (duration, union, decimal wider than 38
            digits, time on Delta, null-typed columns on Iceberg), naming the column.

    """
    def refuse(why: str) -> InputError:
        return InputError(f"column {column!r} is {t}: {fmt} tables cannot hold {why}",
                          hint="cast the column to a plainer type before scoring")

    def convert(u: pa.DataType) -> pa.DataType:
        if pa.types.is_dictionary(u):
            return convert(u.value_type)
        if pa.types.is_unsigned_integer(u):
            wider = {8: pa.int16() if fmt == "delta" else pa.int32(), 16: pa.int32()}
            return wider.get(u.bit_width, pa.int64())
        if pa.types.is_signed_integer(u) and u.bit_width < 32 and fmt == "iceberg":
            return pa.int32()
        if pa.types.is_float16(u):
            return pa.float32()
        if pa.types.is_fixed_size_binary(u):
            return pa.binary()
        if pa.types.is_date64(u):
            return pa.date32()
        if pa.types.is_timestamp(u):
            return pa.timestamp("us", tz=u.tz)
        if pa.types.is_time(u):
            if fmt == "delta":
                raise refuse("a time of day")
            return pa.time64("us")
        if pa.types.is_duration(u) or pa.types.is_interval(u):
            raise refuse("durations")
        if pa.types.is_union(u):
            raise refuse("unions")
        if pa.types.is_decimal(u):
            if u.precision > 38:
                raise refuse("decimals of more than 38 digits")
            return pa.decimal128(u.precision, u.scale)
        if pa.types.is_null(u) and fmt == "iceberg":
            raise refuse("a column without a type (every value null, type null)")
        if pa.types.is_fixed_size_list(u) or pa.types.is_list(u) or pa.types.is_large_list(u) \
                or pa.types.is_list_view(u) or pa.types.is_large_list_view(u):
            return pa.list_(convert(u.value_type))
        if pa.types.is_struct(u):
            return pa.struct([pa.field(f.name, convert(f.type)) for f in u])
        if pa.types.is_map(u):
            return pa.map_(convert(u.key_type), convert(u.item_type))
        return warehouse_type(u)

    return convert(t)


def cast_for(table: pa.Table, fmt: str, *, what: str) -> pa.Table:
    """Cast a table's columns to :func:`format_type`, losslessly (a changed value is refused).

    Args:
        table: the rows to publish.
        fmt: ``delta`` or ``iceberg``.
        what: the table, for the message.

    Raises:
        InputError: a type the format cannot hold, or a value that does not fit the wider
            type (a uint64 above 2**63 - 1, a timestamp finer than a microsecond).

    """
    fields = [pa.field(f.name, format_type(f.type, fmt, column=f.name)) for f in table.schema]
    columns = []
    for f, column in zip(fields, table.columns, strict=True):
        try:
            columns.append(column if column.type == f.type else column.cast(f.type, safe=True))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise InputError(f"column {f.name!r} of the run's {what} ({column.type}) cannot be "
                             f"written to {fmt} as {f.type} without changing values: "
                             f"{str(err).splitlines()[0]}") from None
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def type_name(t: pa.DataType) -> str:
    """A type's name after a trip through a table format (for comparing schemas).

    Strings, binaries and lists of any offset width compare equal; integers, floats,
    timestamps keep their width and unit.
    """
    t = warehouse_type(t)
    if pa.types.is_list(t):
        return f"list<{type_name(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"{f.name}: {type_name(f.type)}" for f in t) + ">"
    if pa.types.is_map(t):
        return f"map<{type_name(t.key_type)}, {type_name(t.item_type)}>"
    if pa.types.is_timestamp(t):
        return "timestamp" + ("[tz]" if t.tz else "")  # both formats keep microseconds
    return str(t)


def check_additive(table_schema: pa.Schema, new_schema: pa.Schema, *, where: str
                   ) -> tuple[str, ...]:
    """Check that writing ``new_schema`` into a table of ``table_schema`` only adds columns.

    Args:
        table_schema: the table's current schema (as its format reads it back).
        new_schema: the schema of the rows to write.
        where: the table, for the message.

    Returns:
        The columns of ``new_schema`` the table lacks, in order.

    Raises:
        SchemaChangeError: a column in both with different types (after
            :func:`type_name`), naming the column and both types; a new column whose name
            differs from a column of the table only in case.

    """
    have = {f.name: f.type for f in table_schema}
    folded = {name.casefold(): name for name in have}
    for f in new_schema:
        other = folded.get(f.name.casefold())
        if f.name not in have and other is not None:
            raise SchemaChangeError(
                f"{where}: the table has a column {other!r} and this run {f.name!r}, one "
                "column for readers that ignore case (DuckDB, Trino, Spark)",
                hint="rename the label or column, or publish into another table")
        if f.name in have and type_name(have[f.name]) != type_name(f.type):
            raise SchemaChangeError(
                f"{where}: column {f.name!r} is {type_name(have[f.name])} in the table but "
                f"{type_name(f.type)} in this run; only new columns can be added",
                hint="publish into another table, or cast the column in the table first")
    return tuple(f.name for f in new_schema if f.name not in have)


def _with_run_columns(table: pa.Table, *, run_id: str, run_date: date, signature: str,
                      labels: tuple[tuple[str, str], ...], what: str) -> pa.Table:
    folded = {c.casefold(): c for c in table.column_names}
    clash = [k for k, _ in labels if k.casefold() in folded]
    if clash:
        column = folded[clash[0].casefold()]
        same = "" if column == clash[0] else f" (as {column!r}: readers such as DuckDB, " \
                                             "Trino and Spark ignore case)"
        raise ConfigError(f"label {clash[0]!r} is also a column of the run's {what}{same}; "
                          "choose another key")
    if RUN_ID_COLUMN in table.column_names:
        table = table.drop_columns([RUN_ID_COLUMN])
    for name in (RUN_DATE_COLUMN, SIGNATURE_COLUMN):
        if name in table.column_names:
            raise InputError(f"the run's {what} already have a {name!r} column")
    n = table.num_rows
    front = {
        RUN_ID_COLUMN: pa.array([run_id] * n, pa.string()),
        RUN_DATE_COLUMN: pa.array([run_date] * n, pa.date32()),
        SIGNATURE_COLUMN: pa.array([signature] * n, pa.string()),
        **{k: pa.array([v] * n, pa.string()) for k, v in labels},
    }
    columns = [*front.values(), *table.columns]
    names = [*front, *table.column_names]
    seen: dict[str, str] = {}
    for name in names:
        if name.casefold() in seen:
            raise InputError(f"the run's {what} have columns {seen[name.casefold()]!r} and "
                             f"{name!r}, one column for readers that ignore case (DuckDB, "
                             "Trino, Spark)")
        seen[name.casefold()] = name
    out = pa.Table.from_arrays(columns, names=names)
    return out.cast(pa.schema([pa.field(f.name, warehouse_type(f.type)) for f in out.schema]))


def load_run(path: str, *, labels: Sequence[str] = (), run_date: str | None = None
             ) -> RunTables:
    """Read a complete run directory into the rows to publish.

    Args:
        path: the run directory (local path or URI), as written by ``overlap score``.
        labels: ``KEY=VALUE`` strings (see :func:`parse_labels`).
        run_date: ``YYYY-MM-DD``; default: the UTC date of the manifest's ``started_at``.

    Returns:
        A :class:`RunTables`.

    Raises:
        InputError: not a complete run (no ``_SUCCESS``), unreadable files, no run id.
        ConfigError: bad labels or date, or a label that is also a column of the run.

    """
    from pipeline.io import runs

    parsed = parse_labels(labels)
    day = parse_run_date(run_date) if run_date is not None else None
    run = runs.open_run(path)
    if not run.run_id:
        raise InputError(f"{path}/manifest.json has no run_id")
    day = day or _run_date_of(run.manifest, path)
    try:
        # no partitioning: a run directory may sit under key=value directories (nightly.sh)
        examples = pq.read_table(list(run.files), filesystem=run.fs, partitioning=None)
        with run.fs.open_input_file(f"{run.root}/aggregate.parquet") as fh:
            aggregates = pq.read_table(fh)
    except (OSError, pa.ArrowException) as err:
        raise InputError(f"cannot read {path}: {err}") from err
    signature = str(run.signature)
    fingerprint = _fingerprint(run, day=day, signature=signature, labels=parsed)
    tables = {
        EXAMPLES_TABLE: _with_run_columns(examples.replace_schema_metadata(None),
                                          run_id=run.run_id, run_date=day,
                                          signature=signature, labels=parsed, what="examples"),
        AGGREGATES_TABLE: _with_run_columns(aggregates.replace_schema_metadata(None),
                                            run_id=run.run_id, run_date=day,
                                            signature=signature, labels=parsed,
                                            what="aggregate"),
    }
    return RunTables(run_id=run.run_id, run_date=day, signature=signature, labels=parsed,
                     tables=tables, fingerprint=fingerprint)


def _fingerprint(run: Any, *, day: date, signature: str,
                 labels: tuple[tuple[str, str], ...]) -> str:
    """SHA-256 over the run's identity and its files' checksums (see :class:`RunTables`).

    The checksums come from the run's verification (``RunInfo.checksums``); a run scored
    before they were recorded has its files hashed here.
    """
    import hashlib
    import posixpath

    from pipeline.io.checksum import file_sha256
    from pipeline.io.runs import AGGREGATE_NAME

    sums = dict(run.checksums)
    try:
        for name in [*run.files, posixpath.join(run.root, AGGREGATE_NAME)]:
            rel = posixpath.relpath(name, run.root)
            if rel not in sums:
                sums[rel] = file_sha256(run.fs, name)
    except OSError as err:
        raise InputError(f"cannot read {run.path}: {err}") from err
    text = json.dumps({"run_id": run.run_id, "run_date": day.isoformat(),
                       "signature": signature, "labels": [list(kv) for kv in labels],
                       "files": sorted(sums.items())}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def after_commit(fmt: str, table: str) -> None:
    """Test hook: SIGKILL this process after ``fmt.table``'s commit if asked to.

    Reads :data:`FAULTS_ENV_VAR` (JSON ``{"kill_after": "delta.examples"}``); does nothing
    when it is unset.

    Raises:
        ConfigError: the variable is set but not such an object.

    """
    text = os.environ.get(FAULTS_ENV_VAR, "").strip()
    if not text:
        return
    try:
        spec = json.loads(text)
        target = spec["kill_after"]
    except (ValueError, KeyError, TypeError):
        raise ConfigError(f"{FAULTS_ENV_VAR}: expected {{\"kill_after\": \"FORMAT.TABLE\"}}, "
                          f"got {text!r}") from None
    if target == f"{fmt}.{table}":
        os.kill(os.getpid(), signal.SIGKILL)


__all__ = ["AGGREGATES_TABLE", "EXAMPLES_TABLE", "FINGERPRINT_KEY", "RUN_ID_KEY", "TABLES",
           "PublishedTable", "RunConflictError", "RunTables", "SchemaChangeError",
           "after_commit", "cast_for", "check_additive", "conflict", "format_type", "load_run",
           "parse_labels", "parse_run_date", "type_name", "warehouse_type"]
