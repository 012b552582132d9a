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

import contextlib
import fnmatch
import json
import os
import posixpath
import secrets
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipeline.errors import ConfigError, ExecutionError, OutputExistsError
from pipeline.io.checksum import file_sha256
from pipeline.io.files import Location, locate
from pipeline.io.lock import OutputLock
from pipeline.io.schema import RUN_ID_KEY

SUCCESS_FILE = "_SUCCESS"
MANIFEST_FILE = "manifest.json"
AGGREGATE_FILE = "aggregate.parquet"
EXAMPLES_DIR = "examples"
# Inside the staging directory.
STATE_FILE = "state.json"
COMPLETIONS_DIR = "completions"
_STAGED_RUN = "run"


def _exists(loc: Location) -> pafs.FileType:
    return loc.fs.get_file_info(loc.path).type


def _tmp_name(loc: Location) -> Location:
    """``.NAME.tmp`` beside ``loc``, with whatever had that name removed first (locally).

    A leftover temporary file is a write cut short; a symlink or hard link there was planted:
    writing through it would truncate its target. Unlinking removes the name, never the
    target, so the write below always creates a new file.
    """
    head, name = posixpath.split(loc.path)
    tmp = Location(loc.fs, posixpath.join(head, f".{name}.tmp"), loc.uri + ".tmp")
    if isinstance(loc.fs, pafs.LocalFileSystem) and os.path.lexists(tmp.path) and (
            os.path.islink(tmp.path) or not os.path.isdir(tmp.path)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp.path)
    return tmp


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


def write_bytes(data: bytes, loc: Location) -> None:
    """Write a file via a temporary name and a rename: a reader sees all of it or none.

    The one atomic write of the package (every file it writes goes through here or
    :func:`write_parquet`, which shares the temporary name).

    Raises:
        ExecutionError: the storage refused the write.

    """
    tmp = _tmp_name(loc)
    try:
        with loc.fs.open_output_stream(tmp.path) as fh:
            fh.write(data)
        loc.fs.move(tmp.path, loc.path)
    except OSError as e:
        raise ExecutionError(f"cannot write {loc.uri}: {e}") from None


def write_text(text: str, loc: Location) -> None:
    """Write a small text file (UTF-8) atomically (see :func:`write_bytes`).

    Raises:
        ExecutionError: the storage refused the write.

    """
    write_bytes(text.encode("utf-8"), loc)


# The first lines of every HTML file ``overlap report`` writes: a later report replaces only
# a file that starts so (or a report written before the mark, by its head), never another.
REPORT_MARK = "<!-- overlap report: this file is replaced by the next report written here -->"
_REPORT_HEAD = "<!DOCTYPE html>"
_LEGACY_REPORT_TITLE = "<title>overlap report: "


def _is_our_report(head: bytes) -> bool:
    text = head.decode("utf-8", "replace")
    return text.startswith(_REPORT_HEAD) and (
        REPORT_MARK in text or _LEGACY_REPORT_TITLE in text)


def write_report_file(html: str, loc: Location, *, output: str) -> None:
    """Write an HTML report to ``loc``, replacing only a report this package wrote there.

    The text is written to a new hidden file beside ``loc`` (created exclusively, never
    through a symlink: ``O_EXCL | O_NOFOLLOW`` locally), which is renamed into place; on any
    failure the temporary file is removed. :data:`REPORT_MARK` is added after the doctype,
    so that the next report recognises the file as one of ours.

    Args:
        html: the document (``<!DOCTYPE html>`` first).
        loc: the file to write.
        output: the output as the user named it, for messages.

    Raises:
        OutputExistsError: ``loc`` is a directory, a symbolic link, or a file that is not a report
            written by ``overlap report`` (exit 3; nothing is written).
        ConfigError: ``loc``'s local directory does not exist or is a file (exit 2).
        ExecutionError: the storage refused the write.

    """
    if html.startswith(_REPORT_HEAD):
        html = f"{_REPORT_HEAD}\n{REPORT_MARK}{html[len(_REPORT_HEAD):]}"
    else:
        html = f"{REPORT_MARK}\n{html}"
    data = html.encode("utf-8")
    local = isinstance(loc.fs, pafs.LocalFileSystem)
    try:
        _check_report_destination(loc, output=output, local=local)
        head, name = posixpath.split(loc.path)
        tmp = posixpath.join(head, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            if local:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o644)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
            else:
                with loc.fs.open_output_stream(tmp) as fh:
                    fh.write(data)
            _check_report_destination(loc, output=output, local=local)
            loc.fs.move(tmp, loc.path)
        except BaseException:
            with contextlib.suppress(OSError):
                loc.fs.delete_file(tmp)
            raise
    except OSError as e:
        raise ExecutionError(f"cannot write {loc.uri}: {e}") from None


def check_report_output(loc: Location, *, output: str) -> None:
    """Refuse, before any work, a report output that :func:`write_report_file` would refuse.

    Raises:
        ConfigError: an empty ``output`` (:func:`check_output_given`).
        OutputExistsError: see :func:`write_report_file`; also a file inside a complete
            overlap score run's directory (:func:`check_output_place`).
        ExecutionError: the storage cannot be read.

    """
    check_output_given(output)
    try:
        _check_report_destination(loc, output=output,
                                  local=isinstance(loc.fs, pafs.LocalFileSystem))
        check_output_place(output)
    except OSError as e:
        raise ExecutionError(f"cannot read {loc.uri}: {e}") from None


def _check_report_destination(loc: Location, *, output: str, local: bool) -> None:
    if local and os.path.islink(loc.path):
        raise link_error(output, loc.path)
    kind = _exists(loc)
    if kind == pafs.FileType.NotFound:
        folder = os.path.dirname(loc.path)
        if local and folder and not os.path.isdir(folder):
            shown = os.path.dirname(output.rstrip("/")) or folder
            raise ConfigError(f"output {output}: directory {shown} does not exist"
                              if not os.path.exists(folder) else
                              f"output {output}: {shown} is not a directory",
                              hint="create the directory first, or name a file in an "
                                   "existing one")
        return
    if kind == pafs.FileType.Directory:
        raise OutputExistsError(f"output {output} is a directory; refusing to replace it",
                                hint="name a file, e.g. --output report.html")
    with loc.fs.open_input_stream(loc.path) as fh:
        head = fh.read(1024)
    if not _is_our_report(head):
        raise OutputExistsError(f"output {output} exists and is not a report written by "
                                "overlap report; refusing to replace it",
                                hint="choose a new file, or remove this one yourself")


def checksum(loc: Location) -> str:
    """The SHA-256 (hex) of a written file, as the run's manifest records it per file.

    :func:`pipeline.io.runs.open_run` verifies a run's files against it.

    Raises:
        ExecutionError: the file cannot be read back.

    """
    try:
        return file_sha256(loc.fs, loc.path)
    except OSError as e:
        raise ExecutionError(f"cannot read back {loc.uri}: {e}") from None


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
        if isinstance(self.final.fs, pafs.LocalFileSystem) and _within(
                os.path.realpath(os.getcwd()), os.path.realpath(self.final.path)):
            raise ConfigError(f"output {uri} is the current directory or above it: replacing "
                              "it would pull it from under this shell",
                              hint="name a new directory, e.g. --output runs/tonight")
        staging = f".{name}.overlap-staging" + (f"-{key}" if key else "")
        self.staging = Location(self.final.fs, posixpath.join(head, staging),
                                _sibling_uri(self.final.uri, staging))
        self.key = key
        self.overwrite = overwrite
        self.uri = uri
        self._lock = OutputLock(self.final, output=uri)
        self._made: list[str] = []  # directories above the output this run created

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
        """Take the output's lock, check the destination, resume or create the staging.

        The lock (:class:`pipeline.io.lock.OutputLock`) is held until :meth:`publish` or
        :meth:`release`. The directories above the output that do not exist yet are
        created here (the lock and the staging live beside the output) and noted:
        :meth:`release` removes those left empty, so a refused run leaves nothing behind.
        When this raises, the lock is released already.

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
        self._made = self._made or _missing_parents(self.final)
        try:
            self._lock.acquire(run_id=run_id)
            self._check_destination()
        except BaseException:
            self.release()
            raise
        try:
            resume = run_id is not None and self.resumable_run_id() == run_id
            self._lock.verify()
            if not resume and _exists(self.staging) != pafs.FileType.NotFound:
                self.staging.fs.delete_dir(self.staging.path)
            for sub in (f"{_STAGED_RUN}/{EXAMPLES_DIR}", COMPLETIONS_DIR):
                self.staging.fs.create_dir(self.staging.child(sub).path, recursive=True)
            if not resume:
                write_json({"key": self.key, "run_id": run_id, "output": self.final.uri},
                           self.staging.child(STATE_FILE))
        except BaseException as e:
            self.release()
            if isinstance(e, OSError):
                raise ExecutionError(f"cannot create {self.staging.uri}: {e}") from None
            raise
        return resume

    def _check_destination(self) -> None:
        """Refuse anything at the destination but nothing, or a complete overlap output.

        Whether a directory is a complete overlap output is decided from its contents:
        ``manifest.json`` names a run id and every file of the run, ``_SUCCESS`` holds that
        run id, and there is nothing else. Names alone prove nothing.
        """
        kind = _exists(self.final)
        if kind == pafs.FileType.NotFound:
            return
        if kind != pafs.FileType.Directory:
            raise OutputExistsError(f"output {self.uri} exists and is not a directory; "
                                    "refusing to replace it")
        entries = self.final.fs.get_file_info(pafs.FileSelector(self.final.path,
                                                                recursive=True))
        if not entries:
            return  # an empty directory: nothing to lose
        run_id, problem = self._complete_run(entries)
        if problem is not None:
            raise OutputExistsError(f"output {self.uri} exists and is not a complete overlap "
                                    f"output ({problem}); refusing to replace it",
                                    hint="choose a new or empty directory")
        if not self.overwrite:
            raise OutputExistsError(f"output {self.uri} already holds a complete run "
                                    f"(run id {run_id})", hint="pass --overwrite to replace it")

    def _complete_run(self, entries: list[pafs.FileInfo]) -> tuple[str | None, str | None]:
        """``(run id, None)`` for a complete overlap output, else ``(None, what is there)``."""
        root = self.final.path.rstrip("/")
        files = {posixpath.relpath(e.path, root) for e in entries
                 if e.type == pafs.FileType.File}
        dirs = {posixpath.relpath(e.path, root) for e in entries
                if e.type == pafs.FileType.Directory}
        shown = ", ".join(sorted(files | {d + "/" for d in dirs})[:5])
        manifest = read_json(self.final.child(MANIFEST_FILE))
        run_id = manifest.get("run_id") if isinstance(manifest, dict) else None
        outputs = manifest.get("outputs") if isinstance(manifest, dict) else None
        if not isinstance(run_id, str) or not isinstance(outputs, dict):
            return None, f"it holds {shown}{', ...' if len(files) + len(dirs) > 5 else ''}"
        try:
            with self.final.fs.open_input_stream(self.final.child(SUCCESS_FILE).path) as fh:
                success = fh.read(4096).decode("utf-8", "replace").strip()
        except OSError:
            return None, f"an unfinished run {run_id}: no {SUCCESS_FILE}"
        if success != run_id:
            return None, f"{SUCCESS_FILE} of another run than its manifest's {run_id}"
        listed = {MANIFEST_FILE, SUCCESS_FILE}
        for entry in [*(outputs.get("examples") or []), outputs.get("aggregate")]:
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                listed.add(posixpath.normpath(entry["path"]))
        foreign = sorted((files - listed) | (dirs - {EXAMPLES_DIR}))
        if foreign:
            return None, f"files its manifest does not name: {', '.join(foreign[:5])}"
        missing = sorted(listed - files)
        if missing:
            return None, f"files of run {run_id} are missing: {', '.join(missing[:5])}"
        return run_id, None

    def check_provenance(self, *, run_id: str) -> None:
        """Check that every staged Parquet file was written by run ``run_id``.

        Raises:
            OutputExistsError: a file of another run (another writer got into the staging
                directory): nothing is published.
            ExecutionError: a staged file cannot be read.

        """
        staged = self.staging.child(_STAGED_RUN)
        for e in staged.fs.get_file_info(pafs.FileSelector(staged.path, recursive=True)):
            if e.type != pafs.FileType.File or not e.path.endswith(".parquet") \
                    or posixpath.basename(e.path).startswith("."):
                continue
            try:
                with staged.fs.open_input_file(e.path) as fh:
                    meta = pq.ParquetFile(fh).schema_arrow.metadata or {}
            except (OSError, pa.ArrowInvalid) as err:
                raise ExecutionError(f"cannot read the staged file {e.path}: "
                                     f"{str(err).splitlines()[0]}") from None
            found = meta.get(RUN_ID_KEY, b"").decode("utf-8", "replace")
            if found != run_id:
                raise OutputExistsError(
                    f"{e.path} was written by run {found or '(none)'}, not by this run "
                    f"({run_id}): another run wrote into {self.staging.uri}; nothing published",
                    hint="run again; one run per --output at a time")

    def release(self) -> None:
        """Release the output's lock (see :meth:`prepare`); the staging directory stays.

        Then the directories :meth:`prepare` created above the output are removed when
        they are empty (a refused or aborted run), deepest first; a directory holding
        anything (the published run, a staging directory kept for a resume, another run's
        files) stays, and so does every directory that existed before.
        """
        self._lock.release()
        made, self._made = self._made, []
        _remove_empty_dirs(self.final.fs, made)

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
        self.check_provenance(run_id=run_id)
        self._lock.verify()  # fencing: a run that lost its lock publishes nothing
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
        self._lock.verify()
        write_text(f"{run_id}\n", self.final.child(SUCCESS_FILE))
        self.abort()  # the resume state is no longer needed
        self.release()

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

    def has_progress(self) -> bool:
        """Tell whether the staging directory holds a finished partition (worth resuming)."""
        done = self.staging.child(COMPLETIONS_DIR)
        try:
            return any(e.type == pafs.FileType.File for e in done.fs.get_file_info(
                pafs.FileSelector(done.path, allow_not_found=True)))
        except OSError:
            return True  # unreadable: keep it, a rerun decides

    def holds_lock(self) -> bool:
        """Tell whether the output's lock is still this run's (see ``OutputLock.verify``)."""
        try:
            self._lock.verify()
        except (OutputExistsError, ExecutionError):
            return False
        return True

    def abort(self) -> None:
        """Delete the staging directory (best effort); the destination is untouched.

        Nothing is deleted when the lock was lost: the staging is the new holder's then.
        """
        if not self.holds_lock():
            return
        try:
            if _exists(self.staging) != pafs.FileType.NotFound:
                self.staging.fs.delete_dir(self.staging.path)
        except OSError:
            pass


def _missing_parents(loc: Location) -> list[str]:
    """The directories above ``loc`` that do not exist yet, deepest first (paths on its fs).

    An unreadable level ends the walk: nothing above it is ever removed.
    """
    missing: list[str] = []
    path = posixpath.dirname(loc.path.rstrip("/"))
    while path and path not in ("/", "."):
        try:
            if loc.fs.get_file_info(path).type != pafs.FileType.NotFound:
                break
        except OSError:
            break
        missing.append(path)
        path = posixpath.dirname(path)
    return missing


def _remove_empty_dirs(fs: pafs.FileSystem, paths: list[str]) -> None:
    """Remove each directory of ``paths`` (deepest first) while it is empty (best effort).

    Locally ``os.rmdir``, which refuses a directory that is not empty, so a file another
    process puts there meanwhile is never deleted; elsewhere (object stores, where a
    directory is a prefix or a marker) a directory is deleted only when it lists nothing.
    """
    for path in paths:
        try:
            if isinstance(fs, pafs.LocalFileSystem):
                os.rmdir(path)
            elif fs.get_file_info(path).type == pafs.FileType.Directory \
                    and not fs.get_file_info(pafs.FileSelector(path)):
                fs.delete_dir(path)
        except OSError:
            return  # not empty (or not ours to judge): the directories above stay too


def _within(path: str, root: str) -> bool:
    """True when ``path`` is ``root`` or below it (both normalized, absolute)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _is_score_run(fs: pafs.FileSystem, path: str) -> bool:
    """True when ``path`` is a complete ``overlap score`` run's directory.

    That is a ``manifest.json`` naming a run id and its outputs, and a ``_SUCCESS`` holding
    that run id (as :meth:`OutputDir._complete_run` and ``open_run`` decide it); a
    directory that is not readable counts as no run.
    """
    loc = Location(fs, path, path)
    try:
        info = fs.get_file_info([loc.child(SUCCESS_FILE).path, loc.child(MANIFEST_FILE).path])
    except OSError:
        return False
    if any(i.type != pafs.FileType.File for i in info):
        return False
    manifest = read_json(loc.child(MANIFEST_FILE))
    if not isinstance(manifest, dict) or not isinstance(manifest.get("run_id"), str) \
            or not isinstance(manifest.get("outputs"), dict):
        return False
    try:
        with fs.open_input_stream(loc.child(SUCCESS_FILE).path) as fh:
            return bool(fh.read(4096).decode("utf-8", "replace").strip() == manifest["run_id"])
    except OSError:
        return False


def link_error(shown: str, path: str, *, what: str = "output",
               doing: str = "replace it") -> OutputExistsError:
    """The error for a local output that is a symbolic link: it names the real path to pass.

    Args:
        shown: the output as the user gave it.
        path: its local path (resolved for the hint).
        what: ``output`` or ``plot``: the option is ``--`` + ``what``.
        doing: what is refused (``replace it``, ``write through it``).

    Returns:
        An :class:`OutputExistsError` (exit 3) to raise.
    """
    return OutputExistsError(f"{what} {shown} is a symbolic link; refusing to {doing}",
                             hint=f"pass the real path, e.g. --{what} {os.path.realpath(path)}")


def check_output_given(output: str) -> None:
    """Refuse an empty or blank output path, before any other check of it.

    Args:
        output: the output as given (``--output``, ``--plot``, ``--delta``...).

    Raises:
        ConfigError: ``output`` is empty or only white space (exit 2).

    """
    if not output.strip():
        raise ConfigError(f"the output path is empty ({output!r}): name a directory or file "
                          "to write to")


def check_output_place(output: str, *, may_be_run: bool = False,
                       may_be_link: bool = False) -> None:
    """Refuse, before any work, an output that is a symbolic link or lies in a score run.

    A complete ``overlap score`` run's directory holds exactly the files its manifest names:
    anything written into it (a comparison, a report, agreement files, another run) makes it
    a directory that ``overlap score --overwrite`` refuses to replace and that
    ``open_run`` rejects. A symbolic link as the output (the last part of a local path)
    would be replaced by a directory, or written through to wherever it points.

    Args:
        output: the output (a directory, or the report's file; path or URI).
        may_be_run: accept an output that is itself a complete run (``overlap score
            --overwrite`` replaces it whole); one inside a run is refused all the same.
        may_be_link: accept a symbolic link (``publish --delta``, which appends to the
            tables it points to and never replaces the link).

    Raises:
        ConfigError: ``output`` is empty (:func:`check_output_given`).
        OutputExistsError: ``output`` is a symbolic link on the local filesystem, or is (or
            is inside) a complete overlap score run's directory (exit 3; nothing written).

    """
    check_output_given(output)
    shown = output.rstrip("/") or output
    loc = locate(shown)
    local = isinstance(loc.fs, pafs.LocalFileSystem)
    if local and not may_be_link and os.path.islink(loc.path.rstrip("/") or loc.path):
        raise link_error(shown, loc.path)
    path = os.path.realpath(loc.path) if local else loc.path.rstrip("/")
    first = True
    while path and path not in ("/", "."):
        if not (first and may_be_run) and _is_score_run(loc.fs, path):
            where = "is" if first else "is inside"
            raise OutputExistsError(
                f"output {shown} {where} the overlap score run {path}, whose directory holds "
                "only the files its manifest names; refusing to write there",
                hint="write the output beside the run, e.g. in a new directory")
        first = False
        parent = posixpath.dirname(path)
        if parent == path or (not local and "/" not in path):
            break
        path = parent


def check_apart(output: str, inputs: dict[str, str | None]) -> None:
    """Refuse an output inside an input, or an input inside the output, before any work.

    An output inside an input directory would be read back as input by every later run on
    it; an input inside the output would be replaced by the run it feeds. A glob input
    conflicts with the output only when a file the output holds (``examples/part-*.parquet``,
    ``aggregate.parquet``, ``manifest.json``, ``_SUCCESS``, or any file already there) matches
    the pattern as :func:`pipeline.io.files.list_parquet_files` expands it (``fnmatchcase``
    on the path below the glob's directory part, where ``*`` also matches ``/``).

    Args:
        output: the output directory (path or URI).
        inputs: ``{"predictions": path, "references": path or None}``: a file, directory
            or glob.

    Raises:
        ConfigError: the output and an input overlap; an empty output
            (:func:`check_output_given`).

    """
    check_output_given(output)
    out = locate(output.rstrip("/") or output)
    for what, given in inputs.items():
        if not given:
            continue
        parts = given.split("/")
        glob_at = next((i for i, p in enumerate(parts) if any(c in p for c in "*?[")), None)
        root = locate("/".join(parts[:glob_at]) or "." if glob_at is not None else given)
        if type(root.fs) is not type(out.fs):
            continue
        if isinstance(out.fs, pafs.LocalFileSystem):
            a, b = os.path.realpath(out.path), os.path.realpath(root.path)
        else:
            a, b = out.uri.rstrip("/"), root.uri.rstrip("/")
        inside = _within(a, b) and (
            _glob_reaches(out, a[len(b):].lstrip("/"), "/".join(parts[glob_at:]))
            if glob_at is not None else _exists(root) == pafs.FileType.Directory)
        if inside:
            raise ConfigError(f"output {output} is inside the {what} input {given}: later "
                              f"runs on {given} would read it as {what}",
                              hint="write the output elsewhere")
        if _within(b, a):
            raise ConfigError(f"the {what} input {given} is inside the output {output}, "
                              "which the run replaces", hint="write the output elsewhere")


# Files every score run writes, as candidates for a glob input to match (part-* stands for all).
_RUN_FILES = (f"{EXAMPLES_DIR}/part-00000.parquet", AGGREGATE_FILE, MANIFEST_FILE, SUCCESS_FILE)


def _glob_reaches(out: Location, rel: str, pattern: str) -> bool:
    """True when ``pattern`` (relative to the glob's base) matches a file of the output.

    ``rel`` is the output's path below the base. The candidates are the files every run
    writes and the files already under the output.
    """
    names = list(_RUN_FILES)
    with contextlib.suppress(OSError):
        names += [posixpath.relpath(e.path, out.path.rstrip("/"))
                  for e in out.fs.get_file_info(pafs.FileSelector(out.path, recursive=True,
                                                                   allow_not_found=True))
                  if e.type == pafs.FileType.File]
    prefix = f"{rel}/" if rel else ""
    return any(fnmatch.fnmatchcase(prefix + name, pattern) for name in names)


def _sibling_uri(uri: str, name: str) -> str:
    base = uri.rstrip("/")
    return base.rsplit("/", 1)[0] + "/" + name if "/" in base else name


__all__ = ["AGGREGATE_FILE", "COMPLETIONS_DIR", "EXAMPLES_DIR", "MANIFEST_FILE", "REPORT_MARK",
           "STATE_FILE", "SUCCESS_FILE", "OutputDir", "check_apart", "check_output_given",
           "check_output_place", "link_error",
           "check_report_output",
           "checksum", "read_json", "write_json", "write_parquet", "write_report_file",
           "write_text"]
