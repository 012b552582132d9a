"""Writing a run's output so that a reader never sees half of it, and a crash loses little.

Everything is written under a staging directory beside the destination
(``.{name}.overlap-staging-{key}``), then moved into place, and ``_SUCCESS`` is written last:
a reader that finds ``DIR/_SUCCESS`` finds a complete run. On a local filesystem the move is
one ``rename`` of a directory; on object stores (no directory rename) files are moved one by
one and ``_SUCCESS`` still comes last. Inside the staging directory every file is itself
written to a hidden temporary name and renamed, so a file present there is complete.

The staging directory outlives a crash so that a rerun can resume (datatrove's completions
folder is the model). Its ``key`` identifies the work (inputs and settings, see
:func:`pipeline.engine.resume.run_key`), so a rerun with other inputs or settings never
reuses it. Layout::

    .{name}.overlap-staging-{key}/
        state.json              key and run id, written first
        checks.json             the check stage's results, once it passed (engine)
        completions/part-*.json one marker per partition, written after its examples file
        run/                    what is published: examples/, aggregate.parquet, manifest.json
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
# Inside the staging directory.
STATE_FILE = "state.json"
COMPLETIONS_DIR = "completions"
_STAGED_RUN = "run"


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


def read_json(loc: Location) -> Any:
    """Read a JSON file written by :func:`write_json`; None when it is absent or unreadable.

    Files are written atomically, so a present file is complete; anything unreadable (a
    foreign or damaged file) counts as absent and its work is redone.
    """
    try:
        with loc.fs.open_input_stream(loc.path) as fh:
            return json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return None


class OutputDir:
    """A run's output directory: staging that survives a crash, then an atomic publish.

    Args:
        uri: the destination directory (local path or URI).
        overwrite: replace a complete existing output.
        key: identifies the run's work (inputs and settings); part of the staging directory's
            name, so that only a rerun of the same work resumes from it. None: no key.

    Raises:
        OutputExistsError: (from :meth:`prepare`) a complete output exists and ``overwrite``
            is False, or the destination is something else than an overlap output.

    """

    def __init__(self, uri: str, *, overwrite: bool, key: str | None = None) -> None:
        self.final = locate(uri.rstrip("/") or uri)
        head, name = posixpath.split(self.final.path.rstrip("/"))
        if not name:
            raise OutputExistsError(f"refusing to write the output to {uri}")
        staging = f".{name}.overlap-staging" + (f"-{key}" if key else "")
        self.staging = Location(self.final.fs, posixpath.join(head, staging),
                                _sibling_uri(self.final.uri, staging))
        self.key = key
        self.overwrite = overwrite

    def is_complete(self) -> bool:
        """Tell whether the destination holds a published run (``_SUCCESS`` present)."""
        return _exists(self.final.child(SUCCESS_FILE)) == pafs.FileType.File

    def resumable_run_id(self) -> str | None:
        """Return the run id of an interrupted run of the same work, or None.

        That is the run id in this key's staging directory, left by a run that did not
        finish (crash, kill, infrastructure failure).
        """
        state = read_json(self.staging.child(STATE_FILE))
        if isinstance(state, dict) and state.get("key") == self.key \
                and isinstance(state.get("run_id"), str):
            return str(state["run_id"])
        return None

    def prepare(self, *, run_id: str | None = None) -> bool:
        """Check the destination, then resume this key's staging directory or create it.

        The staging directory is resumed when it holds the same key and ``run_id`` (the
        staged examples carry the run id); otherwise it is emptied and started afresh.

        Args:
            run_id: the run's id; None never resumes.

        Returns:
            True when an interrupted run's staging directory is resumed.

        Raises:
            OutputExistsError: see the class.
            ExecutionError: the storage refused.

        """
        self._check_destination()
        resume = run_id is not None and self.resumable_run_id() == run_id
        try:
            if not resume and _exists(self.staging) != pafs.FileType.NotFound:
                self.staging.fs.delete_dir(self.staging.path)
            for sub in (f"{_STAGED_RUN}/{EXAMPLES_DIR}", COMPLETIONS_DIR):
                self.staging.fs.create_dir(self.staging.child(sub).path, recursive=True)
        except OSError as e:
            raise ExecutionError(f"cannot create {self.staging.uri}: {e}") from None
        if not resume:
            write_json({"key": self.key, "run_id": run_id, "output": self.final.uri},
                       self.staging.child(STATE_FILE))
        return resume

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
        return self.staging.child(f"{_STAGED_RUN}/{name}")

    def control(self, name: str) -> Location:
        """Return the location of a staging-only file (resume state, never published).

        E.g. ``checks.json`` or ``completions/part-00003.json``.
        """
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
        staged = self.staging.child(_STAGED_RUN)
        try:
            self._drop_temporaries(staged)
            if isinstance(fs, pafs.LocalFileSystem):
                self._publish_by_rename(staged)
            else:
                self._publish_file_by_file(staged)
        except OSError as e:
            raise ExecutionError(f"cannot move the output into {self.final.uri}: {e}") from None
        write_text(f"{run_id}\n", self.final.child(SUCCESS_FILE))
        self.abort()  # the resume state is no longer needed

    @staticmethod
    def _drop_temporaries(staged: Location) -> None:
        # Hidden ``.*.tmp`` files are writes cut short (a killed worker); never published.
        for e in staged.fs.get_file_info(pafs.FileSelector(staged.path, recursive=True)):
            name = posixpath.basename(e.path)
            if e.type == pafs.FileType.File and name.startswith(".") and name.endswith(".tmp"):
                staged.fs.delete_file(e.path)

    def _publish_by_rename(self, staged: Location) -> None:
        fs = self.final.fs
        old = None
        if _exists(self.final) != pafs.FileType.NotFound:
            head, name = posixpath.split(self.final.path.rstrip("/"))
            old = posixpath.join(head, f".{name}.overlap-old-{os.getpid()}")
            fs.move(self.final.path, old)
        try:
            fs.move(staged.path, self.final.path)
        except OSError:
            if old is not None:
                fs.move(old, self.final.path)
            raise
        if old is not None:
            fs.delete_dir(old)

    def _publish_file_by_file(self, staged: Location) -> None:
        fs = self.final.fs
        if _exists(self.final) != pafs.FileType.NotFound:
            fs.delete_dir_contents(self.final.path)
        else:
            fs.create_dir(self.final.path, recursive=True)
        entries = fs.get_file_info(pafs.FileSelector(staged.path, recursive=True))
        for e in sorted(entries, key=lambda e: e.path):
            rel = posixpath.relpath(e.path, staged.path)
            dest = posixpath.join(self.final.path, rel)
            if e.type == pafs.FileType.Directory:
                fs.create_dir(dest, recursive=True)
            elif e.type == pafs.FileType.File:
                fs.create_dir(posixpath.dirname(dest), recursive=True)
                fs.move(e.path, dest)

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


__all__ = ["AGGREGATE_FILE", "COMPLETIONS_DIR", "EXAMPLES_DIR", "MANIFEST_FILE", "STATE_FILE",
           "SUCCESS_FILE", "OutputDir", "read_json", "write_json", "write_parquet", "write_text"]
