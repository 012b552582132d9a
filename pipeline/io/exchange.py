"""The exchange: rows redistributed by id through files, not through memory.

A run reads each input unit once, in slices of at most :data:`SLICE_ROWS` rows, splits
each slice's rows by partition (hash of the id, see :mod:`pipeline.io.partition`) and
appends them to one Arrow IPC file in the staging directory (``exchange/{side}-{unit}.arrow``):
record batch ``s * n_partitions + b`` holds slice ``s``'s rows of partition ``b`` (empty
partitions are empty batches), so a unit of any size is split within one slice's memory. A
partition's task later reads batches ``b, n + b, ...`` of every unit's file: on a local
filesystem through a memory map, so that a task asking only for the
id column touches only that column's pages. Nothing is held in memory between the stages,
and a file, written under a temporary name and renamed, is complete when it exists (a rerun
reuses it).

The files are uncompressed (a memory-mapped read is then zero-copy) and deleted once every
partition is scored.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.ipc as ipc

from pipeline.errors import ExecutionError
from pipeline.io.files import Location
from pipeline.io.write import _tmp_name

EXCHANGE_DIR = "exchange"
# Rows of a unit read, split and written at a time (about 44 MB of text at 670 bytes a row):
# a unit is a whole row group when the row group is larger than partition_rows, and input
# files written with one row group per file made units of 625,000 rows at 10M rows (a split
# task then held about 1 GB).
SLICE_ROWS = 65_536


def exchange_name(side: str, index: int) -> str:
    """Return a unit's exchange file in the staging dir (``exchange/predictions-00003.arrow``)."""
    return f"{EXCHANGE_DIR}/{side}-{index:05d}.arrow"


@dataclass(frozen=True)
class Exchange:
    """Where a run's exchange files are, and how they are cut.

    Attributes:
        uri: the staging directory (the files are under its ``exchange/``).
        n_partitions: record batches per file (partitions of the run), >= 1.
        n_prediction_units: files of the predictions side (units 0..n-1).
        n_reference_units: files of the references side (0 for the inline layout).

    """

    uri: str
    n_partitions: int
    n_prediction_units: int
    n_reference_units: int

    def unit_uri(self, side: str, index: int) -> str:
        """The exchange file of unit ``index`` of ``side`` (``predictions``/``references``)."""
        return f"{self.uri.rstrip('/')}/{exchange_name(side, index)}"

    def uris(self, side: str) -> list[str]:
        """Every unit's exchange file of ``side``, in unit order."""
        n = self.n_prediction_units if side == "predictions" else self.n_reference_units
        return [self.unit_uri(side, i) for i in range(n)]


class PiecesWriter:
    """Writes a unit's exchange file slice by slice: for each slice, one batch per partition.

    Batch ``s * n_partitions + b`` holds slice ``s``'s rows of partition ``b`` (possibly
    none), so a unit is split without ever holding more than one slice of it. The file is
    written under a temporary name and renamed by :meth:`close`.

    Args:
        loc: the file to write (replaced when it exists).
        n_partitions: the partitions, >= 1.

    """

    def __init__(self, loc: Location, n_partitions: int) -> None:
        self.loc = loc
        self.n_partitions = n_partitions
        self.head = posixpath.dirname(loc.path)
        self.tmp = ""  # named when the first slice comes (a link planted there is unlinked)
        self._sink: pa.NativeFile | None = None
        self._writer: ipc.RecordBatchFileWriter | None = None

    def write(self, pieces: Sequence[pa.Table]) -> None:
        """Append one slice: ``n_partitions`` tables of one schema (any may be empty).

        Raises:
            ExecutionError: the storage refused the write.

        """
        schema = pieces[0].schema
        try:
            if self._writer is None:
                self.loc.fs.create_dir(self.head, recursive=True)
                self.tmp = _tmp_name(self.loc).path
                self._sink = self.loc.fs.open_output_stream(self.tmp)
                self._writer = ipc.new_file(self._sink, schema)
            for piece in pieces:
                self._writer.write_batch(_one_batch(piece, schema))
        except OSError as e:
            self.abort()
            raise ExecutionError(f"cannot write the exchange file {self.loc.uri}: {e}") from None

    def close(self) -> int:
        """Finish the file and move it into place; returns its size in bytes.

        Raises:
            ExecutionError: the storage refused.

        """
        try:
            if self._writer is not None:
                self._writer.close()
            if self._sink is not None:
                self._sink.close()
            self._writer = self._sink = None
            self.loc.fs.move(self.tmp, self.loc.path)
            return int(self.loc.fs.get_file_info(self.loc.path).size or 0)
        except OSError as e:
            self.abort()
            raise ExecutionError(f"cannot write the exchange file {self.loc.uri}: {e}") from None

    def abort(self) -> None:
        """Drop the unfinished file (best effort)."""
        try:
            if self._writer is not None:
                self._writer.close()
            if self._sink is not None:
                self._sink.close()
        except (OSError, pa.ArrowException):
            pass
        self._writer = self._sink = None
        if self.tmp:
            try:
                self.loc.fs.delete_file(self.tmp)
            except OSError:
                pass


def write_pieces(pieces: Sequence[pa.Table], loc: Location) -> int:
    """Write one slice's tables, one per partition, as a whole exchange file.

    Raises:
        ExecutionError: the storage refused the write (transient: an engine may retry).

    """
    writer = PiecesWriter(loc, len(pieces))
    writer.write(pieces)
    return writer.close()


def _one_batch(piece: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    """The table as a single record batch (an empty one when it has no row)."""
    batches = piece.combine_chunks().to_batches()
    if not batches:
        return pa.RecordBatch.from_pylist([], schema=schema)
    if len(batches) == 1:
        return batches[0]
    return pa.concat_batches(batches)


def read_piece(loc: Location, index: int, n_partitions: int,
               columns: Sequence[str] | None = None) -> pa.Table:
    """Read partition ``index``'s rows of a unit's exchange file (zero-copy, local files).

    Args:
        loc: the unit's exchange file.
        index: the partition.
        n_partitions: the run's partitions (batches per slice).
        columns: the columns to keep (None: all).

    Raises:
        ExecutionError: the file cannot be read (lost storage; a rerun writes it again).

    """
    try:
        if isinstance(loc.fs, pafs.LocalFileSystem):
            source: pa.NativeFile = pa.memory_map(loc.path)
        else:
            source = loc.fs.open_input_file(loc.path)
        reader = ipc.open_file(source)
        batches = [reader.get_batch(s * n_partitions + index)
                   for s in range(reader.num_record_batches // n_partitions)]
    except (OSError, pa.ArrowInvalid) as e:
        raise ExecutionError(f"cannot read the exchange file {loc.uri}: {e}") from None
    if columns is not None:
        batches = [b.select(list(columns)) for b in batches]
        schema = pa.schema([reader.schema.field(c) for c in columns])
    else:
        schema = reader.schema
    return pa.Table.from_batches(batches, schema=schema)


def exists(loc: Location) -> bool:
    """Whether a (complete) exchange file is there."""
    return loc.fs.get_file_info(loc.path).type == pafs.FileType.File


__all__ = ["EXCHANGE_DIR", "SLICE_ROWS", "Exchange", "PiecesWriter", "exchange_name", "exists",
           "read_piece", "write_pieces"]
