"""Input columns and layouts, and the schema of the per-example output.

Reference layouts (``InputSpec.layout``):

| layout | where the references are |
|---|---|
| ``inline`` | a list<string> column of the predictions table (no ``--references``) |
| ``list`` | a separate table keyed by id, one list<string> per id |
| ``rows`` | a separate table keyed by id, one row per reference (a string column) |

In a CSV file (every column text, see :mod:`pipeline.io.read`), a list of references is a
JSON array of strings in one cell, ``["the cat sat", "a cat sat"]`` (CSV quoting doubles
the quotes: ``"[""the cat sat"", ""a cat sat""]"``): the references column of a predictions
CSV (``inline``), and a column named ``references`` in a references CSV (``list``); an empty
cell is no reference. Any other references column of a references CSV holds one reference
per row (``rows``: repeat the id for several). JSON Lines files have real lists.

Text is read as ``large_string`` (64-bit offsets: a partition may exceed 2 GiB of text),
ids as ``large_string`` or ``int64``. Encoded columns (dictionary, as pandas writes a
``Categorical``; ``string_view`` and the other views) are taken as their plain type
(:func:`plain_type`) and cast when read.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import to_numpy
from pipeline.errors import ConfigError, InputError
from pipeline.io.read import InputFile, input_format, missing_column

LAYOUTS = ("inline", "list", "rows")
SIGNATURE_KEY = b"overlap.signature"
RUN_ID_KEY = b"overlap.run_id"
RUN_ID_COLUMN = "run_id"
# The prediction text in the examples (``--keep-text``), whatever the input column's name.
TEXT_COLUMN = "prediction"
# Per-example bool: a text of the example was cut at ``max_tokens`` tokens.
TRUNCATED_COLUMN = "truncated"
# Names the pipeline writes itself; ride-along columns may not use them.
RESERVED_COLUMNS = (RUN_ID_COLUMN, "n_references", TRUNCATED_COLUMN)
# The columns of aggregate.parquet besides the group columns.
AGGREGATE_COLUMNS = ("scope", "metric", "measure", "statistic", "threshold", "mean", "ci_low",
                     "ci_high", "n_examples")


class InputSettings(Protocol):
    """The settings :func:`resolve_inputs` reads (a :class:`pipeline.config.ScoreConfig`)."""

    @property
    def id_column(self) -> str: ...  # noqa: D102
    @property
    def prediction_column(self) -> str: ...  # noqa: D102
    @property
    def reference_column(self) -> str | None: ...  # noqa: D102
    @property
    def group_by(self) -> tuple[str, ...]: ...  # noqa: D102
    @property
    def keep_columns(self) -> tuple[str, ...]: ...  # noqa: D102
    @property
    def keep_text(self) -> bool: ...  # noqa: D102
    @property
    def on_missing(self) -> str: ...  # noqa: D102
    @property
    def on_empty_references(self) -> str: ...  # noqa: D102


@dataclass(frozen=True)
class InputSpec:
    """The resolved columns and layout of a run's inputs.

    Attributes:
        id_column: id column name (same on both sides).
        id_kind: ``string`` or ``integer``.
        prediction_column: prediction text column.
        reference_column: the references column (list or string, per ``layout``).
        layout: one of ``LAYOUTS``.
        carry_columns: predictions columns copied to the examples (group-by first).
        carry_types: their Arrow types: as in the input (dictionary and view columns
            decoded, see :func:`plain_type`), or when files differ in the type
            (``string`` here, ``large_string`` there) the widest of the kind
            (``large_string``, ``int64``, ``large_list<large_string>``).
        keep_text: copy the prediction text to the examples.
        on_missing: ``error``, ``skip`` or ``zero`` (see :class:`pipeline.config.ScoreConfig`).
        on_empty_references: ``error`` or ``skip``.
        references_json: the references column is CSV text, each value a JSON array of
            strings, decoded into a list when read (:func:`normalize`).

    """

    id_column: str
    id_kind: str
    prediction_column: str
    reference_column: str
    layout: str
    carry_columns: tuple[str, ...]
    carry_types: tuple[pa.DataType, ...]
    keep_text: bool
    on_missing: str = "error"
    on_empty_references: str = "error"
    references_json: bool = False

    @property
    def prediction_read_columns(self) -> tuple[str, ...]:
        """Columns read from each predictions file."""
        cols = (self.id_column, self.prediction_column) + self.carry_columns
        return cols + ((self.reference_column,) if self.layout == "inline" else ())

    @property
    def reference_read_columns(self) -> tuple[str, ...]:
        """Columns read from each references file (none for ``inline``)."""
        return () if self.layout == "inline" else (self.id_column, self.reference_column)

    def id_type(self) -> pa.DataType:
        """Return the normalized id type (``large_string`` or ``int64``)."""
        return pa.large_string() if self.id_kind == "string" else pa.int64()


def plain_type(t: pa.DataType) -> pa.DataType:
    """The type an input column is read as when it is stored encoded.

    A dictionary column (a pandas ``Categorical``) is read as its values' type, a view
    (``string_view``, ``binary_view``, ``list_view``) as the 64-bit-offset type of the same
    values (``large_string``, ``large_binary``, ``large_list``), and lists of those as lists
    of the plain type; every other type is kept. The values are the same: the pipeline
    casts each column with ``pyarrow.compute.cast`` when it is read
    (:func:`normalize`), so an encoded column scores and groups as the plain one.

    Args:
        t: the column's Arrow type in the file.

    Returns:
        The plain type (``t`` itself when it is not encoded).

    """
    if pa.types.is_dictionary(t):
        return plain_type(t.value_type)
    if pa.types.is_string_view(t):
        return pa.large_string()
    if pa.types.is_binary_view(t):
        return pa.large_binary()
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.large_list(plain_type(t.value_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        value = plain_type(t.value_type)
        if value != t.value_type:
            return (pa.list_ if pa.types.is_list(t) else pa.large_list)(value)
    return t


def _is_text(t: pa.DataType) -> bool:
    t = plain_type(t)
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_text_list(t: pa.DataType) -> bool:
    t = plain_type(t)
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and _is_text(t.value_type)


def _id_kind(t: pa.DataType) -> str | None:
    t = plain_type(t)
    if _is_text(t):
        return "string"
    if pa.types.is_integer(t):
        return "integer"
    return None


def _column_type(files: Sequence[InputFile], column: str, *, what: str,
                 ) -> tuple[pa.DataType, str]:
    """Return the column's type and the first file's name, checking every file has it alike.

    Raises:
        InputError: a file lacks the column (lists the columns it has) or types differ.

    """
    first: tuple[str, pa.DataType] | None = None
    for f in files:
        idx = f.schema.get_field_index(column)
        if idx < 0:  # absent, or there twice
            raise missing_column(what, f.uri, column, list(f.schema.names))
        t = f.schema.field(idx).type
        if first is None:
            first = (f.uri, t)
        elif not _same_kind(first[1], t):
            raise InputError(f"{what}: column {column!r} is {first[1]} in {first[0]} but {t} "
                             f"in {f.uri}")
    assert first is not None  # callers pass at least one file
    return first[1], first[0]


def _same_kind(a: pa.DataType, b: pa.DataType) -> bool:
    a, b = plain_type(a), plain_type(b)
    if a == b:
        return True
    if _is_text(a) and _is_text(b):
        return True
    if _is_text_list(a) and _is_text_list(b):
        return True
    return pa.types.is_integer(a) and pa.types.is_integer(b)


def resolve_inputs(config: InputSettings, predictions: Sequence[InputFile],
                   references: Sequence[InputFile] | None, *,
                   written_columns: Collection[str] = ()) -> InputSpec:
    """Check the inputs' columns against the settings and pick the reference layout.

    Args:
        config: the run's settings (column names, group-by and kept columns).
        predictions: footers of the predictions files (at least one).
        references: footers of the references files, or None when the references are a
            list column of the predictions table.
        written_columns: the metric and threshold columns the run writes into the examples
            (besides ``run_id``, ``n_references`` and ``truncated``): no ride-along column
            may take their names.

    Raises:
        InputError: a missing column (naming the file and the columns it has), a column of
            the wrong type, or types differing between files; a group-by column of a type
            that does not group (lists, structs, maps); a ``--language column:COL`` column
            that is not a string column.
        ConfigError: a ride-along column named like an output column (or, for a group-by
            column, like a column of aggregate.parquet).

    """
    id_col = config.id_column
    pred_col = config.prediction_column
    id_t, uri = _column_type(predictions, id_col, what="predictions")
    kind = _id_kind(id_t)
    if kind is None:
        raise InputError(f"predictions: id column {id_col!r} is {id_t} in {uri}; expected "
                         "strings or integers")
    pred_t, uri = _column_type(predictions, pred_col, what="predictions")
    if not _is_text(pred_t):
        raise InputError(f"predictions: column {pred_col!r} is {pred_t} in {uri}; expected "
                         "strings")

    if references is None:
        ref_col = config.reference_column or "references"
        if predictions[0].schema.get_field_index(ref_col) < 0 and not config.reference_column:
            names = list(predictions[0].schema.names)
            raise InputError(f"predictions: {predictions[0].uri} has no {ref_col!r} "
                             f"list column and no --references table was given; its columns: "
                             f"{', '.join(names)}")
        ref_t, uri = _column_type(predictions, ref_col, what="predictions")
        references_json = _is_text(ref_t) and _all_csv(predictions)
        if not _is_text_list(ref_t) and not references_json:
            raise InputError(f"predictions: references column {ref_col!r} is {ref_t} in "
                             f"{uri}; expected list<string> (or give a separate --references "
                             "table)")
        layout = "inline"
    else:
        ref_col = config.reference_column or _guess_reference_column(references[0])
        ref_id_t, ref_uri = _column_type(references, id_col, what="references")
        if _id_kind(ref_id_t) != kind:
            csv = _all_csv(predictions) or _all_csv(references)
            raise InputError(f"references: id column {id_col!r} is {ref_id_t} in {ref_uri} "
                             f"but {id_t} in predictions; ids must have the same type on both "
                             "sides", hint="a CSV file's ids are text: give the other side's "
                             "ids as text too" if csv else None)
        ref_t, ref_uri = _column_type(references, ref_col, what="references")
        references_json = (_is_text(ref_t) and ref_col == "references"
                           and _all_csv(references))
        if _is_text_list(ref_t) or references_json:
            layout = "list"
        elif _is_text(ref_t):
            layout = "rows"
        else:
            raise InputError(f"references: column {ref_col!r} is {ref_t} in {ref_uri}; "
                             "expected list<string> (a list per id) or string (one row per "
                             "reference)")

    carry = tuple(config.group_by) + tuple(c for c in config.keep_columns
                                           if c not in config.group_by)
    # columns the scoring reads (--language column:COL) ride along to the examples too
    scoring: Any = getattr(config, "scoring", None)
    read = scoring.input_columns() if hasattr(scoring, "input_columns") else ()
    carry += tuple(c for c in read if c not in carry)
    # id, text and output columns: none of them can ride along
    taken = {*RESERVED_COLUMNS, *written_columns, id_col, pred_col, ref_col,
             *((TEXT_COLUMN,) if config.keep_text else ())}
    for c in carry:
        if c in taken:
            if c not in config.group_by and c not in config.keep_columns:  # read alone
                raise ConfigError(f"--language column:{c}: column {c!r} is an id, text or "
                                  "output column, not a language column",
                                  hint="name the column holding each row's language")
            raise ConfigError(f"cannot group by or keep column {c!r}: it is an id, text or "
                              "output column", hint="rename it in the input")
        if c in config.group_by and c in AGGREGATE_COLUMNS:
            raise ConfigError(f"cannot group by column {c!r}: aggregate.parquet has a column "
                              "of that name", hint="rename it in the input")
    carry_types = tuple(_carry_type(predictions, c) for c in carry)
    for c, t in zip(carry, carry_types, strict=True):
        if c in read and not _is_text(t):
            raise InputError(f"predictions: --language column:{c} needs a string column; "
                             f"column {c!r} is {t}", hint="give each row's language name "
                             "as a string")
        if c in config.group_by and not _groupable(t):
            raise InputError(f"predictions: cannot group by column {c!r} of type {t}: group "
                             "columns hold strings, numbers, booleans, dates or times",
                             hint="keep it with --keep-columns instead")
    return InputSpec(id_col, kind, pred_col, ref_col, layout, carry, carry_types,
                     config.keep_text, on_missing=config.on_missing,
                     on_empty_references=config.on_empty_references,
                     references_json=references_json)


def _all_csv(files: Sequence[InputFile]) -> bool:
    return all(input_format(f.uri) == "csv" for f in files)


def decode_reference_lists(column: pa.ChunkedArray | pa.Array, ids: pa.ChunkedArray, *,
                           side: str, uri: str, name: str) -> pa.Array:
    """Decode CSV cells holding JSON arrays of reference texts into a list column.

    Args:
        column: N strings, each a JSON array of strings (``null`` items allowed, as in a
            Parquet list); an empty or blank cell is no reference (a null list).
        ids: the N ids, for the message.
        side: ``predictions`` or ``references``, for the message.
        uri: the file, for the message.
        name: the column's name, for the message.

    Returns:
        ``large_list<large_string>`` (N,).

    Raises:
        InputError: a cell that is not a JSON array of strings (names the file, the column,
            the id and the data row, 1 = the first row after the header).

    """
    out: list[list[str | None] | None] = []
    for i, cell in enumerate(column.to_pylist()):
        if cell is None or not cell.strip():
            out.append(None)
            continue
        try:
            value = json.loads(cell)
        except (ValueError, RecursionError):  # RecursionError: nested past the stack
            value = None
        if not isinstance(value, list) or not all(v is None or isinstance(v, str)
                                                  for v in value):
            shown = cell if len(cell) <= 40 else cell[:37] + "..."
            raise InputError(f"{side}: column {name!r} of {uri} is not a JSON array of "
                             f"strings at id {ids[i].as_py()!r} (data row {i + 1}): "
                             f"{shown!r}", hint="in a CSV file a list of references is one "
                             'cell like ["first reference", "second"]; pandas writes it with '
                             "df[COLUMN].map(json.dumps)")
        out.append(value)
    return pa.array(out, pa.large_list(pa.large_string()))


def _groupable(t: pa.DataType) -> bool:
    """Types whose values form groups (scalars that Arrow can hash and sort)."""
    t = plain_type(t)
    return (_is_text(t) or pa.types.is_integer(t) or pa.types.is_floating(t)
            or pa.types.is_boolean(t) or pa.types.is_temporal(t) or pa.types.is_decimal(t)
            or pa.types.is_binary(t) or pa.types.is_large_binary(t))


def _carry_type(files: Sequence[InputFile], column: str) -> pa.DataType:
    """The input type of a ride-along column, widened when files differ (see InputSpec)."""
    t = _column_type(files, column, what="predictions")[0]
    if all(f.schema.field(column).type == t for f in files):
        return plain_type(t)
    t = plain_type(t)
    if _is_text(t):
        return pa.large_string()
    if pa.types.is_integer(t):
        return pa.int64()
    if _is_text_list(t):
        return pa.large_list(pa.large_string())
    return t


def _guess_reference_column(f: InputFile) -> str:
    for name in ("references", "reference"):
        if f.schema.get_field_index(name) >= 0:
            return name
    raise InputError(f"references: {f.uri} has neither a 'references' (list) nor a "
                     f"'reference' (string) column; its columns: {', '.join(f.schema.names)}",
                     hint="name it with --reference-column")


def normalize(table: pa.Table, spec: InputSpec, *, side: str, uri: str) -> pa.Table:
    """Cast a table read from one input file to the normalized types.

    ids to ``large_string``/``int64``, texts to ``large_string``, reference lists to
    ``large_list<large_string>``; ride-along columns to ``spec.carry_types`` (files may
    differ, e.g. ``string`` in one and ``large_string`` in another).

    Args:
        table: columns ``spec.prediction_read_columns`` or ``spec.reference_read_columns``.
        spec: the resolved inputs.
        side: ``predictions`` or ``references``.
        uri: the file read, for messages.

    Raises:
        InputError: a value that does not fit the normalized type (e.g. a uint64 id above
            2**63 - 1).

    """
    text_list = pa.large_list(pa.large_string())
    casts = {spec.id_column: spec.id_type()}
    if side == "predictions":
        casts[spec.prediction_column] = pa.large_string()
        if spec.layout == "inline":
            casts[spec.reference_column] = text_list
    else:
        casts[spec.reference_column] = text_list if spec.layout == "list" else pa.large_string()
    if side == "predictions":
        casts.update(zip(spec.carry_columns, spec.carry_types, strict=True))
    decode = None
    if spec.references_json and (side == "predictions") == (spec.layout == "inline"):
        decode = spec.reference_column
    columns = []
    for name, col in zip(table.column_names, table.columns, strict=True):
        target = casts.get(name)
        if name == decode and _is_text(col.type):
            columns.append(decode_reference_lists(col, table.column(spec.id_column),
                                                  side=side, uri=uri, name=name))
            continue
        if target is None or col.type == target:
            columns.append(col)
            continue
        try:
            columns.append(pc.cast(col, target))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InputError(f"{side}: column {name!r} of {uri} ({col.type}) does not fit "
                             f"{target}: {str(e).splitlines()[0]}") from None
    return pa.table(columns, names=table.column_names)


def check_utf8(table: pa.Table, spec: InputSpec, *, uri: str, side: str) -> None:
    """Check that the id and text columns of a table read from one file are valid UTF-8.

    Parquet readers do not check it, and an invalid byte would otherwise fail deep inside
    scoring. Costs one pass over the bytes; the rows are looked for only on failure.

    Args:
        table: as read from ``uri`` (``spec.prediction_read_columns`` or
            ``spec.reference_read_columns``).
        spec: the resolved inputs.
        uri: the file, for the message.
        side: ``predictions`` or ``references``.

    Raises:
        InputError: names the file, the column, the count of rows and up to 5 of their ids.

    """
    names = [spec.id_column] if spec.id_kind == "string" else []
    names += [spec.prediction_column] if side == "predictions" else []
    if spec.layout == "inline" or side == "references":
        names += [spec.reference_column] if spec.reference_column in table.column_names else []
    for name in names:
        column = table.column(name)
        if plain_type(column.type) != column.type:  # dictionary or view: check the values
            column = pc.cast(column, plain_type(column.type))
        try:
            column.validate(full=True)
        except pa.ArrowInvalid:
            bad = _invalid_utf8_rows(column)
            where = (f"rows {', '.join(map(str, bad[:5]))}" if name == spec.id_column else
                     "ids " + ", ".join(repr(i) for i in
                                        table.column(spec.id_column).take(bad[:5]).to_pylist()))
            raise InputError(f"{side}: column {name!r} of {uri} is not valid UTF-8 in "
                             f"{len(bad)} rows ({where}{', ...' if len(bad) > 5 else ''})",
                             hint="re-encode the text as UTF-8") from None


def _invalid_utf8_rows(column: pa.ChunkedArray) -> list[int]:
    """Row numbers of a string or list<string> column whose text is not UTF-8."""
    values = column.combine_chunks()
    parents = None
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        parents = to_numpy(pc.list_parent_indices(values))
        values = pc.list_flatten(values)
    raw = values.view(pa.large_binary() if pa.types.is_large_string(values.type)
                      else pa.binary()).to_pylist()
    bad = []
    for i, b in enumerate(raw):
        try:
            if b is not None:
                b.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(i if parents is None else int(parents[i]))
    return sorted(set(bad))


def example_schema(spec: InputSpec, scorer_schema: pa.Schema,
                   threshold_columns: Sequence[str]) -> pa.Schema:
    """Return the schema of ``examples/part-*.parquet``.

    Columns: ``run_id`` (string), the id (``large_string`` or ``int64``), ride-along columns
    (input types), the prediction text when kept (``prediction``, ``large_string``), the
    scorer's columns
    (``n_references`` and the per-metric columns), the bool ``truncated``, then one bool
    ``passed_...`` per threshold.
    """
    fields = [pa.field(RUN_ID_COLUMN, pa.string()), pa.field(spec.id_column, spec.id_type())]
    fields += [pa.field(c, t)
               for c, t in zip(spec.carry_columns, spec.carry_types, strict=True)]
    if spec.keep_text:
        fields.append(pa.field(TEXT_COLUMN, pa.large_string()))
    fields += list(scorer_schema)
    fields.append(pa.field(TRUNCATED_COLUMN, pa.bool_()))
    fields += [pa.field(c, pa.bool_()) for c in threshold_columns]
    return pa.schema(fields)


__all__ = ["LAYOUTS", "RUN_ID_COLUMN", "RUN_ID_KEY", "SIGNATURE_KEY", "TEXT_COLUMN",
           "TRUNCATED_COLUMN", "InputSettings", "InputSpec", "check_utf8",
           "decode_reference_lists",
           "example_schema", "normalize", "plain_type", "resolve_inputs"]
