"""The SHA-256 of a stored file, as a run's manifest records it per file.

One module that both the writer (:mod:`pipeline.io.write`, which records the checksum of
what it wrote) and the readers (:mod:`pipeline.io.runs`, which verifies a run against its
manifest; :mod:`pipeline.warehouse.common`) import, so neither imports the other for it.
"""

from __future__ import annotations

import hashlib

import pyarrow.fs as pafs

# Bytes read at a time (1 MiB): memory stays flat whatever the file's size.
HASH_CHUNK_BYTES = 1 << 20


def file_sha256(fs: pafs.FileSystem, path: str) -> str:
    """The SHA-256 of a file's bytes, as 64 lowercase hex digits (FIPS 180-4).

    Args:
        fs: the filesystem holding the file (local, S3, GCS, fsspec...).
        path: the file's path on ``fs``.

    Returns:
        The hex digest; the file is read in chunks of :data:`HASH_CHUNK_BYTES`.

    Raises:
        OSError: the file cannot be read.

    """
    digest = hashlib.sha256()
    with fs.open_input_stream(path) as fh:
        while chunk := fh.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


__all__ = ["HASH_CHUNK_BYTES", "file_sha256"]
