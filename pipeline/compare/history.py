"""The nightly history of a suite: each night's values, from ``aggregate.parquet`` only.

A nightly ROOT holds complete runs in the ``ROOT/run_date=YYYY-MM-DD/run_id=RUN_ID/`` layout
(``overlap nightly``, ``scripts/nightly.sh``). :func:`read_history` takes, for a candidate,
the complete runs (with ``_SUCCESS``) dated on or before it, other than itself; one run per
date (the newest by the time of its ``_SUCCESS``, as the nightly chooses its baseline); the
last ``window`` dates. From each it reads ``aggregate.parquet`` only (no examples): one value
per (group, metric, measure, statistic), labelled as :mod:`.pairing` labels the compared
groups. :func:`read_history_table` reads the same from the ``aggregates`` table that
``overlap publish`` writes (Delta Lake or Iceberg).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.compare.pairing import _group_label, _kind
from pipeline.errors import InputError

if TYPE_CHECKING:
    from pipeline.io.runs import RunInfo

VALUE_KEY = ("group", "metric", "measure", "statistic")
_DATE = re.compile(r"^run_date=(\d{4}-\d{2}-\d{2})$")
_RUN = re.compile(r"^run_id=(.+)$")


@dataclass(frozen=True)
class Night:
    """One night of the history.

    Attributes:
        run_date: ``YYYY-MM-DD``.
        run_id: the run's id.
        path: the run directory (or the table it was read from).
        values: one row per (group, metric, measure, statistic): those columns and ``value``
            (float64, the aggregate's ``mean`` column: a mean or a corpus score).

    """

    run_date: str
    run_id: str
    path: str
    values: pd.DataFrame = field(repr=False)


@dataclass(frozen=True)
class History:
    """The nights a comparison learns from, oldest first.

    Attributes:
        source: the ROOT or table it was read from.
        nights: the nights, oldest first (at most the window).
        window: the window asked for, in nights.
        notes: runs left out, and why.

    """

    source: str
    nights: tuple[Night, ...]
    window: int
    notes: tuple[str, ...] = ()

    def series(self, keys: pd.DataFrame) -> np.ndarray:
        """Each key row's value on each night.

        Args:
            keys: rows with the :data:`VALUE_KEY` columns.

        Returns:
            float64 (len(keys), len(nights)), NaN where a night has no value for the row.

        """
        out = np.full((len(keys), len(self.nights)), np.nan)
        index = pd.MultiIndex.from_frame(keys[list(VALUE_KEY)].astype(str))
        for j, night in enumerate(self.nights):
            v = night.values.set_index(list(VALUE_KEY))["value"]
            v.index = pd.MultiIndex.from_frame(v.index.to_frame().astype(str))
            v = v[~v.index.duplicated()]
            out[:, j] = v.reindex(index).to_numpy(dtype=np.float64)
        return out


def values_of(aggregate: pa.Table, group_columns: Sequence[str]) -> pd.DataFrame:
    """Label the rows of an ``aggregate.parquet`` table as compare labels its groups.

    Args:
        aggregate: the table (columns ``scope``, the group columns, ``metric``, ``measure``,
            ``statistic``, ``mean``).
        group_columns: the run's group columns.

    Returns:
        Columns ``group`` (``all`` or ``col=value,...``), ``metric``, ``measure``,
        ``statistic``, ``value``; pass-rate rows left out.

    Raises:
        InputError: a column missing.

    """
    need = ["scope", "metric", "measure", "statistic", "mean", *group_columns]
    gone = [c for c in need if c not in aggregate.column_names]
    if gone:
        raise InputError(f"the aggregate has no column {', '.join(map(repr, gone))}")
    cols = {c: aggregate.column(c).to_pylist() for c in need}
    labels = []
    for i, scope in enumerate(cols["scope"]):
        if scope == "all":
            labels.append("all")
        else:
            values = [cols[c][i] for c in group_columns]
            labels.append(_group_label(group_columns, values, [_kind(v) for v in values]))
    frame = pd.DataFrame({"group": labels, "metric": cols["metric"],
                          "measure": cols["measure"], "statistic": cols["statistic"],
                          "value": np.asarray(cols["mean"], dtype=np.float64)})
    return frame[frame["statistic"].isin(["mean", "corpus"])].reset_index(drop=True)


def run_values(run: RunInfo) -> pd.DataFrame:
    """:func:`values_of` a run's ``aggregate.parquet``.

    Raises:
        InputError: the file is missing or unreadable.

    """
    try:
        with run.fs.open_input_file(f"{run.root}/aggregate.parquet") as fh:
            table = pq.read_table(fh)
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read {run.path}/aggregate.parquet: {err}") from err
    return values_of(table, run.group_columns)


def run_date_of(run: RunInfo) -> str | None:
    """A run's date: its ``run_date=`` directory, else its manifest's ``started_at`` day."""
    parent = posixpath.basename(posixpath.dirname(run.root.rstrip("/")))
    match = _DATE.match(parent)
    if match:
        return match.group(1)
    started = run.manifest.get("started_at")
    if isinstance(started, str) and re.match(r"^\d{4}-\d{2}-\d{2}", started):
        return started[:10]
    return None


@dataclass(frozen=True)
class CompleteRun:
    """A complete run found under a nightly ROOT.

    Attributes:
        run_date: its ``run_date=`` directory's date.
        run_id: its ``run_id=`` directory's id.
        path: ``ROOT/run_date=DATE/run_id=ID`` (ROOT as given, joined with ``/``).
        success_mtime: the time its ``_SUCCESS`` was written (seconds since the epoch).

    """

    run_date: str
    run_id: str
    path: str
    success_mtime: float


def complete_runs(root: str) -> list[CompleteRun]:
    """Every complete run (with ``_SUCCESS``) under a nightly ROOT's ``run_date=/run_id=``.

    ROOT is a path or URI taken literally (any characters: spaces, newlines, globs); nothing
    is matched as a pattern. Sorted by date, then ``_SUCCESS`` time, then run id.

    Raises:
        InputError: ROOT cannot be listed or is not a directory.

    """
    import pyarrow.fs as pafs

    from pipeline.io import runs

    fs, base = runs.filesystem(root)
    try:
        top = fs.get_file_info(pafs.FileSelector(base, allow_not_found=False))
    except FileNotFoundError as err:
        raise InputError(f"{root}: no such directory") from err
    except OSError as err:
        raise InputError(f"cannot list {root}: {err}") from err
    found = []
    shown_root = root.rstrip("/") or root
    for entry in top:
        match = _DATE.match(entry.base_name)
        if entry.type != pafs.FileType.Directory or not match:
            continue
        try:
            inner = fs.get_file_info(pafs.FileSelector(entry.path))
        except OSError:
            continue
        for sub in inner:
            m = _RUN.match(sub.base_name)
            if sub.type != pafs.FileType.Directory or not m:
                continue
            marker = fs.get_file_info(posixpath.join(sub.path, runs.SUCCESS_MARKER))
            if marker.type != pafs.FileType.File:
                continue
            stamp = marker.mtime.timestamp() if marker.mtime is not None else 0.0
            found.append(CompleteRun(match.group(1), m.group(1),
                                     f"{shown_root}/{entry.base_name}/{sub.base_name}", stamp))
    return sorted(found, key=lambda r: (r.run_date, r.success_mtime, r.run_id))


def _run_measures(path: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """A run's measures and its default ones, from its manifest's metrics (None: not listed).

    Reads ``manifest.json`` only (not the examples), so a baseline can be chosen cheaply.
    """
    from pipeline.compare.measures import measures_of, primary_measures
    from pipeline.errors import ConfigError
    from pipeline.io import runs
    from pipeline.io.manifest import MANIFEST_NAME, read_manifest
    from pipeline.metrics.registry import specs

    try:
        fs, root = runs.filesystem(path)
        manifest = read_manifest(fs, posixpath.join(root, MANIFEST_NAME), path)
    except InputError:
        return None
    config = manifest.get("config")
    if not isinstance(config, dict):
        return None
    metrics = config.get("metrics")
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    if not isinstance(metrics, list) or not metrics:
        return None
    try:
        found = specs([str(m) for m in metrics], config)
    except ConfigError:
        return None
    return measures_of(found), primary_measures(found)


def comparable_baseline(root: str, *, run_date: str, candidate: str,
                        measures: Sequence[str] | None = None
                        ) -> tuple[CompleteRun | None, list[CompleteRun]]:
    """The nightly baseline: the newest complete run with a measure in common with tonight.

    Newest by date, then by the time its ``_SUCCESS`` was written (a ROOT that does not
    exist yet has no run), but a run with no measure to compare with
    the candidate (``measures``, or by default the baseline's primary measures that the
    candidate also has, as :func:`pipeline.compare.measures.resolve_measures` chooses them)
    is passed over: one odd night (``--score-args "--metrics bleu"``) does not block every
    later night. The measures are read from each run's manifest only. A run whose manifest
    does not list its metrics is taken as comparable (compare decides).

    Args:
        root: the nightly ROOT.
        run_date: tonight's ``YYYY-MM-DD``; later runs are never chosen.
        candidate: tonight's run directory (as :func:`complete_runs` spells it); never chosen.
        measures: the measures asked for (``compare --metrics``), or None for the default.

    Returns:
        (the baseline or None, the newer complete runs passed over, newest first).

    """
    from pipeline.compare.measures import resolve_measures
    from pipeline.errors import ConfigError

    try:
        candidates = [r for r in complete_runs(root)
                      if r.run_date <= run_date and r.path != candidate]
    except InputError:
        return None, []
    tonight = _run_measures(candidate)
    skipped: list[CompleteRun] = []
    for run in reversed(candidates):
        mine = None if tonight is None else _run_measures(run.path)
        if tonight is None or mine is None:
            return run, skipped
        try:
            resolve_measures(measures, mine[0], tonight[0], default=mine[1])
        except InputError:
            skipped.append(run)
            continue
        except ConfigError:
            return run, skipped  # a bad measure name: compare says so
        return run, skipped
    return None, skipped


def read_history(root: str, *, candidate: RunInfo, window: int,
                 exclude: Sequence[str] = ()) -> History:
    """The last ``window`` nights under a nightly ROOT before (or on the date of) a candidate.

    Args:
        root: the nightly ROOT (local path or URI).
        candidate: the candidate run (left out; its date bounds the history).
        window: nights to keep, >= 1.
        exclude: run ids to leave out besides the candidate's.

    Returns:
        A :class:`History` (possibly without nights).

    Raises:
        InputError: ROOT cannot be listed or is not a directory.

    """
    from pipeline.io import runs

    try:
        found_runs = complete_runs(root)
    except InputError as err:
        raise InputError(f"--history {err}") from err
    until = run_date_of(candidate)
    skip = {candidate.run_id, *exclude}
    fs, _ = runs.filesystem(root)
    latest: dict[str, CompleteRun] = {}
    for r in found_runs:
        if (until is not None and r.run_date > until) or r.run_id in skip:
            continue
        try:
            same = runs.filesystem(r.path)[1].rstrip("/") == candidate.root.rstrip("/")
        except InputError:
            same = False
        if not same:
            latest[r.run_date] = r  # sorted: the newest of a date wins
    notes: list[str] = []
    nights: list[Night] = []
    for date in sorted(latest)[-window:]:
        r = latest[date]
        try:
            run = runs.open_run(r.path)
            values = run_values(run)
        except InputError as err:
            notes.append(f"history: {date} left out: {err}")
            continue
        nights.append(Night(date, run.run_id or r.run_id, r.path, values))
    return History(root, tuple(nights), window, tuple(notes))


def read_history_table(*, delta: str | None = None, iceberg: str | None = None,
                       namespace: str = "default", candidate: RunInfo,
                       window: int, storage_options: dict[str, str] | None = None,
                       filters: dict[str, Any] | None = None) -> History:
    """The last ``window`` nights from the ``aggregates`` table of ``overlap publish``.

    One run per ``run_date`` (the last one published that date, by ``published_at`` when
    present, else by run id), dated on or before the candidate, other than the candidate.

    Args:
        delta: the Delta Lake ROOT (the table is ``ROOT/aggregates``), or None.
        iceberg: the Iceberg catalog URI (the table is ``NAMESPACE.aggregates``), or None.
        namespace: the Iceberg namespace.
        candidate: the candidate run.
        window: nights to keep, >= 1.
        storage_options: object-store options for Delta (as publish takes them).
        filters: label columns and their values a night must have (e.g. ``{"model": "m7"}``).

    Returns:
        A :class:`History`.

    Raises:
        InputError: the table cannot be read or lacks the columns.

    """
    if (delta is None) == (iceberg is None):
        raise InputError("read the history from one table: give delta or iceberg")
    try:
        if delta is not None:
            from deltalake import DeltaTable

            where = f"{delta.rstrip('/')}/aggregates"
            table = DeltaTable(where, storage_options=storage_options).to_pyarrow_table()
        else:
            from pyiceberg.catalog.sql import SqlCatalog

            where = f"{namespace}.aggregates"
            catalog = SqlCatalog("overlap", uri=str(iceberg))
            table = catalog.load_table(where).scan().to_arrow()
    except Exception as err:  # noqa: BLE001 - any reader failure is an unreadable table
        raise InputError(f"cannot read the history table {where}: {err}") from err
    frame_cols = {"run_id", "run_date"}
    if not frame_cols <= set(table.column_names):
        raise InputError(f"the history table {where} has no run_id/run_date columns")
    for col, value in (filters or {}).items():
        if col not in table.column_names:
            raise InputError(f"the history table {where} has no column {col!r}")
        table = table.filter(pa.compute.equal(table.column(col), value))
    until = run_date_of(candidate)
    dates = [str(d)[:10] for d in table.column("run_date").to_pylist()]
    ids = table.column("run_id").to_pylist()
    stamps = (table.column("published_at").to_pylist() if "published_at" in table.column_names
              else [None] * table.num_rows)
    latest: dict[str, tuple[str, str]] = {}
    for d, rid, stamp in zip(dates, ids, stamps, strict=True):
        if rid == candidate.run_id or (until is not None and d > until):
            continue
        key = (str(stamp or ""), str(rid))
        if d not in latest or key > latest[d]:
            latest[d] = key
    nights = []
    group_columns = candidate.group_columns
    for d in sorted(latest)[-window:]:
        rid = latest[d][1]
        mask = pa.compute.equal(table.column("run_id"), rid)
        part = table.filter(mask)
        present = [c for c in group_columns if c in part.column_names]
        nights.append(Night(d, rid, where, values_of(part, present)))
    return History(where, tuple(nights), window)


__all__ = ["VALUE_KEY", "CompleteRun", "History", "Night", "complete_runs",
           "read_history", "read_history_table", "run_date_of",
           "run_values", "values_of"]
