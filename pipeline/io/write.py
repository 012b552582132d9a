"""Writing a run's output so that a reader never sees half of it.

Everything is written under a staging directory beside the destination
(``.{name}.overlap-staging``), then moved into place, and ``_SUCCESS`` is written last: a
reader that finds ``DIR/_SUCCESS`` finds a complete run. On a local filesystem the move is one
``rename`` of the directory; on object stores (no directory rename) files are moved one by
one and ``_SUCCESS`` still comes last. Inside the staging directory every file is itself
written to a hidden temporary name and renamed, so a file present there is complete.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipeline.errors import ExecutionError, OutputExistsError
from pipeline.io.files import Location, locate

SUCCESS_FILE = "_SUCCESS"
MANIFEST_FILE = "manifest.json"
AGGREGATE_FILE = "aggregate.parquet"
EXAMPLES_DIR = "examples"
_OURS = (SUCCESS_FILE, MANIFEST_FILE, AGGREGATE_FILE, EXAMPLES_DIR)


def _exists(loc: Location) -> pafs.FileType:
    return loc.fs.get_file_info(loc.path).type


def _tmp_name(loc: Location) -> Location:
    head, name = posixpath.split(loc.path)
    return Location(loc.fs, posixpath.join(head, f".{name}.tmp"), loc.uri + ".tmp")


def write_parquet(table: pa.Table, loc: Location, *,
                  metadata: Mapping[bytes, bytes] | None = None) -> int:
    """Write a table to ``loc`` via a temporary name and a rename.

    Args:
        table: the rows.
        loc: destination file.
        metadata: key-value pairs added to the schema metadata (e.g. the signature).

    Returns:
        The size of the written file in bytes.

    Raises:
        ExecutionError: the storage refused the write.

    """
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    tmp = _tmp_name(loc)
    try:
        pq.write_table(table, tmp.path, filesystem=loc.fs, compression="zstd")
        loc.fs.move(tmp.path, loc.path)
        return int(loc.fs.get_file_info(loc.path).size or 0)
    except OSError as e:
        raise ExecutionError(f"cannot write {loc.uri}: {e}") from None


def write_text(text: str, loc: Location) -> None:
    """Write a small text file via a temporary name and a rename.

    Raises:
        ExecutionError: the storage refused the write.

    """
    tmp = _tmp_name(loc)
    try:
        with loc.fs.open_output_stream(tmp.path) as fh:
            fh.write(text.encode("utf-8"))
        loc.fs.move(tmp.path, loc.path)
    except OSError as e:
        raise ExecutionError(f"cannot write {loc.uri}: {e}") from None


def write_json(data: Any, loc: Location) -> None:
    """Write ``data`` as indented JSON (see :func:`write_text`)."""
    write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", loc)


class OutputDir:
    """A run's output directory: staging, then an atomic publish.

    Args:
        uri: the destination directory (local path or URI).
        overwrite: replace a complete existing output.

    Raises:
        OutputExistsError: (from :meth:`prepare`) a complete output exists and ``overwrite``
            is False, or the destination is something else than an overlap output.

    """

    def __init__(self, uri: str, *, overwrite: bool) -> None:
        self.final = locate(uri.rstrip("/") or uri)
        head, name = posixpath.split(self.final.path.rstrip("/"))
        if not name:
            raise OutputExistsError(f"refusing to write the output to {uri}")
        self.staging = Location(self.final.fs, posixpath.join(head, f".{name}.overlap-staging"),
                                _sibling_uri(self.final.uri, f".{name}.overlap-staging"))
        self.overwrite = overwrite

    def is_complete(self) -> bool:
        """Tell whether the destination holds a published run (``_SUCCESS`` present)."""
        return _exists(self.final.child(SUCCESS_FILE)) == pafs.FileType.File

    def prepare(self) -> None:
        """Check the destination and create an empty staging directory.

        Raises:
            OutputExistsError: see the class.
            ExecutionError: the storage refused.

        """
        self._check_destination()
        try:
            if _exists(self.staging) != pafs.FileType.NotFound:
                self.staging.fs.delete_dir(self.staging.path)
            self.staging.fs.create_dir(self.staging.child(EXAMPLES_DIR).path, recursive=True)
        except OSError as e:
            raise ExecutionError(f"cannot create {self.staging.uri}: {e}") from None

    def _check_destination(self) -> None:
        kind = _exists(self.final)
        if kind == pafs.FileType.NotFound:
            return
        if kind != pafs.FileType.Directory:
            raise OutputExistsError(f"output {self.final.uri} exists and is not a directory")
        if self.is_complete() and not self.overwrite:
            raise OutputExistsError(f"output {self.final.uri} already holds a complete run",
                                    hint="pass --overwrite to replace it")
        entries = self.final.fs.get_file_info(pafs.FileSelector(self.final.path))
        foreign = [posixpath.basename(e.path) for e in entries
                   if posixpath.basename(e.path) not in _OURS]
        if foreign:
            raise OutputExistsError(
                f"output {self.final.uri} exists and holds files that are not an overlap "
                f"output ({', '.join(sorted(foreign)[:5])}); refusing to replace it",
                hint="choose a new or empty directory")

    def staged(self, name: str) -> Location:
        """Return the staging location of an output file (``name`` relative to the run dir)."""
        return self.staging.child(name)

    def published(self, name: str) -> Location:
        """Return the final location of an output file."""
        return self.final.child(name)

    def publish(self, *, run_id: str) -> None:
        """Move the staged run into place, then write ``_SUCCESS``.

        Raises:
            OutputExistsError: a complete output appeared meanwhile (without overwrite).
            ExecutionError: the storage refused.

        """
        self._check_destination()
        fs = self.final.fs
        try:
            if isinstance(fs, pafs.LocalFileSystem):
                self._publish_by_rename()
            else:
                self._publish_file_by_file()
        except OSError as e:
            raise ExecutionError(f"cannot move the output into {self.final.uri}: {e}") from None
        write_text(f"{run_id}\n", self.final.child(SUCCESS_FILE))

    def _publish_by_rename(self) -> None:
        fs = self.final.fs
        old = None
        if _exists(self.final) != pafs.FileType.NotFound:
            head, name = posixpath.split(self.final.path.rstrip("/"))
            old = posixpath.join(head, f".{name}.overlap-old-{os.getpid()}")
            fs.move(self.final.path, old)
        try:
            fs.move(self.staging.path, self.final.path)
        except OSError:
            if old is not None:
                fs.move(old, self.final.path)
            raise
        if old is not None:
            fs.delete_dir(old)

    def _publish_file_by_file(self) -> None:
        fs = self.final.fs
        if _exists(self.final) != pafs.FileType.NotFound:
            fs.delete_dir_contents(self.final.path)
        else:
            fs.create_dir(self.final.path, recursive=True)
        entries = fs.get_file_info(pafs.FileSelector(self.staging.path, recursive=True))
        for e in sorted(entries, key=lambda e: e.path):
            rel = posixpath.relpath(e.path, self.staging.path)
            dest = posixpath.join(self.final.path, rel)
            if e.type == pafs.FileType.Directory:
                fs.create_dir(dest, recursive=True)
            elif e.type == pafs.FileType.File:
                fs.create_dir(posixpath.dirname(dest), recursive=True)
                fs.move(e.path, dest)
        fs.delete_dir(self.staging.path)

    def abort(self) -> None:
        """Delete the staging directory (best effort); the destination is untouched."""
        try:
            if _exists(self.staging) != pafs.FileType.NotFound:
                self.staging.fs.delete_dir(self.staging.path)
        except OSError:
            pass


def _sibling_uri(uri: str, name: str) -> str:
    base = uri.rstrip("/")
    return base.rsplit("/", 1)[0] + "/" + name if "/" in base else name


__all__ = ["AGGREGATE_FILE", "EXAMPLES_DIR", "MANIFEST_FILE", "SUCCESS_FILE", "OutputDir",
           "write_json", "write_parquet", "write_text"]
