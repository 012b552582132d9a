"""Reading inputs: every file's footer up front, then row-group ranges on the workers.

Footers are read once on the driver (in a small thread pool: it is I/O), which names any
unreadable file before work starts and gives row counts without reading data.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipeline.errors import InputError
from pipeline.io.files import Location, locate


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

    Raises:
        InputError: the file cannot be opened or is not Parquet (names the file).

    """
    try:
        info = loc.fs.get_file_info(loc.path)
        with loc.fs.open_input_file(loc.path) as fh:
            pf = pq.ParquetFile(fh)
            meta = pf.metadata
            schema = pf.schema_arrow
    except (OSError, pa.ArrowException) as e:
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
