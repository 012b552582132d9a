"""Deterministic hash partitioning of example ids.

Rows of both sides (predictions and references) are sent to partition
``bucket(id) = mix64(hash(id)) mod n_partitions``, so every row of one example lands in the
same partition whatever file or row it came from. The hash is fixed here (FNV-1a 64 over the
UTF-8 bytes of string ids; the SplitMix64 finalizer over integer ids), never Python's salted
``hash()``, so the assignment is the same in every process, run and version.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import from_numpy, to_numpy
from pipeline.compiled import kernel


def hash_ids(ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Stable 64-bit hashes of example ids.

    Args:
        ids: N ids, string/large_string/binary or any integer type, without nulls.

    Returns:
        uint64 array of shape (N,); equal ids give equal hashes in every process.

    Raises:
        TypeError: ids of another type, or with nulls.

    """
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if ids.null_count:
        raise TypeError("ids contain nulls")
    out = np.empty(len(ids), dtype=np.uint64)
    if not len(ids):
        return out
    if pa.types.is_integer(ids.type):
        kernel("hash_ints")(to_numpy(pc.cast(ids, pa.int64()), np.int64).view(np.uint64),
                             out)
        return out
    if pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type) \
            or pa.types.is_binary(ids.type) or pa.types.is_large_binary(ids.type):
        arr = pc.cast(ids, pa.large_binary())
        buffers = arr.buffers()
        offsets = np.frombuffer(buffers[1], dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
        data = (np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None
                else np.zeros(0, dtype=np.uint8))
        kernel("hash_bytes")(offsets, data, out)
        return out
    raise TypeError(f"ids of type {ids.type} cannot be hashed; use strings or integers")


def partition_of(ids: pa.Array | pa.ChunkedArray, n_partitions: int) -> np.ndarray:
    """Partition index of each id.

    Args:
        ids: N ids (see :func:`hash_ids`).
        n_partitions: number of partitions, >= 1.

    Returns:
        int64 array of shape (N,), values in ``[0, n_partitions)``.

    """
    if n_partitions == 1:
        return np.zeros(len(ids), dtype=np.int64)
    return (hash_ids(ids) % np.uint64(n_partitions)).astype(np.int64)


def split_by_partition(table: pa.Table, partitions: np.ndarray, n_partitions: int
                       ) -> list[pa.Table]:
    """Split a table into ``n_partitions`` tables, keeping row order inside each.

    Args:
        table: N rows.
        partitions: int64 (N,), each row's partition in ``[0, n_partitions)``.
        n_partitions: number of output tables.

    Returns:
        ``n_partitions`` tables (some may be empty) whose rows are those of ``table`` with
        that partition index, in their original order.

    """
    if n_partitions == 1:
        return [table]
    order = np.argsort(partitions, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(partitions, minlength=n_partitions))])
    # One ``take`` per partition gives compact buffers: a slice would carry (and serialize)
    # the whole table's buffers.
    return [table.take(from_numpy(order[bounds[b]:bounds[b + 1]])) for b in range(n_partitions)]
