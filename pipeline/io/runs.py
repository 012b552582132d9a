"""Read finished ``overlap score`` run directories, and write ``overlap compare`` results.

A run directory (the output contract of ``overlap score``)::

    DIR/examples/part-*.parquet   one row per example: the id, group columns, scores
    DIR/aggregate.parquet         means and intervals
    DIR/manifest.json             run id, signature, resolved config, inputs, counts
    DIR/_SUCCESS                  written last: the run is complete

Only complete runs (with ``_SUCCESS``) are read, and only after they were verified against
their manifest (:func:`open_run`, the one reader of a run that ``publish``, ``compare``,
``report`` and ``explain`` share):

- the manifest's fields have the JSON types ``overlap score`` writes
  (:data:`pipeline.io.manifest.MANIFEST_TYPES`); a missing key falls back to the documented
  default (id column ``id``, no grouping) or to the Parquet key-value metadata
  (``overlap.signature``);
- the files ``outputs`` lists are exactly the files of ``examples/`` (none missing, none
  added), each with the recorded row count, size and SHA-256 checksum, and every Parquet
  file written by another run (key-value metadata ``overlap.run_id``) is refused.

Runs scored before checksums were recorded are verified for everything else (files, rows,
sizes, run ids); a manifest without ``outputs`` (not written by ``overlap score``) is read
from the files of ``examples/``, their run ids checked. Paths are local paths or URIs that
pyarrow's filesystems open (``s3://``, ``gs://``, ``file://``; others through fsspec).
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipeline.errors import ExecutionError, InputError, OutputExistsError
from pipeline.io.checksum import file_sha256
from pipeline.io.manifest import check_manifest, input_files, read_manifest
from pipeline.io.read import input_dataset
from pipeline.io.schema import RUN_ID_KEY
from pipeline.signature import Signature, score_differences

SUCCESS_MARKER = "_SUCCESS"
MANIFEST_NAME = "manifest.json"
EXAMPLES_DIR = "examples"
SIGNATURE_KEY = b"overlap.signature"
AGGREGATE_NAME = "aggregate.parquet"
CHECKSUM_FIELD = "sha256"
TEXT_COLUMN = "prediction"
COMPARE_PARQUET = "compare.parquet"
COMPARE_JSON = "compare.json"


def filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    """Return the filesystem and the path within it for a local path or a URI.

    Resolved as every input and output of the package is (:func:`pipeline.io.files.locate`).

    Raises:
        InputError: a URI whose scheme neither pyarrow nor fsspec can open.

    """
    from pipeline.io.files import locate

    loc = locate(path)
    return loc.fs, loc.path.rstrip("/") or loc.path


@dataclass(frozen=True)
class RunInfo:
    """A complete run directory, opened (footers and manifest read, no data yet).

    Attributes:
        path: the directory as the user gave it.
        root: the directory's path within ``fs``.
        fs: the filesystem holding it.
        manifest: the parsed ``manifest.json`` (a dict; keys as ``overlap score`` wrote them).
        signature: the run's signature (manifest ``signature``, else the Parquet metadata).
        run_id: the manifest's ``run_id`` (None when absent).
        id_column: the id column (manifest ``config.id_column``; default ``id``).
        group_columns: the group columns (manifest ``config.group_by``; default none).
        schema: the Arrow schema of ``examples/part-*.parquet``.
        files: the example files, sorted.
        n_examples: rows over all example files.
        checksums: SHA-256 (hex) of every file verified against the manifest, keyed by its
            path relative to the run directory (``examples/part-00000.parquet``,
            ``aggregate.parquet``); empty when the manifest lists no outputs.

    """

    path: str
    root: str
    fs: pafs.FileSystem = field(repr=False, compare=False)
    manifest: dict[str, Any] = field(repr=False)
    signature: Signature
    run_id: str | None
    id_column: str
    group_columns: tuple[str, ...]
    schema: pa.Schema = field(repr=False)
    files: tuple[str, ...] = field(repr=False)
    n_examples: int
    checksums: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def float_columns(self) -> tuple[str, ...]:
        """Names of the floating-point columns of the examples (the scores), in order."""
        return tuple(f.name for f in self.schema if pa.types.is_floating(f.type))

    @property
    def has_text(self) -> bool:
        """True when the run kept the prediction texts (``--keep-text``)."""
        return TEXT_COLUMN in self.schema.names

    @property
    def config(self) -> dict[str, Any]:
        """The manifest's resolved config (empty when absent)."""
        config = self.manifest.get("config")
        return config if isinstance(config, dict) else {}



def _columns_setting(value: Any) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return tuple(c.strip() for c in value.split(",") if c.strip())
    if isinstance(value, (list, tuple)):
        return tuple(str(c) for c in value)
    return ()


def _example_files(fs: pafs.FileSystem, root: str, path: str) -> list[str]:
    examples = posixpath.join(root, EXAMPLES_DIR)
    try:
        listing = fs.get_file_info(pafs.FileSelector(examples, allow_not_found=True))
    except OSError as err:
        raise InputError(f"cannot list {path}/{EXAMPLES_DIR}: {err}") from err
    files = sorted(f.path for f in listing if f.type == pafs.FileType.File
                   and f.base_name.startswith("part-") and f.base_name.endswith(".parquet"))
    if not files:
        raise InputError(f"{path} has no {EXAMPLES_DIR}/part-*.parquet files")
    return files


def _listed_outputs(manifest: dict[str, Any], path: str) -> dict[str, dict[str, Any]] | None:
    """``{relative path: entry}`` of the files the manifest's ``outputs`` lists, or None."""
    outputs = manifest.get("outputs")
    if not isinstance(outputs, dict) or not isinstance(outputs.get("examples"), list):
        return None
    listed: dict[str, dict[str, Any]] = {}
    for entry in [*outputs["examples"], outputs.get("aggregate")]:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            continue
        rel = posixpath.normpath(entry["path"])
        parent = posixpath.dirname(rel)
        if rel != AGGREGATE_NAME and parent != EXAMPLES_DIR:
            raise InputError(f"{path}/{MANIFEST_NAME}: outputs lists {entry['path']!r}, which is "
                             f"neither {AGGREGATE_NAME} nor a file of {EXAMPLES_DIR}/")
        listed[rel] = entry
    return listed


def _check_listing(files: list[str], listed: dict[str, dict[str, Any]], *, root: str,
                   path: str) -> None:
    have = {posixpath.relpath(f, root) for f in files}
    wanted = {rel for rel in listed if rel != AGGREGATE_NAME}
    missing = sorted(wanted - have)
    if missing:
        rows = listed[missing[0]].get("num_rows")
        raise InputError(f"{path}/{missing[0]} is missing: the run's manifest lists it"
                         + (f" ({rows} rows)" if rows is not None else "")
                         + "; the run is incomplete",
                         hint="restore the file or score the run again")
    foreign = sorted(have - wanted)
    if foreign:
        raise InputError(f"{path}/{foreign[0]} is not a file of this run: its manifest does "
                         "not list it", hint="remove the file, or score the run again")


def _verify_file(fs: pafs.FileSystem, name: str, *, shown: str, run_id: Any,
                 entry: dict[str, Any] | None, checksums: dict[str, str],
                 rel: str) -> pq.FileMetaData:
    """Read a run file's footer and verify it against its manifest entry (when listed)."""
    try:
        with fs.open_input_file(name) as fh:
            size = fh.size()
            meta = pq.ParquetFile(fh).metadata
    except FileNotFoundError as err:
        raise InputError(f"{shown} is missing: the run's manifest lists it") from err
    except (OSError, pa.ArrowInvalid) as err:
        raise InputError(f"cannot read {shown}: {str(err).splitlines()[0]}") from err
    written_by = (meta.metadata or {}).get(RUN_ID_KEY)
    if written_by is not None and run_id is not None \
            and written_by.decode("utf-8", "replace") != str(run_id):
        raise InputError(f"{shown} was written by run "
                         f"{written_by.decode('utf-8', 'replace')}, not by this run ({run_id})",
                         hint="a file of another run was copied into this run directory")
    if entry is None:
        return meta
    rows, size_bytes = entry.get("num_rows"), entry.get("size_bytes")
    if rows is not None and meta.num_rows != rows:
        raise InputError(f"{shown} changed since the run was scored: it has {meta.num_rows} "
                         f"rows, its run's manifest says {rows}")
    if size_bytes is not None and size != size_bytes:
        raise InputError(f"{shown} changed since the run was scored: it has {size} bytes, its "
                         f"run's manifest says {size_bytes}")
    recorded = entry.get(CHECKSUM_FIELD)
    if recorded is not None:
        try:
            found = file_sha256(fs, name)
        except OSError as err:
            raise InputError(f"cannot read {shown}: {err}") from err
        if found != recorded:
            raise InputError(f"{shown} changed since the run was scored: its SHA-256 is "
                             f"{found[:12]}..., its run's manifest says {recorded[:12]}...")
        checksums[rel] = found
    return meta



def _looks_like_input(fs: pafs.FileSystem, root: str) -> bool:
    """Tell whether a directory without ``_SUCCESS`` is an input folder rather than a run.

    True when it holds neither a manifest nor an aggregate (a run that failed or is being
    written has its staging beside it, and a published run has both) but holds Parquet
    files, directly or below (a folder of prediction shards).
    """
    try:
        named = fs.get_file_info([posixpath.join(root, MANIFEST_NAME),
                                  posixpath.join(root, AGGREGATE_NAME)])
        if any(i.type != pafs.FileType.NotFound for i in named):
            return False
        return any(e.type == pafs.FileType.File and e.path.endswith(".parquet")
                   for e in fs.get_file_info(pafs.FileSelector(root, recursive=True)))
    except OSError:
        return False


def _nightly_root(fs: pafs.FileSystem, root: str) -> list[str] | None:
    """The ``run_date=D/run_id=ID`` runs (with ``_SUCCESS``) under a nightly ROOT, newest last.

    None when ``root`` holds no ``run_date=`` directory (not a nightly root); an empty list
    when it holds some but no complete run. Ordered by the directories' names.
    """
    try:
        dates = sorted(e.base_name for e in fs.get_file_info(pafs.FileSelector(root))
                       if e.type == pafs.FileType.Directory
                       and e.base_name.startswith("run_date="))
        if not dates:
            return None
        found = []
        for date in dates:
            for e in sorted(fs.get_file_info(pafs.FileSelector(posixpath.join(root, date))),
                            key=lambda e: e.base_name):
                if e.type == pafs.FileType.Directory and e.base_name.startswith("run_id=") \
                        and fs.get_file_info(posixpath.join(e.path, SUCCESS_MARKER)).type \
                        == pafs.FileType.File:
                    found.append(f"{date}/{e.base_name}")
        return found
    except OSError:
        return None


def _complete_run(path: str, *, hint: str | None = None
                  ) -> tuple[pafs.FileSystem, str, dict[str, Any]]:
    """The filesystem, root and checked manifest of a complete run (with ``_SUCCESS``).

    Raises:
        InputError: a file or nothing at ``path``; a nightly root (``run_date=``
            directories: its newest complete night is named), an input folder, or no
            ``_SUCCESS`` (with ``hint``); a missing, unreadable or ill-typed manifest.

    """
    fs, root = filesystem(path)
    try:
        info = fs.get_file_info([root, posixpath.join(root, SUCCESS_MARKER)])
    except OSError as err:
        raise InputError(f"cannot read {path}: {err}") from err
    if info[0].type == pafs.FileType.File:
        raise InputError(f"{path} is a file, not a run directory",
                         hint="give the directory overlap score wrote, its --output")
    if info[0].type != pafs.FileType.Directory:
        raise InputError(f"{path}: no such run directory")
    if info[1].type != pafs.FileType.File:
        nights = _nightly_root(fs, root)
        if nights is not None:
            shown = path.rstrip("/") or path
            night = (f"e.g. {shown}/{nights[-1]}" if nights
                     else f"{shown}/run_date=YYYY-MM-DD/run_id=ID once one is complete")
            raise InputError(f"{path} is a nightly root (run_date= directories), not a run "
                             "directory", hint=f"give one night's run, {night}; compare and "
                                               "report take the root as --history")
        if _looks_like_input(fs, root):
            raise InputError(f"{path} is not a run directory: it holds Parquet files but no "
                             f"{MANIFEST_NAME} or {AGGREGATE_NAME}; it looks like input "
                             "predictions: score it first",
                             hint=f"overlap score {path} --output DIR, then give DIR")
        raise InputError(f"{path} is not a complete run: it has no {SUCCESS_MARKER} marker",
                         hint=hint)
    manifest = read_manifest(fs, posixpath.join(root, MANIFEST_NAME), path)
    check_manifest(manifest, shown=f"{path}/{MANIFEST_NAME}")
    return fs, root, manifest

def open_run(path: str) -> RunInfo:
    """Open a complete run directory, verified against its manifest (see the module docstring).

    Checks ``_SUCCESS``, reads the manifest and checks its field types, then verifies the
    files: the example files are those ``outputs`` lists, with their rows, sizes and
    checksums, and no file carries another run's id. Every byte of a file with a recorded
    checksum is read once (SHA-256).

    Args:
        path: the run directory (local path or URI).

    Returns:
        A :class:`RunInfo`.

    Raises:
        InputError: not a directory (a file: said to be one); a nightly root (``run_date=``
            directories: said to be one, with its newest complete night); an input folder
            (Parquet files, neither manifest nor aggregate: said to be one); no ``_SUCCESS``
            (incomplete or failed run); a missing or unreadable manifest, or one with a
            field of another JSON type; no example files; a file the manifest lists
            missing, or one it does not list present; a file with other rows, size or
            checksum than the manifest records, or written by another run; files whose
            schemas differ; no signature; the id or group columns missing from the examples.

    """
    fs, root, manifest = _complete_run(
        path, hint="the run failed or is still being written; give the last run that "
                   "finished")
    files = _example_files(fs, root, path)
    run_id = manifest.get("run_id")
    listed = _listed_outputs(manifest, path)
    if listed is not None:
        _check_listing(files, listed, root=root, path=path)
    schema: pa.Schema | None = None
    file_signature: str | None = None
    n_examples = 0
    checksums: dict[str, str] = {}
    for name in files:
        rel = posixpath.relpath(name, root)
        meta = _verify_file(fs, name, shown=f"{path}/{rel}", run_id=run_id,
                            entry=None if listed is None else listed[rel],
                            checksums=checksums, rel=rel)
        this = meta.schema.to_arrow_schema()
        n_examples += meta.num_rows
        if schema is None:
            schema = this
            file_signature = (meta.metadata or {}).get(SIGNATURE_KEY, b"").decode() or None
        elif not this.remove_metadata().equals(schema.remove_metadata()):
            raise InputError(f"{name} has another schema than {files[0]}")
    if listed is not None and AGGREGATE_NAME in listed:
        _verify_file(fs, posixpath.join(root, AGGREGATE_NAME), shown=f"{path}/{AGGREGATE_NAME}",
                     run_id=run_id, entry=listed[AGGREGATE_NAME], checksums=checksums,
                     rel=AGGREGATE_NAME)
    assert schema is not None  # files is not empty
    text = manifest.get("signature") or file_signature
    if not isinstance(text, str) or not text:
        raise InputError(f"{path} has no signature (manifest key 'signature' or Parquet "
                         f"metadata {SIGNATURE_KEY.decode()!r})")
    try:
        signature = Signature.parse(text)
        if file_signature and score_differences(signature, Signature.parse(file_signature)):
            raise InputError(f"{path}: the manifest's signature ({text}) disagrees with the "
                             f"example files' ({file_signature})")
    except ValueError as err:
        raise InputError(f"{path}: unreadable signature: {err}") from err
    config = manifest.get("config")
    if not isinstance(config, dict):
        config = {}
    id_column = str(config.get("id_column") or manifest.get("id_column") or "id")
    group_columns = _columns_setting(config.get("group_by", manifest.get("group_by")))
    missing = [c for c in (id_column, *group_columns) if c not in schema.names]
    if missing:
        raise InputError(f"{path}: the examples have no column {', '.join(map(repr, missing))}",
                         hint=f"they have {', '.join(schema.names)}")
    return RunInfo(path=path, root=root, fs=fs, manifest=manifest, signature=signature,
                   run_id=None if run_id is None else str(run_id), id_column=id_column,
                   group_columns=group_columns, schema=schema, files=tuple(files),
                   n_examples=n_examples, checksums=checksums)


@dataclass(frozen=True)
class RunAggregate:
    """A complete run's ``aggregate.parquet``, read and verified without its examples.

    Attributes:
        path: the directory as the user gave it.
        manifest: the parsed ``manifest.json``.
        signature: the run's signature (manifest ``signature``, else the aggregate's
            Parquet metadata).
        run_id: the manifest's ``run_id`` (None when absent).
        group_columns: the group columns (manifest ``config.group_by``; default none).
        table: the aggregate table, as written.

    """

    path: str
    manifest: dict[str, Any] = field(repr=False)
    signature: Signature
    run_id: str | None
    group_columns: tuple[str, ...]
    table: pa.Table = field(repr=False)

    @property
    def config(self) -> dict[str, Any]:
        """The manifest's resolved config (empty when absent)."""
        config = self.manifest.get("config")
        return config if isinstance(config, dict) else {}


def read_aggregate(path: str) -> RunAggregate:
    """Read a complete run's ``aggregate.parquet``, verifying only what is read.

    The nightly history and a pinned drift reference need a run's aggregate only: this
    checks ``_SUCCESS``, the manifest (field types), and ``aggregate.parquet`` against the
    manifest's entry (rows, size, SHA-256, the run id it was written by), and never lists,
    reads or hashes ``examples/`` (a retention policy may have deleted it).

    Args:
        path: the run directory (local path or URI).

    Returns:
        A :class:`RunAggregate`.

    Raises:
        InputError: not a directory; no ``_SUCCESS``; a missing, unreadable or ill-typed
            manifest; a missing or unreadable aggregate, or one with other rows, size or
            checksum than the manifest records, or written by another run; no signature.

    """
    fs, root, manifest = _complete_run(path)
    run_id = manifest.get("run_id")
    listed = _listed_outputs(manifest, path)
    name = posixpath.join(root, AGGREGATE_NAME)
    meta = _verify_file(fs, name, shown=f"{path}/{AGGREGATE_NAME}", run_id=run_id,
                        entry=None if listed is None else listed.get(AGGREGATE_NAME),
                        checksums={}, rel=AGGREGATE_NAME)
    try:
        with fs.open_input_file(name) as fh:
            table = pq.read_table(fh)
    except (OSError, pa.ArrowInvalid) as err:
        raise InputError(f"cannot read {path}/{AGGREGATE_NAME}: "
                         f"{str(err).splitlines()[0]}") from err
    text = manifest.get("signature") or (meta.metadata or {}).get(SIGNATURE_KEY, b"").decode(
        "utf-8", "replace")
    if not isinstance(text, str) or not text:
        raise InputError(f"{path} has no signature (manifest key 'signature')")
    try:
        signature = Signature.parse(text)
    except ValueError as err:
        raise InputError(f"{path}: unreadable signature: {err}") from err
    config = manifest.get("config")
    config = config if isinstance(config, dict) else {}
    group_columns = _columns_setting(config.get("group_by", manifest.get("group_by")))
    return RunAggregate(path=path, manifest=manifest, signature=signature,
                        run_id=None if run_id is None else str(run_id),
                        group_columns=group_columns, table=table)


def read_examples(run: RunInfo, *, columns: Sequence[str]) -> pd.DataFrame:
    """Read some columns of a run's examples (all files, in sorted file order).

    Args:
        run: an opened run.
        columns: column names to read.

    Returns:
        A DataFrame with those columns, one row per example; a floating-point group column
        with nulls is of object dtype, so that null (None) and NaN stay apart.

    Raises:
        InputError: a column the run does not have, or an unreadable file.

    """
    missing = [c for c in columns if c not in run.schema.names]
    if missing:
        raise InputError(f"{run.path}: the examples have no column "
                         f"{', '.join(map(repr, missing))}")
    try:
        table = pads.dataset(list(run.files), format="parquet",
                             filesystem=run.fs).to_table(columns=list(columns))
    except (OSError, pa.ArrowInvalid) as err:
        raise InputError(f"cannot read the examples of {run.path}: {err}") from err
    frame = table.to_pandas()
    for name in run.group_columns:
        column = table.column(name) if name in table.column_names else None
        if column is not None and column.null_count and pa.types.is_floating(column.type):
            # keep null apart from NaN (pandas would turn both into NaN)
            frame[name] = pd.Series(column.to_pylist(), index=frame.index, dtype=object)
    return frame


def _texts_from(dataset: pads.Dataset, *, id_column: str, text_column: str,
                key_columns: Sequence[str], keys: pd.DataFrame) -> list[str | None]:
    have = set(dataset.schema.names)
    if id_column not in have or text_column not in have:
        raise KeyError(f"no {id_column!r} or {text_column!r} column")
    match_on = [c for c in key_columns if c in have]
    ids = pa.array(keys[id_column].tolist())
    table = dataset.to_table(columns=[*match_on, text_column],
                             filter=pads.field(id_column).isin(ids))
    found = table.to_pandas().drop_duplicates(match_on)
    if found.duplicated([id_column]).any() and len(match_on) == 1:
        raise KeyError("several predictions per id")
    merged = keys[match_on].merge(found, on=match_on, how="left")
    return [None if pd.isna(t) else str(t) for t in merged[text_column]]


# Rows decoded at a time when scanning a row group for wanted ids: the text lookup's peak
# is about this many texts (plus one row group's id column), whatever the row-group size.
LOOKUP_BATCH_ROWS = 16_384


def _texts_from_parquet(fs: pafs.FileSystem, paths: Sequence[str], *, id_column: str,
                        text_column: str, key_columns: Sequence[str],
                        keys: pd.DataFrame) -> list[str | None]:
    """:func:`_texts_from` over Parquet files, reading only the row groups holding the ids.

    Per file and row group: the row group is skipped when its ``id`` statistics (min/max)
    rule out every wanted id; else its id column alone is read and tested; only a row group
    holding a wanted id is read again with the text, in batches of
    :data:`LOOKUP_BATCH_ROWS` rows, keeping the matching rows. Memory is about one row
    group's id column and one batch of texts, not a row group of texts (measured:
    scripts/bench_compare_texts.py, docs/compare.md "Where it runs"). Rows come in file
    then row order, so the first of duplicate keys wins, as in :func:`_texts_from`.

    Args:
        fs: the files' filesystem.
        paths: Parquet files on ``fs``, in order.
        id_column: the id column.
        text_column: the text column.
        key_columns: the key columns of ``keys`` (id first).
        keys: the wanted examples, one row each.

    Returns:
        The texts aligned with ``keys`` rows (None where not found).

    Raises:
        KeyError: the first file has no id or text column; several predictions per id.
        OSError, pyarrow.ArrowException: a file cannot be read.

    """
    import pyarrow.compute as pc

    wanted = pa.array(keys[id_column].tolist())
    pieces: list[pa.Table] = []
    match_on: list[str] | None = None
    for path in paths:
        with fs.open_input_file(path) as fh:
            pf = pq.ParquetFile(fh, pre_buffer=False, buffer_size=1 << 20)
            names = pf.schema_arrow.names
            if match_on is None:
                if id_column not in names or text_column not in names:
                    raise KeyError(f"no {id_column!r} or {text_column!r} column")
                match_on = [c for c in key_columns if c in names]
            if id_column not in names or text_column not in names:
                continue
            id_type = pf.schema_arrow.field(id_column).type
            try:
                ids = wanted.cast(id_type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                continue
            leaf = [i for i in range(pf.metadata.num_columns)
                    if pf.metadata.schema.column(i).path == id_column]
            for g in range(pf.num_row_groups):
                if leaf and not _may_hold(pf.metadata.row_group(g).column(leaf[0]), ids):
                    continue
                held = pf.read_row_group(g, columns=[id_column]).column(0)
                if not pc.any(pc.is_in(held, value_set=ids)).as_py():
                    continue
                del held
                columns = [*match_on, text_column] if text_column not in match_on \
                    else list(match_on)
                for batch in pf.iter_batches(batch_size=LOOKUP_BATCH_ROWS, row_groups=[g],
                                             columns=columns):
                    hit = pc.is_in(batch.column(batch.schema.get_field_index(id_column)),
                                   value_set=ids)
                    if pc.any(hit).as_py():
                        pieces.append(pa.Table.from_batches([batch.filter(hit)]))
    if match_on is None:
        raise KeyError("no file to read")
    columns = [*match_on, text_column]
    if pieces:
        found = pa.concat_tables(pieces, promote_options="permissive").select(columns) \
            .to_pandas().drop_duplicates(match_on)
    else:
        found = pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})
    if found.duplicated([id_column]).any() and len(match_on) == 1:
        raise KeyError("several predictions per id")
    merged = keys[match_on].merge(found, on=match_on, how="left")
    return [None if pd.isna(t) else str(t) for t in merged[text_column]]


def _may_hold(column: Any, ids: pa.Array) -> bool:
    """Tell whether a row group's column chunk may hold one of ``ids`` (its min/max say)."""
    stats = column.statistics
    if stats is None or not stats.has_min_max:
        return True
    try:
        low, high = stats.min, stats.max
        return any(v is not None and low <= v <= high for v in ids.to_pylist())
    except TypeError:
        return True


def read_predictions(run: RunInfo, keys: pd.DataFrame) -> tuple[list[str | None], str | None]:
    """Read the prediction texts of some examples, best effort (to read what moved).

    From the run's ``prediction`` column when it was scored with ``--keep-text``; otherwise
    from the prediction inputs its manifest names, when they are still readable.

    Args:
        run: an opened run.
        keys: the key columns (id, then group columns) of the wanted examples, one row each.

    Returns:
        The texts aligned with ``keys`` rows (None where not found), and a note saying why
        texts are missing (None when nothing is missing).

    """
    if keys.empty:
        return [], None
    key_columns = list(keys.columns)
    if run.has_text:
        texts = _texts_from_parquet(run.fs, list(run.files), id_column=run.id_column,
                                    text_column=TEXT_COLUMN, key_columns=key_columns,
                                    keys=keys)
        return texts, None
    files = input_files(run.manifest, "predictions")
    if not files:
        return [None] * len(keys), "no prediction texts: the run did not keep them " \
                                   "(--keep-text) and its manifest names no input"
    config = run.config
    text_column = str(config.get("prediction_column") or TEXT_COLUMN)
    try:
        fs, _ = filesystem(files[0][0])
        inner = [filesystem(path)[1] for path, _ in files]
        for (path, size), info in zip(files, fs.get_file_info(inner), strict=True):
            if size is not None and info.size != size:
                now = "is gone" if info.type == pafs.FileType.NotFound else \
                    f"has {info.size} bytes, not {size}"
                return [None] * len(keys), (f"no prediction texts: the run did not keep them "
                                            f"and its input {path} {now} (changed since the "
                                            f"run; score with --keep-text)")
        from pipeline.io.read import input_format

        if all(input_format(p) == "parquet" for p in inner):
            texts = _texts_from_parquet(fs, inner, id_column=run.id_column,
                                        text_column=text_column, key_columns=key_columns,
                                        keys=keys)
        else:
            dataset = input_dataset(fs, inner, what="predictions")
            texts = _texts_from(dataset, id_column=run.id_column, text_column=text_column,
                                key_columns=key_columns, keys=keys)
    except Exception as err:  # noqa: BLE001 - texts are a convenience; say why and go on
        return [None] * len(keys), (f"no prediction texts: the run did not keep them and its "
                                    f"inputs are not readable ({type(err).__name__}: {err})")
    missing = sum(t is None for t in texts)
    note = f"{missing} of {len(texts)} texts not found in the run's inputs" if missing else None
    return texts, note


def _is_our_comparison_file(fs: pafs.FileSystem, path: str, name: str) -> bool:
    """Tell whether ``path`` is a ``compare.json``/``compare.parquet`` that compare wrote.

    ``compare.json``: a JSON object with ``baseline``, ``candidate`` and ``alarm``;
    ``compare.parquet``: a Parquet file with the ``overlap.compare`` metadata key.
    """
    try:
        if name == COMPARE_JSON:
            with fs.open_input_stream(path) as fh:
                doc = json.loads(fh.read().decode("utf-8"))
            return isinstance(doc, dict) and {"baseline", "candidate", "alarm"} <= set(doc)
        with fs.open_input_file(path) as fh:
            meta = pq.read_schema(fh).metadata or {}
        return b"overlap.compare" in meta
    except (OSError, ValueError, UnicodeDecodeError):
        return False


def check_comparison_output(output_dir: str) -> None:
    """Refuse, before any work, an output directory :func:`write_comparison` would refuse.

    The directory may be new, or hold anything; only ``compare.json`` and ``compare.parquet``
    are written there, and an existing file of those names is replaced only when compare
    wrote it (an ``overlap compare`` document; a Parquet file with its metadata).

    Args:
        output_dir: the directory (local path or URI).

    Raises:
        OutputExistsError: ``output_dir`` is a file or a symbolic link, is (or is inside) a
            complete overlap score run's directory, or holds a
            ``compare.json``/``compare.parquet`` that compare did not write (exit 3).
        InputError: the storage cannot be read.

    """
    from pipeline.io.write import check_output_place, link_error

    fs, root = filesystem(output_dir)
    shown = output_dir.rstrip("/") or output_dir
    if isinstance(fs, pafs.LocalFileSystem) and os.path.islink(root.rstrip("/")):
        raise link_error(shown, root, doing="write through it")
    try:
        check_output_place(output_dir)
        info = fs.get_file_info(root)
        if info.type == pafs.FileType.NotFound:
            return
        if info.type != pafs.FileType.Directory:
            raise OutputExistsError(f"output {shown} exists and is not a directory; refusing "
                                    "to replace it", hint="name a directory, e.g. --output cmp")
        for name in (COMPARE_JSON, COMPARE_PARQUET):
            path = posixpath.join(root, name)
            kind = fs.get_file_info(path).type
            if kind == pafs.FileType.NotFound:
                continue
            if kind != pafs.FileType.File or (isinstance(fs, pafs.LocalFileSystem)
                                              and os.path.islink(path)) \
                    or not _is_our_comparison_file(fs, path, name):
                raise OutputExistsError(
                    f"output {shown}/{name} exists and was not written by overlap compare; "
                    "refusing to replace it",
                    hint="choose another --output, or remove this file yourself")
    except OSError as err:
        raise InputError(f"cannot read the output {shown}: {err}") from err


def write_comparison(output_dir: str, table: pa.Table, document: dict[str, Any]
                     ) -> tuple[str, str]:
    """Write ``compare.parquet`` and ``compare.json`` into a directory (created if needed).

    Each file is written under a temporary name and renamed into place
    (:func:`pipeline.io.write.write_bytes`), so a reader never sees a half-written file;
    existing files of the same names are replaced only when compare wrote them
    (:func:`check_comparison_output`).

    Args:
        output_dir: the directory (local path or URI).
        table: the per-(group, measure) rows.
        document: the JSON document (must be JSON-serialisable, no NaN).

    Returns:
        The paths of the two files.

    Raises:
        OutputExistsError: see :func:`check_comparison_output` (exit 3; nothing written).
        ExecutionError: the storage refused to create the directory or a write (as for
            every file the package writes).

    """
    from pipeline.io.files import locate
    from pipeline.io.write import write_bytes, write_text

    check_comparison_output(output_dir)
    root = locate(output_dir)
    try:
        root.fs.create_dir(root.path, recursive=True)
    except OSError as err:
        raise ExecutionError(f"cannot write the comparison to {output_dir}: {err}") from None
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    parquet, json_file = root.child(COMPARE_PARQUET), root.child(COMPARE_JSON)
    write_bytes(sink.getvalue().to_pybytes(), parquet)
    write_text(json.dumps(document, indent=2, allow_nan=False, ensure_ascii=False) + "\n",
               json_file)
    return parquet.path, json_file.path


__all__ = ["COMPARE_JSON", "COMPARE_PARQUET", "RunAggregate", "RunInfo",
           "check_comparison_output", "filesystem", "open_run", "read_aggregate",
           "read_examples", "read_predictions", "write_comparison"]
