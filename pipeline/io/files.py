"""Locating files: local paths and URIs, a file, a directory of shards, or a glob.

Filesystems come from pyarrow (``file://``, ``s3://``, ``gs://``, ``hdfs://``, local paths;
``s3://`` with the object-storage settings of :mod:`pipeline.io.storage` when any is set);
any other scheme that fsspec knows (``memory://``, ``az://`` with adlfs, ...) is opened through
fsspec. Workers receive URIs (strings) and open the filesystem themselves, so nothing
unpicklable crosses process boundaries.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from pipeline.errors import ExecutionError, InputError

_GLOB_CHARS = "*?["


@dataclass(frozen=True)
class Location:
    """A path on a filesystem.

    Attributes:
        fs: the pyarrow filesystem.
        path: the path on ``fs`` (no scheme).
        uri: the form a user (and a worker) can resolve again: the local absolute path, or
            ``scheme://path``.

    """

    fs: pafs.FileSystem
    path: str
    uri: str

    def child(self, name: str) -> Location:
        """Return the location of ``name`` (may contain ``/``) below this one."""
        return Location(self.fs, posixpath.join(self.path, name),
                        self.uri.rstrip("/") + "/" + name)


def _scheme(uri: str) -> str:
    head, sep, _ = uri.partition("://")
    return head.lower() if sep and "/" not in head else ""


@functools.lru_cache(maxsize=32)
def _fsspec_filesystem(scheme: str) -> pafs.FileSystem:
    import fsspec

    return pafs.PyFileSystem(pafs.FSSpecHandler(fsspec.filesystem(scheme)))


def locate(uri: str) -> Location:
    """Resolve a local path or URI to a filesystem and path (nothing is read).

    Args:
        uri: a local path (relative or absolute) or ``scheme://...``.

    Raises:
        InputError: a scheme neither pyarrow nor fsspec can open.
        ExecutionError: the store cannot be reached (pyarrow asks S3 for a bucket's region
            when no region is set; an unresolvable endpoint fails here).

    """
    scheme = _scheme(uri)
    if not scheme:
        path = os.path.abspath(os.path.expanduser(uri))
        return Location(pafs.LocalFileSystem(), path, path)
    if scheme == "file":
        path = uri.split("://", 1)[1]
        return Location(pafs.LocalFileSystem(), path, path)
    if scheme in ("s3", "s3a"):
        from pipeline.io import storage

        options = storage.current()
        if options.is_set:  # the storage settings (pipeline.io.storage), else pyarrow's own
            return Location(storage.pyarrow_s3(options), uri.split("://", 1)[1].rstrip("/"),
                            uri)
    try:
        fs, path = pafs.FileSystem.from_uri(uri)
        return Location(fs, path, uri)
    except OSError as e:  # not ArrowInvalid (a ValueError): the store did not answer
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExecutionError(f"cannot open {uri}: {first}",
                             hint="check the storage settings (docs/cluster.md, object "
                                  "storage settings) and the network") from None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as pa_error:
        try:
            fs = _fsspec_filesystem(scheme)
        except (ImportError, ValueError) as e:
            raise InputError(f"cannot open {uri}: no filesystem for {scheme}:// "
                             f"({pa_error}; fsspec: {e})") from None
        return Location(fs, uri.split("://", 1)[1], uri)


def is_local(uri: str) -> bool:
    """True when ``uri`` is a path on this machine's own filesystem (a path or ``file://``)."""
    return _scheme(uri) in ("", "file")


def check_shared(paths: dict[str, str | None], *, address: str,
                 allow_local_paths: bool) -> None:
    """Refuse local paths for a run on a Ray cluster, whose workers may be other hosts.

    A worker on another host cannot see this machine's files: it would fail after the run
    started, or write outputs and temporary files into its own disk. Single-host clusters
    (every node on this machine, or a disk shared at the same path by every node) opt in
    with ``allow_local_paths``.

    Args:
        paths: what each path is (``--output``, ``--scratch``, ``PREDICTIONS``...) -> the
            path or URI given (None: not given).
        address: the cluster address (for the message).
        allow_local_paths: accept local paths (``--allow-local-paths``).

    Raises:
        ConfigError: a local path (exit 2, one line naming it).

    """
    if allow_local_paths:
        return
    from pipeline.errors import ConfigError

    for what, uri in paths.items():
        if uri is not None and is_local(uri):
            raise ConfigError(
                f"{what} {uri} is a local path, but --address {address} runs tasks on a "
                "cluster whose workers may be other machines that cannot see it",
                hint="use storage every node reads (s3://..., or a path shared by every "
                     "node) and, for a single-host cluster or a disk mounted at the same "
                     "path on every node, add --allow-local-paths")


def list_parquet_files(uri: str, *, what: str) -> list[Location]:
    """List the Parquet files a user means by ``uri``, in sorted path order.

    Args:
        uri: a file; a directory (every ``*.parquet`` below it, recursively, skipping names
            that start with ``_`` or ``.`` such as ``_SUCCESS``); or a glob (``*``, ``?``,
            ``[...]`` in the last path components).
        what: how to name the input in errors (``predictions``, ``references``).

    Returns:
        At least one location, sorted by path.

    Raises:
        InputError: nothing exists at ``uri`` or it holds no Parquet file.

    """
    if any(c in uri for c in _GLOB_CHARS):
        return _glob(uri, what=what)
    loc = locate(uri)
    info = _info(loc, what=what)
    if info.type == pafs.FileType.File:
        return [loc]
    if info.type == pafs.FileType.NotFound:
        raise InputError(f"{what}: {uri} does not exist")
    selector = pafs.FileSelector(loc.path, recursive=True)
    found = []
    for entry in loc.fs.get_file_info(selector):
        rel = posixpath.relpath(entry.path, loc.path)
        if entry.type != pafs.FileType.File or not rel.endswith(".parquet") \
                or any(part.startswith(("_", ".")) for part in rel.split("/")):
            continue
        found.append(loc.child(rel))
    if not found:
        raise InputError(f"{what}: no *.parquet file in directory {uri}")
    return sorted(found, key=lambda x: x.path)


def _info(loc: Location, *, what: str) -> pafs.FileInfo:
    try:
        return loc.fs.get_file_info(loc.path)
    except OSError as e:
        raise InputError(f"{what}: cannot access {loc.uri}: {e}") from None


def _glob(uri: str, *, what: str) -> list[Location]:
    # The part before the first component with a glob character is listed recursively.
    parts = uri.split("/")
    first = next(i for i, p in enumerate(parts) if any(c in p for c in _GLOB_CHARS))
    base_uri = "/".join(parts[:first]) or "."
    base = locate(base_uri)
    pattern = "/".join(parts[first:])
    if _info(base, what=what).type != pafs.FileType.Directory:
        raise InputError(f"{what}: no file matches {uri}")
    found = []
    for entry in base.fs.get_file_info(pafs.FileSelector(base.path, recursive=True)):
        rel = posixpath.relpath(entry.path, base.path)
        if entry.type == pafs.FileType.File and fnmatch.fnmatchcase(rel, pattern):
            found.append(base.child(rel))
    if not found:
        raise InputError(f"{what}: no file matches {uri}")
    return sorted(found, key=lambda x: x.path)
