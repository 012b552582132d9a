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

Text inputs are read defensively, in :func:`read_text_file` only: a JSON Lines file is
scanned before pyarrow parses it, and a line whose arrays or objects nest deeper than
:data:`MAX_JSON_DEPTH` is refused (pyarrow's reader recurses once per level while it infers
types: 10,000 levels, 20 KB, killed the process with SIGSEGV); CSV is read in blocks of
:data:`TEXT_BLOCK_BYTES`, so that a value up to that size is one cell, not a parse error; a
column name given twice in a header or a schema is named as such.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipeline.errors import InputError, did_you_mean
from pipeline.io.files import Location, locate

# file name extension -> format (anything else is Parquet)
TEXT_FORMATS = {".csv": "csv", ".jsonl": "json", ".ndjson": "json", ".json": "json"}
# pyarrow's JSON and CSV readers need each line (JSON) or each row (CSV) within one block
# (their default is 1 MiB): a 3 MB text in one cell was refused ("straddling object")
TEXT_BLOCK_BYTES = 64 << 20
JSON_BLOCK_BYTES = TEXT_BLOCK_BYTES
# Arrays and objects nested deeper than this in a JSON Lines line are refused before pyarrow
# parses the file (an input needs 2: an object holding a list of strings)
MAX_JSON_DEPTH = 100
# Bytes of a JSON Lines file scanned for nesting at a time (the scan's arrays are ~10x this)
_SCAN_BYTES = 8 << 20
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


def missing_column(what: str, uri: str, column: str, names: Sequence[str]) -> InputError:
    """The error for a column a file lacks, or has twice (one rule for every format).

    Args:
        what: the input's name (``predictions`` or ``references``).
        uri: the file.
        column: the column asked for.
        names: the file's column names, in order.

    Returns:
        An :class:`InputError`: "has the column 'id' twice (columns 1 and 3)" when the name
        is there more than once, else "has no column 'id'; its columns: ..." with a "did you
        mean" hint when one is close.

    """
    where = [i for i, n in enumerate(names, 1) if n == column]
    if len(where) > 1:
        return InputError(f"{what}: {uri} has the column {column!r} twice (columns "
                          f"{', '.join(map(str, where[:-1]))} and {where[-1]}), so it cannot "
                          "tell which one to read", hint="rename or drop all but one")
    return InputError(f"{what}: {uri} has no column {column!r}; its columns: "
                      f"{', '.join(names)}", hint=did_you_mean(column, list(names)))


def json_nesting_depth(line: bytes | memoryview, *, segment_bytes: int = 1 << 20,
                       stop_above: int | None = None) -> int:
    """The deepest nesting of arrays and objects in one JSON text, strings skipped.

    Brackets inside strings are text, and a quote preceded by an odd run of backslashes
    is inside its string. Nothing is parsed: an invalid line gets the depth its valid prefix
    reaches at least (a parser stops at the first error). Vectorised over segments of
    ``segment_bytes`` (the state between them: inside a string or not, the depth, the run
    of backslashes at the end), so that memory stays a few tens of bytes per segment byte
    however long the line.

    Args:
        line: the bytes of one JSON Lines line (UTF-8; bytes of other characters are never
            ``"``, ``\\``, brackets or braces).
        segment_bytes: bytes handled at a time, >= 1.
        stop_above: return as soon as the depth passes this (None: scan it all).

    Returns:
        The depth, >= 0 (``{"a": [1]}``: 2); with ``stop_above``, a depth above it once one
        is found (not necessarily the deepest).

    """
    inside, depth, deepest, run_in = 0, 0, 0, 0
    for start in range(0, len(line), segment_bytes):
        b = np.frombuffer(line, dtype=np.uint8, count=min(segment_bytes, len(line) - start),
                          offset=start)
        positions = np.arange(len(b), dtype=np.int64)
        backslash = b == 0x5C
        # the run of backslashes ending just before each byte (one carried in: a virtual
        # last other byte before the segment)
        last_other = np.maximum.accumulate(np.where(backslash, -1 - run_in, positions))
        run = np.empty(len(b), dtype=np.int64)
        run[0] = run_in
        run[1:] = positions[:-1] - last_other[:-1]
        run_in = int(len(b) - 1 - last_other[-1]) if backslash[-1] else 0
        quote = (b == 0x22) & (run % 2 == 0)
        parity = (np.cumsum(quote, dtype=np.int64) + inside) % 2  # a bracket is no quote
        step = ((b == 0x5B) | (b == 0x7B)).astype(np.int64) - ((b == 0x5D) | (b == 0x7D))
        step[parity == 1] = 0
        levels = np.cumsum(step) + depth
        deepest = max(deepest, int(levels.max()))
        depth, inside = int(levels[-1]), int(parity[-1])
        if stop_above is not None and deepest > stop_above:
            break
    return deepest


def check_json_nesting(data: bytes, *, what: str, uri: str,
                       max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse a JSON Lines text with a line nested deeper than ``max_depth``.

    Vectorised in two steps: lines with at most ``max_depth`` opening brackets (all of a
    usual file) cannot nest deeper and are passed by a count; only the others are scanned
    with strings skipped (:func:`json_nesting_depth`). Time about linear in the bytes,
    memory a few times :data:`_SCAN_BYTES` (the scan goes through the text line-aligned
    pieces at a time).

    Args:
        data: the whole file.
        what: the input's name, for the message.
        uri: the file, for the message.
        max_depth: the deepest nesting allowed, >= 1.

    Raises:
        InputError: names the file, the line (1 = the first) and the limit.

    """
    start, line_no = 0, 1
    while start < len(data):
        end = min(len(data), start + _SCAN_BYTES)
        if end < len(data):
            cut = data.rfind(b"\n", start, end)
            end = cut + 1 if cut >= 0 else (data.find(b"\n", end) + 1 or len(data))
        n_lines = 0
        if end - start > _SCAN_BYTES:  # one line longer than a piece: scanned in segments
            spans = [(start, end)]
            n_lines = 1
        else:
            piece = np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)
            openers = np.flatnonzero((piece == 0x5B) | (piece == 0x7B))
            newlines = np.flatnonzero(piece == 0x0A)
            spans = []
            if len(openers) > max_depth:
                per_line = np.bincount(np.searchsorted(newlines, openers),
                                       minlength=len(newlines) + 1)
                spans = [(start + (0 if i == 0 else int(newlines[i - 1]) + 1),
                          start + (int(newlines[i]) if i < len(newlines) else len(piece)))
                         for i in np.flatnonzero(per_line > max_depth)]
            n_lines = len(newlines)
        for first, last in spans:
            if json_nesting_depth(memoryview(data)[first:last],
                                  stop_above=max_depth) > max_depth:
                line = line_no + data.count(b"\n", start, first)
                raise InputError(
                    f"{what}: {uri} line {line:,} has arrays or objects nested more than "
                    f"{max_depth} levels deep, which are not read",
                    hint="an input needs 2 levels: one object per line holding a list of "
                         "reference strings")
        line_no += n_lines
        start = end


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
            the row or column); a JSON Lines line nested deeper than :data:`MAX_JSON_DEPTH`
            (names the line); a CSV header with a name twice; a missing one of ``columns``.

    """
    import pyarrow.csv as pacsv
    import pyarrow.json as pajson

    kind = input_format(loc.path)
    try:
        if kind == "csv":
            parse = pacsv.ParseOptions(newlines_in_values=True)
            read = pacsv.ReadOptions(block_size=TEXT_BLOCK_BYTES)
            with loc.fs.open_input_stream(loc.path) as fh:
                names = pacsv.open_csv(fh, read_options=read, parse_options=parse).schema.names
            twice = [n for i, n in enumerate(names) if n in names[:i]]
            missing = [c for c in columns or () if c not in names]
            if twice or missing:
                raise missing_column(what, loc.uri, (twice or missing)[0], names)
            convert = pacsv.ConvertOptions(
                column_types={n: pa.string() for n in names}, strings_can_be_null=False,
                include_columns=list(columns) if columns is not None else None)
            with loc.fs.open_input_stream(loc.path) as fh:
                table = pacsv.read_csv(fh, read_options=read, parse_options=parse,
                                       convert_options=convert)
        else:
            # read once, scanned, then parsed from memory: the bytes pyarrow parses are the
            # bytes checked (a file rewritten between the two is not parsed unchecked)
            with loc.fs.open_input_stream(loc.path) as fh:
                data = fh.read()
            check_json_nesting(data, what=what, uri=loc.uri)
            table = pajson.read_json(
                pa.BufferReader(data),
                read_options=pajson.ReadOptions(block_size=JSON_BLOCK_BYTES))
            del data
    except (OSError, pa.ArrowException) as e:
        name = "CSV" if kind == "csv" else "JSON Lines"
        raise InputError(f"{what}: {loc.uri} is not a readable {name} file "
                         f"({str(e).splitlines()[0] if str(e) else type(e).__name__})",
                         hint=None if kind == "csv" else JSON_HINT) from None
    if columns is None:
        return table
    missing = [c for c in columns if table.column_names.count(c) != 1]
    if missing:
        raise missing_column(what, loc.uri, missing[0], table.column_names)
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
