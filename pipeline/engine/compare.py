"""``overlap compare`` on the engine: two runs paired by id partition by partition.

The order of work, for any :class:`~pipeline.engine.base.Runner` (in-process, local Ray or a
cluster):

1. **Parts.** When both runs were written by ``overlap score`` into the same number of
   partitions (``examples/part-{b}.parquet`` holds the ids of hash bucket ``b``, see
   :mod:`pipeline.io.partition`), part ``b`` is file ``b`` of each run: nothing moves.
   Otherwise every examples file is read once (key and score columns only, never text) and
   split by the hash of its ids into an exchange file (:mod:`pipeline.io.exchange`) in a
   scratch directory, and part ``b`` is bucket ``b`` of every exchange file of both runs.
2. **First pass**, one task per part (:func:`compare_pair`): pair the part's examples by key
   (:func:`pipeline.compare.pairing.pair_part`), return per scope (overall and each group)
   the paired count, exact partial sums, largest values, the counts of examples in one run
   only, the part's top moved examples and its first ids without a pair; keep the paired
   values for the second pass in a scratch file.
3. The driver adds the first passes (:class:`~pipeline.compare.pairing.PairingMerger`) and
   fixes each scope's exact-summation grids.
4. **Second pass**, one task per part (:func:`compare_resample`): the part's share of each
   scope's paired bootstrap and randomization sums, weights keyed by each pair's identity
   hash, values on the scope's grid: exact, so the parts add up to the whole bit for bit.
5. The driver adds them and computes every row: the same :class:`Comparison` as the
   in-memory :func:`pipeline.compare.compare_examples`, holding nothing per example.

Every task holds one part (or one examples file) and returns sums and bounded lists; the
driver holds per scope ``(n_bootstrap * 2k + n_trials * k) * 8`` bytes (k value columns).
The scratch directory (the exchange files and the first pass's files) is made under
``scratch`` (a local path or a URI; :func:`pipeline.api.compare` puts it beside the output
on a cluster, on the output's storage, see :func:`scratch_base`) or, without it, in this
machine's temporary directory, which only an in-process or local-Ray comparison may use:
every task of a part reads what another task wrote, wherever either ran. It is deleted at
the end, also after a failure.
"""

from __future__ import annotations

import math
import os
import posixpath
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from pipeline.compare.pairing import (
    ALL_SCOPE,
    Comparison,
    PairedExamples,
    PairingMerger,
    PartArrays,
    PartPairing,
    pair_part,
    part_resamples,
)
from pipeline.compare.statistics import GridScales, ScopeResamples
from pipeline.engine.base import Runner, small_result
from pipeline.errors import ExecutionError, InputError
from pipeline.io.exchange import PiecesWriter, read_piece
from pipeline.io.files import Location, locate
from pipeline.io.partition import partition_of, split_by_partition

# Rows per part when the runs' examples are exchanged (the score stage's default).
PART_ROWS = 50_000
SCHEME = "partitioned"


@dataclass(frozen=True)
class Side:
    """Where one run's rows of a part are.

    Attributes:
        fs: the run's filesystem.
        files: examples files (the part's own file, or none) or, when ``exchanged``, every
            exchange file of the run.
        exchanged: the files are exchange files (the part is batch ``index`` of each).

    """

    fs: pafs.FileSystem
    files: tuple[str, ...]
    exchanged: bool = False


@dataclass(frozen=True)
class PartJob:
    """One part of a comparison: where its rows are and what to compute.

    Attributes:
        index: the part (hash bucket).
        n_parts: parts in all.
        baseline: the baseline's rows.
        candidate: the candidate's rows.
        columns: the columns read (key and score columns).
        id_column: the id.
        group_columns: the group columns.
        measures: ``METRIC.MEASURE`` names.
        metrics: the metric names whose specs say how measures are computed.
        options: the runs' config (for the registry's specs).
        n_top: moved examples to keep.
        check_buckets: verify that every id is in bucket ``index`` (files of matching
            layouts); a part that is not is reported, not paired.
        spill_uri: where the paired values go between the passes.

    """

    index: int
    n_parts: int
    baseline: Side
    candidate: Side
    columns: tuple[str, ...]
    id_column: str
    group_columns: tuple[str, ...]
    measures: tuple[str, ...]
    metrics: tuple[str, ...]
    options: Mapping[str, Any]
    n_top: int
    check_buckets: bool
    spill_uri: str


def _to_frame(table: pa.Table, group_columns: Sequence[str]) -> pd.DataFrame:
    """A table as :func:`pipeline.io.runs.read_examples` makes a frame of it.

    A floating-point group column with nulls keeps null (None) apart from NaN.
    """
    frame = table.to_pandas()
    for name in group_columns:
        column = table.column(name)
        if column.null_count and pa.types.is_floating(column.type):
            frame[name] = pd.Series(column.to_pylist(), index=frame.index, dtype=object)
    return frame


def _read_side(side: Side, job: PartJob, schema_of: str) -> pa.Table:
    tables = []
    for name in side.files:
        if side.exchanged:
            tables.append(read_piece(locate(name), job.index, job.n_parts, job.columns))
            continue
        try:
            with side.fs.open_input_file(name) as fh:
                tables.append(pq.ParquetFile(fh).read(columns=list(job.columns)))
        except (OSError, pa.ArrowException) as e:
            raise InputError(f"cannot read the examples of the {schema_of} run: {name}: {e}"
                             ) from None
    if not tables:
        return pa.table({})
    return pa.concat_tables(tables, promote_options="default") if len(tables) > 1 \
        else tables[0]


def _specs(job: PartJob) -> tuple[Any, ...]:
    if not job.metrics:
        return ()
    from pipeline.metrics.registry import specs

    return tuple(specs(list(job.metrics), dict(job.options)))


def _frames(job: PartJob) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Both runs' rows of the part (None: a file holds ids of other buckets)."""
    frames: list[pd.DataFrame | None] = []
    for side, name in ((job.baseline, "baseline"), (job.candidate, "candidate")):
        table = _read_side(side, job, name)
        if table.num_columns == 0:
            frames.append(None)
            continue
        if job.check_buckets and job.n_parts > 1 and table.num_rows:
            ids = table.column(job.id_column)
            if ids.null_count or (partition_of(ids, job.n_parts) != job.index).any():
                return None
        frames.append(_to_frame(table, job.group_columns))
    base, cand = frames
    if base is None and cand is None:
        return pd.DataFrame(columns=list(job.columns)), pd.DataFrame(columns=list(job.columns))
    if base is None:
        assert cand is not None
        base = cand.iloc[:0].copy()
    if cand is None:
        cand = base.iloc[:0].copy()
    return base, cand


def _pair(job: PartJob) -> tuple[PartPairing, PartArrays] | None:
    frames = _frames(job)
    if frames is None:
        return None
    return pair_part(frames[0], frames[1], measures=job.measures, specs=_specs(job),
                     id_column=job.id_column, group_columns=job.group_columns, n_top=job.n_top)


def _write_spill(arrays: PartArrays, uri: str) -> None:
    k = arrays.baseline.shape[1]
    table = pa.table({"hash": arrays.hashes, "code": arrays.codes,
                      **{f"b{q}": arrays.baseline[:, q] for q in range(k)},
                      **{f"c{q}": arrays.candidate[:, q] for q in range(k)}})
    loc = locate(uri)
    tmp = f"{loc.path}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with loc.fs.open_output_stream(tmp) as sink, ipc.new_file(sink, table.schema) as out:
            out.write_table(table)
        loc.fs.move(tmp, loc.path)
    except OSError as e:
        raise ExecutionError(f"cannot write the comparison's scratch file {uri}: {e}") from None


def _read_spill(uri: str) -> PartArrays | None:
    loc = locate(uri)
    try:
        if isinstance(loc.fs, pafs.LocalFileSystem):
            source: pa.NativeFile = pa.memory_map(loc.path)
        else:
            source = loc.fs.open_input_file(loc.path)
        table = ipc.open_file(source).read_all()
    except (OSError, pa.ArrowInvalid):
        return None
    k = (table.num_columns - 2) // 2

    def matrix(prefix: str) -> np.ndarray:
        if not table.num_rows:
            return np.zeros((0, k))
        return np.column_stack([table.column(f"{prefix}{q}").to_numpy() for q in range(k)])

    return PartArrays(table.column("hash").to_numpy(), table.column("code").to_numpy(),
                      matrix("b"), matrix("c"))


@small_result
def compare_split(fs: pafs.FileSystem, path: str, columns: Sequence[str], id_column: str,
                  n_parts: int, exchange_uri: str) -> int:
    """Split one examples file's key and score columns by part into an exchange file.

    Returns:
        The rows read.

    Raises:
        InputError: the file cannot be read, or has null ids.
        ExecutionError: the scratch storage refused the write.

    """
    try:
        with fs.open_input_file(path) as fh:
            table = pq.ParquetFile(fh).read(columns=list(columns))
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"cannot read {path}: {e}") from None
    ids = table.column(id_column)
    if ids.null_count:
        raise InputError(f"{path} has examples with a null id in {id_column!r}")
    writer = PiecesWriter(locate(exchange_uri), n_parts)
    try:
        writer.write([table] if n_parts == 1 else
                     split_by_partition(table, partition_of(ids, n_parts), n_parts))
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return table.num_rows


@small_result
def compare_pair(job: PartJob) -> PartPairing | None:
    """The first pass over a part (:func:`pipeline.compare.pairing.pair_part`).

    Its paired values are written to ``job.spill_uri`` for the second pass.

    Returns:
        The part's pairing; None when the part's files hold other buckets' ids.

    Raises:
        InputError: as :func:`pipeline.compare.compare_examples`, for the part's examples.
        ExecutionError: the scratch storage refused the write.

    """
    done = _pair(job)
    if done is None:
        return None
    pairing, arrays = done
    _write_spill(arrays, job.spill_uri)
    return pairing


@small_result
def compare_resample(job: PartJob, local: Sequence[tuple], grids: Mapping[tuple, GridScales],
                     n_bootstrap: int, n_trials: int, seed: int
                     ) -> dict[tuple, ScopeResamples]:
    """The second pass over a part (:func:`pipeline.compare.pairing.part_resamples`).

    Reads the first pass's scratch file (or pairs the part again when it is not there).
    """
    arrays = _read_spill(job.spill_uri)
    if arrays is None:
        done = _pair(job)
        if done is None:
            raise ExecutionError(f"part {job.index} of the comparison changed between passes")
        local, arrays = done[0].local, done[1]
    return part_resamples(arrays, local, grids, n_bootstrap=n_bootstrap, n_trials=n_trials,
                          seed=seed)


def _completed(runner: Runner, fn: Callable[..., Any], args_list: Sequence[tuple[Any, ...]]
               ) -> Iterator[tuple[int, Any]]:
    handles = [runner.submit(fn, *args) for args in args_list]
    try:
        yield from runner.as_completed(handles)
    except BaseException:
        runner.cancel(handles)
        raise


def matching_parts(run: Any) -> dict[int, str] | None:
    """A run's examples files by partition, when ``overlap score`` recorded them.

    Returns:
        ``{partition: file path}`` (partitions without examples have no file), or None when
        the manifest does not say (a run written otherwise: its files are exchanged).

    """
    counts = run.manifest.get("counts")
    outputs = run.manifest.get("outputs")
    if not isinstance(counts, dict) or not isinstance(outputs, dict):
        return None
    n = counts.get("partitions")
    entries = outputs.get("examples")
    if not isinstance(n, int) or n < 1 or not isinstance(entries, list):
        return None
    by_name = {posixpath.relpath(f, run.root): f for f in run.files}
    out: dict[int, str] = {}
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("partition"), int) \
                or e.get("path") not in by_name or e["partition"] in out:
            return None
        out[e["partition"]] = by_name[e["path"]]
    if len(out) != len(by_name) or any(not 0 <= b < n for b in out):
        return None
    return out


def _n_parts(run: Any) -> int:
    counts = run.manifest.get("counts")
    n = counts.get("partitions") if isinstance(counts, dict) else None
    return n if isinstance(n, int) else 0


def compare_on_engine(
    base: Any,
    cand: Any,
    *,
    runner: Runner,
    columns: Sequence[str],
    measures: Sequence[str],
    metrics: Sequence[str],
    options: Mapping[str, Any],
    group_columns: Sequence[str],
    n_top: int,
    band: float,
    bands: Mapping[str, float] | None,
    confidence: float,
    n_bootstrap: int,
    seed: int,
    max_missing: float,
    adjust: str,
    examples: Callable[[], PairedExamples] | None = None,
    scratch: str | None = None,
    part_rows: int = PART_ROWS,
    on_top: Callable[[pd.DataFrame], None] | None = None,
) -> Comparison:
    """Compare two opened runs on ``runner`` (see the module docstring).

    Args:
        base: the baseline (:class:`pipeline.io.runs.RunInfo`).
        cand: the candidate.
        runner: where the tasks run.
        columns: the columns to read (id, group and score columns).
        measures: ``METRIC.MEASURE`` names.
        metrics: the metric names of the specs to use (empty: every measure a mean).
        options: the config the specs are made with.
        group_columns: the group columns (part of the key).
        n_top: moved examples to list, >= 0.
        band: as :func:`pipeline.compare.compare_examples`.
        bands: as :func:`pipeline.compare.compare_examples`.
        confidence: as :func:`pipeline.compare.compare_examples`.
        n_bootstrap: as :func:`pipeline.compare.compare_examples`.
        seed: as :func:`pipeline.compare.compare_examples`.
        max_missing: as :func:`pipeline.compare.compare_examples`.
        adjust: as :func:`pipeline.compare.compare_examples`.
        examples: makes the per-example pairs when one asks for them (a plot).
        scratch: a directory (path or URI) on storage every worker reads, under which the
            scratch directory ``overlap-compare-{random}`` is made and deleted at the end
            (None: this machine's temporary directory, for in-process and local-Ray runs).
        part_rows: rows per part when the examples are exchanged, >= 1.
        on_top: called with the top moved examples (key columns first, as
            :meth:`Comparison.top` gives them) once the first pass is merged, while the
            second pass runs (the caller reads their texts meanwhile).

    Returns:
        The :class:`Comparison` (``scheme`` ``partitioned``).

    Raises:
        InputError: as :func:`pipeline.compare.compare_examples`; unreadable files.
        ExecutionError: the engine or the scratch storage failed.

    """
    work = _make_scratch(scratch)
    try:
        common = {"columns": tuple(columns), "id_column": base.id_column,
                  "group_columns": tuple(group_columns), "measures": tuple(measures),
                  "metrics": tuple(metrics), "options": dict(options), "n_top": n_top}

        def spill(b: int) -> str:
            return f"{work.uri}/pairs-{b:05d}.arrow"

        jobs: list[PartJob] = []
        parts_b, parts_c = matching_parts(base), matching_parts(cand)
        n = _n_parts(base)
        if parts_b is not None and parts_c is not None and n and n == _n_parts(cand):
            jobs = [PartJob(index=b, n_parts=n,
                            baseline=Side(base.fs, (parts_b[b],) if b in parts_b else ()),
                            candidate=Side(cand.fs, (parts_c[b],) if b in parts_c else ()),
                            check_buckets=True, spill_uri=spill(b), **common)
                    for b in range(n) if b in parts_b or b in parts_c]
        merger = _first_pass(runner, jobs, measures=measures, group_columns=group_columns,
                             options=options, metrics=metrics, id_column=base.id_column,
                             n_top=n_top) if jobs else None
        if merger is None:  # other layouts: exchange the rows by id
            n = max(1, math.ceil(max(base.n_examples, cand.n_examples) / max(part_rows, 1)))
            exchanged: dict[str, list[str]] = {}
            splits = []
            for name, run in (("baseline", base), ("candidate", cand)):
                exchanged[name] = [f"{work.uri}/exchange/{name}-{i:05d}.arrow"
                                   for i in range(len(run.files))]
                splits += [(run.fs, f, tuple(columns), run.id_column, n, u)
                           for f, u in zip(run.files, exchanged[name], strict=True)]
            for _ in _completed(runner, compare_split, splits):
                pass
            jobs = [PartJob(index=b, n_parts=n,
                            baseline=Side(work.fs, tuple(exchanged["baseline"]),
                                          exchanged=True),
                            candidate=Side(work.fs, tuple(exchanged["candidate"]),
                                           exchanged=True),
                            check_buckets=False, spill_uri=spill(b), **common)
                    for b in range(n)]
            merger = _first_pass(runner, jobs, measures=measures, group_columns=group_columns,
                                 options=options, metrics=metrics, id_column=base.id_column,
                                 n_top=n_top)
            assert merger is not None
        merger.check_paired()
        if on_top is not None and merger.top is not None:
            on_top(merger.top.drop(columns=merger.kinds))
        grids = merger.grids()
        locals_ = merger.part_scopes
        args = []
        for job in jobs:
            local = locals_.get(job.index, [])
            wanted = {s: grids[s] for s in (ALL_SCOPE, *local) if s in grids}
            args.append((job, local, wanted, n_bootstrap, n_bootstrap, seed))
        for _, share in _completed(runner, compare_resample, args):
            merger.add_resamples(share)
        return merger.comparison(band=band, bands=bands, confidence=confidence,
                                 n_bootstrap=n_bootstrap, seed=seed, max_missing=max_missing,
                                 adjust=adjust, examples=examples)
    finally:
        _drop_scratch(work)


def _make_scratch(base: str | None) -> Location:
    """Create the comparison's scratch directory under ``base`` (None: the temp dir).

    Raises:
        ExecutionError: the storage refused.

    """
    if base is None:
        path = tempfile.mkdtemp(prefix="overlap-compare-")
        return Location(pafs.LocalFileSystem(), path, path)
    loc = locate(base.rstrip("/") or base).child(f"overlap-compare-{uuid.uuid4().hex[:12]}")
    try:
        loc.fs.create_dir(loc.path, recursive=True)
    except OSError as e:
        raise ExecutionError(f"cannot create the comparison's scratch directory {loc.uri}: "
                             f"{e}", hint="choose another --scratch") from None
    return loc


def _drop_scratch(work: Location) -> None:
    """Delete the scratch directory, and ``base`` too when it is our own (best effort)."""
    if isinstance(work.fs, pafs.LocalFileSystem):
        shutil.rmtree(work.path, ignore_errors=True)
    else:
        try:
            work.fs.delete_dir(work.path)
        except OSError:
            pass
    head = posixpath.dirname(work.path)
    if posixpath.basename(head).startswith(".") and SCRATCH_MARK in posixpath.basename(head):
        try:  # the default base beside the output (scratch_base) is ours: remove it if empty
            if isinstance(work.fs, pafs.LocalFileSystem):
                os.rmdir(head)
            elif not work.fs.get_file_info(pafs.FileSelector(head, allow_not_found=True)):
                work.fs.delete_dir(head)
        except OSError:
            pass


# The default scratch base's name: ``.{name}.overlap-compare-scratch`` beside the output.
SCRATCH_MARK = ".overlap-compare-scratch"


def scratch_base(output: str | None, candidate: str) -> str:
    """Default scratch base of a cluster comparison: beside ``output``, else the candidate.

    ``s3://b/cmp/night`` -> ``s3://b/cmp/.night.overlap-compare-scratch`` (a hidden sibling on
    the same storage, removed again when empty).
    """
    target = (output or candidate).rstrip("/") or (output or candidate)
    head, sep, name = target.rpartition("/")
    hidden = f".{name}{SCRATCH_MARK}"
    return f"{head}/{hidden}" if sep else hidden


def _first_pass(runner: Runner, jobs: Sequence[PartJob], *, measures: Sequence[str],
                group_columns: Sequence[str], options: Mapping[str, Any],
                metrics: Sequence[str], id_column: str, n_top: int) -> PairingMerger | None:
    """Run the first pass; None when a part's files held other buckets' ids."""
    from pipeline.metrics.registry import specs

    merger = PairingMerger(measures=measures,
                           specs=tuple(specs(list(metrics), dict(options))) if metrics else (),
                           id_column=id_column, group_columns=group_columns, n_top=n_top)
    for i, part in _completed(runner, compare_pair, [(job,) for job in jobs]):
        if part is None:
            return None
        merger.add(part)
        merger.part_scopes[jobs[i].index] = part.local
    return merger


__all__ = ["PART_ROWS", "SCHEME", "SCRATCH_MARK", "PartJob", "Side", "compare_on_engine",
           "compare_pair", "compare_resample", "compare_split", "matching_parts", "scratch_base"]
