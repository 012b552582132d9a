"""The exchange: rows redistributed by id through files, not through memory.

A run reads each input unit once, splits its rows by partition (hash of the id, see
:mod:`pipeline.io.partition`) and writes them to one Arrow IPC file in the staging directory
(``exchange/{side}-{unit}.arrow``), partition ``b`` being the file's record batch ``b``
(empty partitions are empty batches). A partition's task later reads batch ``b`` of every
unit's file: on a local filesystem through a memory map, so that a task asking only for the
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

EXCHANGE_DIR = "exchange"


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


def write_pieces(pieces: Sequence[pa.Table], schema: pa.Schema, loc: Location) -> int:
    """Write one table per partition as the record batches of one IPC file, atomically.

    Args:
        pieces: ``n_partitions`` tables of ``schema`` (any may be empty).
        schema: their schema.
        loc: the file to write (replaced when it exists).

    Returns:
        The file's size in bytes.

    Raises:
        ExecutionError: the storage refused the write (transient: an engine may retry).

    """
    head, name = posixpath.split(loc.path)
    tmp = posixpath.join(head, f".{name}.tmp")
    try:
        loc.fs.create_dir(head, recursive=True)
        with loc.fs.open_output_stream(tmp) as sink, ipc.new_file(sink, schema) as writer:
            for piece in pieces:
                writer.write_batch(_one_batch(piece, schema))
        loc.fs.move(tmp, loc.path)
        return int(loc.fs.get_file_info(loc.path).size or 0)
    except OSError as e:
        raise ExecutionError(f"cannot write the exchange file {loc.uri}: {e}") from None


def _one_batch(piece: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    """The table as a single record batch (an empty one when it has no row)."""
    batches = piece.combine_chunks().to_batches()
    if not batches:
        return pa.RecordBatch.from_pylist([], schema=schema)
    if len(batches) == 1:
        return batches[0]
    return pa.concat_batches(batches)


def read_piece(loc: Location, index: int, columns: Sequence[str] | None = None) -> pa.Table:
    """Read partition ``index`` of a unit's exchange file (zero-copy on a local filesystem).

    Args:
        loc: the unit's exchange file.
        index: the partition.
        columns: the columns to keep (None: all).

    Raises:
        ExecutionError: the file cannot be read (lost storage; a rerun writes it again).

    """
    try:
        if isinstance(loc.fs, pafs.LocalFileSystem):
            source: pa.NativeFile = pa.memory_map(loc.path)
        else:
            source = loc.fs.open_input_file(loc.path)
        batch = ipc.open_file(source).get_batch(index)
    except (OSError, pa.ArrowInvalid) as e:
        raise ExecutionError(f"cannot read the exchange file {loc.uri}: {e}") from None
    if columns is not None:
        batch = batch.select(list(columns))
    return pa.Table.from_batches([batch])


def exists(loc: Location) -> bool:
    """Whether a (complete) exchange file is there."""
    return loc.fs.get_file_info(loc.path).type == pafs.FileType.File


__all__ = ["EXCHANGE_DIR", "Exchange", "exchange_name", "exists", "read_piece", "write_pieces"]
