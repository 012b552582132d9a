"""Reading inputs: every file's footer up front, then row-group ranges on the workers.

Footers are read once on the driver (in a small thread pool: it is I/O), which names any
unreadable file before work starts and gives row counts without reading data.

Input formats, by the file name's extension (:func:`input_format`): Parquet (any name but
the ones below), CSV (``.csv``) and JSON Lines (``.jsonl``, ``.ndjson``, ``.json``: one
object per line, as HF datasets' ``to_json`` writes), the two text formats read with
pyarrow's own readers (``pyarrow.csv``, ``pyarrow.json``). A text file has no footer: it is
read whole where a footer would be, and is one "row group" (one task reads all of it; for
inputs larger than memory, use Parquet). Columns and checks are those of Parquet
(:mod:`pipeline.io.schema`), with two rules of the formats:

- CSV has no types: every CSV column is read as text (a header row names the columns;
  quoted values may hold newlines). Ids are then strings ("007" stays "007"), group columns
  group as text. A list of references is a JSON array of strings in one cell
  (``"[""the cat sat"", ""a cat sat""]"``), see :func:`pipeline.io.schema.resolve_inputs`.
- JSON Lines has JSON's types: numbers, strings, and real lists (``"references": ["a",
  "b"]``); an id column of numbers is an integer id.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipeline.errors import InputError
from pipeline.io.files import Location, locate

# file name extension -> format (anything else is Parquet)
TEXT_FORMATS = {".csv": "csv", ".jsonl": "json", ".ndjson": "json", ".json": "json"}
# pyarrow's JSON reader needs each line within one block (its default is 1 MiB)
JSON_BLOCK_BYTES = 64 << 20
CONVERT_HINT = ("rename a CSV or JSON Lines file so, or convert it, e.g. "
                "pandas.read_csv(PATH).to_parquet('preds.parquet')")
JSON_HINT = ('JSON Lines holds one object per line, e.g. {"id": "a", "prediction": "...", '
             '"references": ["..."]}')


def input_format(path: str) -> str:
    """The format of an input file by its name: ``parquet``, ``csv`` or ``json`` (Lines).

    Args:
        path: the file's path or URI.

    Returns:
        ``csv`` for ``*.csv``, ``json`` for ``*.jsonl``, ``*.ndjson`` and ``*.json`` (case
        ignored), else ``parquet``.

    """
    return TEXT_FORMATS.get(posixpath.splitext(path)[1].lower(), "parquet")


def read_text_file(loc: Location, *, what: str, columns: Sequence[str] | None = None
                   ) -> pa.Table:
    """Read a whole CSV or JSON Lines file with pyarrow's readers (see the module notes).

    Args:
        loc: the file (``*.csv``, ``*.jsonl``, ``*.ndjson`` or ``*.json``).
        what: the input's name for errors (``predictions`` or ``references``).
        columns: the columns to return (all when None), in this order.

    Returns:
        The table: CSV columns all ``string``; JSON columns with the types pyarrow infers.

    Raises:
        InputError: the file cannot be opened or parsed (names the file and, from pyarrow,
            the row or column), or lacks one of ``columns``.

    """
    import pyarrow.csv as pacsv
    import pyarrow.json as pajson

    kind = input_format(loc.path)
    try:
        if kind == "csv":
            parse = pacsv.ParseOptions(newlines_in_values=True)
            with loc.fs.open_input_stream(loc.path) as fh:
                names = pacsv.open_csv(fh, parse_options=parse).schema.names
            missing = [c for c in columns or () if c not in names]
            if missing:
                raise InputError(f"{what}: {loc.uri} has no column {missing[0]!r}; its "
                                 f"columns: {', '.join(names)}")
            convert = pacsv.ConvertOptions(
                column_types={n: pa.string() for n in names}, strings_can_be_null=False,
                include_columns=list(columns) if columns is not None else None)
            with loc.fs.open_input_stream(loc.path) as fh:
                table = pacsv.read_csv(fh, parse_options=parse, convert_options=convert)
        else:
            with loc.fs.open_input_stream(loc.path) as fh:
                table = pajson.read_json(
                    fh, read_options=pajson.ReadOptions(block_size=JSON_BLOCK_BYTES))
    except (OSError, pa.ArrowException) as e:
        name = "CSV" if kind == "csv" else "JSON Lines"
        raise InputError(f"{what}: {loc.uri} is not a readable {name} file "
                         f"({str(e).splitlines()[0] if str(e) else type(e).__name__})",
                         hint=None if kind == "csv" else JSON_HINT) from None
    if columns is None:
        return table
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise InputError(f"{what}: {loc.uri} has no column {missing[0]!r}; its columns: "
                         f"{', '.join(table.column_names)}")
    return table.select(list(columns))


def input_dataset(fs: pafs.FileSystem, paths: Sequence[str], *, what: str) -> Any:
    """A ``pyarrow.dataset`` over input files of any format, to look some rows up.

    Parquet files are a Parquet dataset (read lazily, filters pushed down); when any file
    is CSV or JSON Lines (:func:`input_format`), every file is read whole into one
    in-memory dataset (CSV columns as text, as a run reads them).

    Args:
        fs: the files' filesystem.
        paths: the files' paths on ``fs``, at least one.
        what: the input's name for errors.

    Raises:
        InputError: a CSV or JSON Lines file that cannot be read.

    """
    import pyarrow.dataset as pads

    if all(input_format(p) == "parquet" for p in paths):
        return pads.dataset(list(paths) if len(paths) > 1 else paths[0], format="parquet",
                            filesystem=fs)
    tables = []
    for p in paths:
        if input_format(p) == "parquet":
            with fs.open_input_file(p) as fh:
                tables.append(pq.read_table(fh))
        else:
            tables.append(read_text_file(Location(fs, p, p), what=what))
    return pads.dataset(pa.concat_tables(tables, promote_options="permissive"))


@dataclass(frozen=True)
class InputFile:
    """One input Parquet file, as its footer describes it.

    Attributes:
        uri: where it is (see :class:`pipeline.io.files.Location`).
        size_bytes: file size in bytes.
        num_rows: rows in the file.
        row_group_rows: rows per row group, in file order (sums to ``num_rows``).
        schema: the Arrow schema.
        mtime_ns: modification time in ns since the epoch, None when the storage has none
            (part of a run's resume key: a rewritten input is never mistaken for the old).

    """

    uri: str
    size_bytes: int
    num_rows: int
    row_group_rows: tuple[int, ...]
    schema: pa.Schema
    mtime_ns: int | None = None


def read_footer(loc: Location, *, what: str) -> InputFile:
    """Read one file's Parquet footer.

    Args:
        loc: the file.
        what: the input's name for errors (``predictions`` or ``references``).

    A CSV or JSON Lines file (:func:`input_format`) is read whole: its schema, its rows,
    and one row group holding them all.

    Raises:
        InputError: the file cannot be opened or is not Parquet, CSV or JSON Lines as its
            name says (names the file; for another format the hint names the conversion).

    """
    if input_format(loc.path) != "parquet":
        table = read_text_file(loc, what=what)
        try:
            info = loc.fs.get_file_info(loc.path)
        except OSError as e:
            raise InputError(f"{what}: cannot access {loc.uri}: {e}") from None
        rows = (table.num_rows,) if table.num_rows else ()
        return InputFile(loc.uri, int(info.size or 0), table.num_rows, rows, table.schema,
                         info.mtime_ns)
    try:
        info = loc.fs.get_file_info(loc.path)
        with loc.fs.open_input_file(loc.path) as fh:
            pf = pq.ParquetFile(fh)
            meta = pf.metadata
            schema = pf.schema_arrow
    except (OSError, pa.ArrowException) as e:
        if "magic bytes" in str(e) and not loc.path.lower().endswith((".parquet", ".parq")):
            raise InputError(f"{what}: {loc.uri} is neither Parquet nor named *.csv, *.jsonl "
                             "or *.ndjson", hint=CONVERT_HINT) from None
        raise InputError(f"{what}: {loc.uri} is not a readable Parquet file ({e})") from None
    rows = tuple(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
    return InputFile(loc.uri, int(info.size or 0), int(meta.num_rows), rows, schema,
                     info.mtime_ns)


def read_footers(locations: Sequence[Location], *, what: str) -> list[InputFile]:
    """Read the footers of many files, in the order given.

    Raises:
        InputError: the first unreadable file, by name.

    """
    if len(locations) <= 1:
        return [read_footer(loc, what=what) for loc in locations]
    with ThreadPoolExecutor(max_workers=min(16, len(locations))) as pool:
        return list(pool.map(lambda loc: read_footer(loc, what=what), locations))


def check_unchanged(loc: Location, *, size_bytes: int | None, mtime_ns: int | None,
                    what: str) -> None:
    """Check that a file is still the one whose footer planned the run.

    A run's plan and its manifest describe each input by its footer, size and modification
    time; rows read from a file rewritten since then would be scored under the old file's
    description. Called after the rows are read, so that a rewrite before or during the
    read is seen (a rewrite keeping both the size and the modification time is not).

    Args:
        loc: the file.
        size_bytes: its size when planned (None: not checked).
        mtime_ns: its modification time when planned, ns (None: not checked; storages
            without one report None).
        what: ``predictions`` or ``references``, for the message.

    Raises:
        InputError: the file is gone, or its size or modification time changed (names
            the file; exit 2: the run is refused and writes nothing of its own; running the
            command again plans the new content).

    """
    if size_bytes is None and mtime_ns is None:
        return
    try:
        info = loc.fs.get_file_info(loc.path)
    except OSError as e:
        raise InputError(f"{what}: cannot check {loc.uri} after reading it: {e}") from None
    gone = info.type != pafs.FileType.File
    if not gone and (size_bytes is None or info.size == size_bytes) \
            and (mtime_ns is None or info.mtime_ns is None or info.mtime_ns == mtime_ns):
        return
    now = "it is gone" if gone else f"now {info.size} bytes, modified {_when(info.mtime_ns)}"
    raise InputError(f"{what}: {loc.uri} changed while the run read it (planned from "
                     f"{size_bytes} bytes, modified {_when(mtime_ns)}; {now}); the run stops "
                     "without scoring it", hint="run the command again once nothing writes "
                     "to the input")


def _when(mtime_ns: int | None) -> str:
    if mtime_ns is None:
        return "at an unknown time"
    stamp = datetime.fromtimestamp(mtime_ns / 1e9, tz=timezone.utc)
    return stamp.isoformat(timespec="microseconds").replace("+00:00", "Z")


def read_row_groups(uri: str, row_groups: Sequence[int], columns: Sequence[str], *,
                    size_bytes: int | None = None, mtime_ns: int | None = None,
                    what: str = "input") -> pa.Table:
    """Read some row groups and columns of one file.

    Args:
        uri: the file.
        row_groups: row group indices, ascending.
        columns: column names to read (others are not read at all).
        size_bytes: the file's size when planned; with ``mtime_ns``, checked after the read
            (:func:`check_unchanged`).
        mtime_ns: the file's modification time when planned.
        what: ``predictions`` or ``references``, for messages.

    Raises:
        InputError: the file cannot be read, or changed since it was planned (names the
            file).

    """
    loc = locate(uri)
    if input_format(loc.path) != "parquet":
        table = read_text_file(loc, what=what, columns=columns)
        check_unchanged(loc, size_bytes=size_bytes, mtime_ns=mtime_ns, what=what)
        return table if list(row_groups) == [0] else table.slice(0, 0)
    try:
        with loc.fs.open_input_file(loc.path) as fh:
            table = pq.ParquetFile(fh).read_row_groups(list(row_groups),
                                                       columns=list(columns),
                                                       use_threads=False)
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"cannot read {uri}: {e}") from None
    check_unchanged(loc, size_bytes=size_bytes, mtime_ns=mtime_ns, what=what)
    return table


def iter_row_groups(uri: str, row_groups: Sequence[int], columns: Sequence[str], *,
                    slice_rows: int, size_bytes: int | None = None,
                    mtime_ns: int | None = None, what: str = "input") -> Iterator[pa.Table]:
    """Read some row groups and columns of one file in slices of at most ``slice_rows`` rows.

    The rows come in file order; at most one slice (and the reader's buffers) is held at a
    time, whatever the size of the row groups. After the last slice the file is checked to
    be the one planned (:func:`check_unchanged`), as :func:`read_row_groups` does: a caller
    must not take the slices for good before the iteration ends.

    Args:
        uri: the file.
        row_groups: row group indices, ascending.
        columns: column names to read (others are not read at all).
        slice_rows: rows per slice, >= 1.
        size_bytes: the file's size when planned (see :func:`read_row_groups`).
        mtime_ns: the file's modification time when planned.
        what: ``predictions`` or ``references``, for messages.

    Raises:
        InputError: the file cannot be read, or changed since it was planned (names the
            file).

    """
    loc = locate(uri)
    if input_format(loc.path) != "parquet":
        table = read_row_groups(uri, row_groups, columns, what=what)
        for start in range(0, table.num_rows, slice_rows):
            yield table.slice(start, slice_rows)
        check_unchanged(loc, size_bytes=size_bytes, mtime_ns=mtime_ns, what=what)
        return
    try:
        with loc.fs.open_input_file(loc.path) as fh:
            for batch in pq.ParquetFile(fh).iter_batches(
                    batch_size=slice_rows, row_groups=list(row_groups), columns=list(columns),
                    use_threads=False):
                yield pa.Table.from_batches([batch])
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"cannot read {uri}: {e}") from None
    check_unchanged(loc, size_bytes=size_bytes, mtime_ns=mtime_ns, what=what)


def read_columns(locations: Sequence[Location], columns: Sequence[str]) -> pa.Table:
    """Read the same columns of several files into one table (files in the order given).

    Used for aggregation: only numeric and group columns are asked for, never text.

    Raises:
        InputError: a file cannot be read.

    """
    tables = []
    for loc in locations:
        try:
            with loc.fs.open_input_file(loc.path) as fh:
                tables.append(pq.ParquetFile(fh).read(columns=list(columns)))
        except (OSError, pa.ArrowException) as e:
            raise InputError(f"cannot read {loc.uri}: {e}") from None
    return pa.concat_tables(tables) if len(tables) != 1 else tables[0]
