"""The nightly history of a suite: each night's values, from ``aggregate.parquet`` only.

A nightly ROOT holds complete runs in the ``ROOT/run_date=YYYY-MM-DD/run_id=RUN_ID/`` layout
(``overlap nightly``, ``scripts/nightly.sh``). :func:`read_history` takes, for a candidate,
the complete runs (with ``_SUCCESS``) dated on or before it, other than itself; one run per
date (the newest by the time of its ``_SUCCESS``, as the nightly chooses its baseline); the
last ``window`` dates. Nights are told apart by their directories, never by run id (a
nightly with a fixed ``RUN_ID`` has one id every night), and a ``run_date=`` directory whose
date does not exist (``2026-02-30``) is no night. From each it reads and verifies
``aggregate.parquet`` only (:func:`pipeline.io.runs.read_aggregate`; ``examples/`` may have
been deleted by a retention policy): one value per (group, metric, measure, statistic),
labelled as :mod:`.pairing` labels the compared groups; a night whose aggregate is missing,
changed or ill-typed is left out with a note. :func:`read_history_table` reads the same from
the ``aggregates`` table that ``overlap publish`` writes (Delta Lake or Iceberg).

:func:`comparable_history` keeps, of each night, only the metrics scored as the candidate
was for them (the compared measures' signature fields, as compare checks the two runs) and
says what it left out, and whether the nights are too few to learn from.
:func:`night_alarms` reads the alarms of earlier nights' ``compare.json`` for the report's
trend chart, leaving out (with a note) a document it cannot read.
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
from pipeline.config_checks import parse_run_date
from pipeline.errors import ConfigError, InputError, SignatureMismatchError

if TYPE_CHECKING:
    from pipeline.io.runs import RunAggregate, RunInfo
    from pipeline.signature import Signature

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
        signature: the run's signature (None: unknown, e.g. a table without the column).
        config: the run's resolved config (its manifest's; empty when unknown).

    """

    run_date: str
    run_id: str
    path: str
    values: pd.DataFrame = field(repr=False)
    signature: Signature | None = None
    config: dict[str, Any] = field(default_factory=dict, repr=False)


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
        InputError: a column missing; ``scope``, ``metric``, ``measure`` or ``statistic``
            not text or with nulls; ``mean`` not numbers (text, lists, structs...).

    """
    need = ["scope", "metric", "measure", "statistic", "mean", *group_columns]
    gone = [c for c in need if c not in aggregate.column_names]
    if gone:
        raise InputError(f"the aggregate has no column {', '.join(map(repr, gone))}")
    for name in ("scope", "metric", "measure", "statistic"):
        kind = aggregate.schema.field(name).type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise InputError(f"the aggregate's column {name!r} holds {kind}, not text")
        if aggregate.column(name).null_count:
            raise InputError(f"the aggregate's column {name!r} has "
                             f"{aggregate.column(name).null_count} nulls")
    kind = aggregate.schema.field("mean").type
    if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
        raise InputError(f"the aggregate's column 'mean' holds {kind}, not numbers")
    cols = {c: aggregate.column(c).to_pylist() for c in need}
    labels = []
    for i, scope in enumerate(cols["scope"]):
        if scope == "all":
            labels.append("all")
        else:
            values = [cols[c][i] for c in group_columns]
            labels.append(_group_label(group_columns, values, [_kind(v) for v in values]))
    mean = np.asarray([np.nan if v is None else v for v in cols["mean"]], dtype=np.float64)
    frame = pd.DataFrame({"group": labels, "metric": cols["metric"],
                          "measure": cols["measure"], "statistic": cols["statistic"],
                          "value": mean})
    return frame[frame["statistic"].isin(["mean", "corpus"])].reset_index(drop=True)


def run_values(run: RunInfo) -> pd.DataFrame:
    """:func:`values_of` a run's ``aggregate.parquet`` (a run opened and verified whole).

    Raises:
        InputError: the file is missing or unreadable, or its columns are not as
            ``overlap score`` writes them (the message names the file and the column).

    """
    try:
        with run.fs.open_input_file(f"{run.root}/aggregate.parquet") as fh:
            table = pq.read_table(fh)
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read {run.path}/aggregate.parquet: {err}") from err
    return _labelled(table, run.group_columns, f"{run.path}/aggregate.parquet")


def aggregate_values(run: RunAggregate) -> pd.DataFrame:
    """:func:`values_of` an aggregate read by :func:`pipeline.io.runs.read_aggregate`.

    Raises:
        InputError: its columns are not as ``overlap score`` writes them.

    """
    return _labelled(run.table, run.group_columns, f"{run.path}/aggregate.parquet")


def _labelled(table: pa.Table, group_columns: Sequence[str], shown: str) -> pd.DataFrame:
    try:
        return values_of(table, group_columns)
    except InputError as err:
        raise InputError(f"{shown}: {err}") from err


def is_run_date(text: str) -> bool:
    """Tell whether ``text`` is a real ``YYYY-MM-DD`` date, as RUN_DATE checks it."""
    try:
        parse_run_date(text)
    except ConfigError:
        return False
    return True


def run_date_of(run: RunInfo) -> str | None:
    """A run's date: its ``run_date=`` directory, else its manifest's ``started_at`` day."""
    parent = posixpath.basename(posixpath.dirname(run.root.rstrip("/")))
    match = _DATE.match(parent)
    if match and is_run_date(match.group(1)):
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


def complete_runs(root: str, *, ignored: list[str] | None = None) -> list[CompleteRun]:
    """Every complete run (with ``_SUCCESS``) under a nightly ROOT's ``run_date=/run_id=``.

    ROOT is a path or URI taken literally (any characters: spaces, newlines, globs); nothing
    is matched as a pattern. A ``run_date=`` directory whose date does not exist
    (``2026-02-30``, ``0000-00-00``: the dates RUN_DATE refuses) holds no night. Sorted by
    date, then ``_SUCCESS`` time, then run id.

    Args:
        root: the nightly ROOT.
        ignored: when given, the names of the ``run_date=`` directories passed over for their
            impossible date are appended to it.

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
        if not is_run_date(match.group(1)):
            if ignored is not None:
                ignored.append(entry.base_name)
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


@dataclass(frozen=True)
class _RunScoring:
    """What a run's manifest says about how it was scored (for choosing a baseline)."""

    measures: tuple[str, ...]
    primary: tuple[str, ...]
    signature: Signature | None
    config: dict[str, Any]


def _run_scoring(path: str) -> _RunScoring | None:
    """A run's measures, default measures and signature, from its manifest (None: unknown).

    Reads ``manifest.json`` only (not the examples), so a baseline can be chosen cheaply.
    A manifest without a readable signature gives ``signature`` None.
    """
    from pipeline.compare.measures import measures_of, primary_measures
    from pipeline.io import runs
    from pipeline.io.manifest import MANIFEST_NAME, read_manifest
    from pipeline.metrics.registry import specs
    from pipeline.signature import Signature

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
    signature: Signature | None = None
    text = manifest.get("signature")
    if isinstance(text, str) and text:
        try:
            signature = Signature.parse(text)
        except (ValueError, InputError, ConfigError):
            signature = None
    return _RunScoring(measures_of(found), primary_measures(found), signature, config)


@dataclass(frozen=True)
class PassedOver:
    """A complete run the nightly baseline choice passed over, and why.

    Attributes:
        run: the run.
        reason: ``"measures"`` (no measure in common with tonight's) or ``"signature"``
            (scored differently for the compared measures).
        detail: for ``"signature"``, the differing fields as ``field: theirs vs tonight's``.

    """

    run: CompleteRun
    reason: str
    detail: str = ""

    @property
    def path(self) -> str:
        """The run's directory."""
        return self.run.path


def comparable_baseline(root: str, *, run_date: str, candidate: str,
                        measures: Sequence[str] | None = None,
                        allow_signature_mismatch: bool = False
                        ) -> tuple[CompleteRun | None, list[PassedOver]]:
    """The nightly baseline: the newest complete run comparable with tonight's.

    Newest by date, then by the time its ``_SUCCESS`` was written (a ROOT that does not
    exist yet has no run), but a run is passed over when it has no measure to compare with
    the candidate (``measures``, or by default the baseline's primary measures that the
    candidate also has, as :func:`pipeline.compare.measures.resolve_measures` chooses them)
    or when it was scored otherwise for those measures (the signature fields their families
    write differ, as compare checks them: :func:`pipeline.compare.signatures.check_signatures`;
    not with ``allow_signature_mismatch``): one odd night (``--score-args "--metrics bleu"``
    or ``"--language chinese"``) does not block every later night. The measures and
    signatures are read from each run's manifest only. A run whose manifest does not list
    its metrics is taken as comparable (compare decides), and so is one without a signature.

    Args:
        root: the nightly ROOT.
        run_date: the newest date that may be chosen, ``YYYY-MM-DD``; later runs never are.
        candidate: tonight's run directory (as :func:`complete_runs` spells it); never chosen.
        measures: the measures asked for (``compare --metrics``), or None for the default.
        allow_signature_mismatch: keep runs scored otherwise (compare is told to compare
            them anyway).

    Returns:
        (the baseline or None, the newer complete runs passed over, newest first, each with
        its reason).

    """
    from pipeline.compare.measures import resolve_measures
    from pipeline.compare.signatures import check_signatures

    try:
        candidates = [r for r in complete_runs(root)
                      if r.run_date <= run_date and r.path != candidate]
    except InputError:
        return None, []
    tonight = _run_scoring(candidate)
    skipped: list[PassedOver] = []
    for run in reversed(candidates):
        mine = None if tonight is None else _run_scoring(run.path)
        if tonight is None or mine is None:
            return run, skipped
        try:
            chosen = resolve_measures(measures, mine.measures, tonight.measures,
                                      default=mine.primary)
        except InputError:
            skipped.append(PassedOver(run, "measures"))
            continue
        except ConfigError:
            return run, skipped  # a bad measure name: compare says so
        if allow_signature_mismatch or mine.signature is None or tonight.signature is None:
            return run, skipped
        metrics = tuple(dict.fromkeys(m.split(".")[0] for m in chosen))
        fields = check_signatures(mine.signature, tonight.signature, allow_mismatch=True,
                                  metrics=metrics, options=(mine.config, tonight.config))
        if fields:
            a, b = mine.signature.as_dict(), tonight.signature.as_dict()
            skipped.append(PassedOver(run, "signature", "; ".join(
                f"{k}: {a.get(k, '(absent)')} vs {b.get(k, '(absent)')}" for k in fields)))
            continue
        return run, skipped
    return None, skipped


def read_history(root: str, *, candidate: RunInfo, window: int,
                 exclude: Sequence[str] = ()) -> History:
    """The last ``window`` nights under a nightly ROOT before (or on the date of) a candidate.

    Nights are the complete runs' directories (:func:`complete_runs`), one per date (the
    newest by its ``_SUCCESS``); the candidate's own directory is left out, whatever the run
    ids (a fixed ``RUN_ID`` is the same every night). Each night's ``aggregate.parquet`` is
    read and verified alone (:func:`pipeline.io.runs.read_aggregate`); a night that cannot
    be read is left out with a note.

    Args:
        root: the nightly ROOT (local path or URI).
        candidate: the candidate run (left out; its date bounds the history).
        window: nights to keep, >= 1.
        exclude: run directories (as :func:`complete_runs` spells them) to leave out besides
            the candidate's.

    Returns:
        A :class:`History` (possibly without nights), its notes saying what was left out.

    Raises:
        InputError: ROOT cannot be listed or is not a directory.

    """
    from pipeline.io import runs

    bad_dates: list[str] = []
    try:
        found_runs = complete_runs(root, ignored=bad_dates)
    except InputError as err:
        raise InputError(f"--history {err}") from err
    until = run_date_of(candidate)
    skip = set(exclude)
    latest: dict[str, CompleteRun] = {}
    for r in found_runs:
        if (until is not None and r.run_date > until) or r.path in skip:
            continue
        try:
            same = runs.filesystem(r.path)[1].rstrip("/") == candidate.root.rstrip("/")
        except InputError:
            same = False
        if not same:
            latest[r.run_date] = r  # sorted: the newest of a date wins
    notes: list[str] = []
    if bad_dates:
        notes.append(f"history: {len(bad_dates)} run_date= "
                     f"{'directory' if len(bad_dates) == 1 else 'directories'} under {root} "
                     f"with no such date left out ({', '.join(sorted(bad_dates)[:5])}"
                     f"{', ...' if len(bad_dates) > 5 else ''})")
    nights: list[Night] = []
    for date in sorted(latest)[-window:]:
        r = latest[date]
        try:
            run = runs.read_aggregate(r.path)
            values = aggregate_values(run)
        except InputError as err:
            notes.append(f"history: {date} left out: {err}")
            continue
        nights.append(Night(date, run.run_id or r.run_id, r.path, values,
                            signature=run.signature, config=run.config))
    return History(root, tuple(nights), window, tuple(notes))


def comparable_history(history: History, *, signature: Signature,
                       config: dict[str, Any] | None = None, metrics: Sequence[str],
                       min_nights: int | None = None) -> History:
    """The history a comparison may learn from: each night's metrics scored as tonight's.

    For each night and each compared metric, the signature fields that metric's family
    writes must agree with the candidate's, exactly as compare checks the two runs
    (:func:`pipeline.compare.signatures.check_signatures` with that metric): a night scored
    with another case, stemmer or tokenizer for a metric loses that metric's values, and a
    night left with no compared metric is left out. Each kind of difference is one note
    naming the nights. A night without a signature (a table without the column) is kept.
    A note also says when the nights left are fewer than a learned band and the drift
    chart need.

    Args:
        history: the history as read.
        signature: the candidate's signature.
        config: the candidate's resolved config (its manifest's), for the families' fields.
        metrics: the compared metrics (``rouge1``, ``bleu``...).
        min_nights: nights needed to learn (default
            :data:`pipeline.compare.bands.MIN_NIGHTS`).

    Returns:
        A new :class:`History`, its notes extended.

    """
    from pipeline.compare.bands import MIN_NIGHTS
    from pipeline.compare.signatures import check_signatures

    need = MIN_NIGHTS if min_nights is None else min_nights
    mine = signature.as_dict()
    left: dict[tuple[tuple[str, ...], str], list[str]] = {}
    kept: list[Night] = []
    for night in history.nights:
        if night.signature is None:
            kept.append(night)
            continue
        theirs = night.signature.as_dict()
        scored = set(theirs.get("metrics", "").split("+"))
        # a metric the night did not score has no value to leave out
        checked = [m for m in metrics if "metrics" not in theirs or m in scored]
        dropped: dict[str, str] = {}
        for metric in checked:
            fields = check_signatures(night.signature, signature, allow_mismatch=True,
                                      metrics=(metric,), options=(night.config, config or {}))
            if fields:
                dropped[metric] = "; ".join(f"{k}: {theirs.get(k, '(absent)')} vs "
                                            f"{mine.get(k, '(absent)')}" for k in fields)
        if dropped and len(dropped) == len(checked):
            detail = "; ".join(dict.fromkeys(dropped.values()))
            left.setdefault(((), detail), []).append(night.run_date)
            continue
        for metric, detail in dropped.items():
            left.setdefault(((metric,), detail), []).append(night.run_date)
        if dropped:
            values = night.values[~night.values["metric"].isin(list(dropped))]
            night = Night(night.run_date, night.run_id, night.path,
                          values.reset_index(drop=True), night.signature, night.config)
        kept.append(night)
    notes = list(history.notes)
    for (which, detail), dates in left.items():
        what = f" for {', '.join(which)}" if which else ""
        notes.append(f"history: {', '.join(dates)} left out{what}: scored differently from "
                     f"tonight's run ({detail}; the night's value vs tonight's)")
    n = len(kept)
    if n == 0:
        notes.append(f"history: no earlier night under {history.source} to learn from: "
                     "the bands stay static (the floor) and no drift is charted")
    elif n < need:
        notes.append(f"history: {n} {'night' if n == 1 else 'nights'} under "
                     f"{history.source}, fewer than the {need} a learned band and the drift "
                     "chart need: the bands stay static (the floor), no drift is charted")
    return History(history.source, tuple(kept), history.window, tuple(notes))


def check_reference(reference: RunAggregate, *, signature: Signature,
                    config: dict[str, Any] | None = None, metrics: Sequence[str],
                    allow_mismatch: bool = False) -> list[str]:
    """Check that a pinned drift reference was scored as the candidate for the compared metrics.

    Args:
        reference: the ``--reference-run``'s aggregate.
        signature: the candidate's signature.
        config: the candidate's resolved config.
        metrics: the compared metrics (those the reference did not score are not checked:
            it pins no level for them).
        allow_mismatch: return the differing fields instead of raising.

    Returns:
        The differing fields (empty: comparable).

    Raises:
        SignatureMismatchError: fields differ and ``allow_mismatch`` is False; the message
            names ``--reference-run`` and each field with both values.

    """
    from pipeline.compare.signatures import check_signatures

    scored = reference.signature.as_dict().get("metrics")
    shared = tuple(m for m in metrics if scored is None or m in scored.split("+"))
    if not shared:
        return []  # no value to pin: its rows keep the history's own level
    try:
        return check_signatures(reference.signature, signature, allow_mismatch=allow_mismatch,
                                metrics=shared, options=(reference.config, config or {}))
    except SignatureMismatchError as err:
        raise SignatureMismatchError(
            f"--reference-run {reference.path}: {err.message}",
            hint="the drift chart's reference level must be scored as the candidate; "
                 "pass --allow-signature-mismatch to use it anyway") from err


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
        # a night is its (run_date, run_id): a fixed RUN_ID is the same every night, so only
        # the candidate's own night is left out
        if (until is not None and d > until) or (rid == candidate.run_id
                                                 and (until is None or d == until)):
            continue
        key = (str(stamp or ""), str(rid))
        if d not in latest or key > latest[d]:
            latest[d] = key
    nights = []
    notes = []
    group_columns = candidate.group_columns
    names = [str(i) for i in ids]
    for d in sorted(latest)[-window:]:
        rid = latest[d][1]
        part = table.filter(pa.array([a == d and b == rid
                                      for a, b in zip(dates, names, strict=True)]))
        present = [c for c in group_columns if c in part.column_names]
        try:
            values = values_of(part, present)
        except InputError as err:
            notes.append(f"history: {d} left out: {where}: {err}")
            continue
        signature = None
        if "signature" in part.column_names and part.num_rows:
            from pipeline.signature import Signature

            try:
                signature = Signature.parse(str(part.column("signature")[0].as_py()))
            except ValueError:
                signature = None
        nights.append(Night(d, rid, where, values, signature=signature))
    return History(where, tuple(nights), window, tuple(notes))


def night_alarms(history: History) -> tuple[dict[tuple[str, str], list[dict[str, Any]]],
                                            list[str]]:
    """The alarms of the history's nights, from their ``compare.json`` under ROOT/compare.

    Reads ``ROOT/compare/run_date=D/run_id=ID/compare.json`` of each night (a night without
    one has no marks). Only what is used is checked: a document that is not JSON, nests too
    deep, or whose ``alarms`` (a list of objects, each ``kind`` one of
    :data:`pipeline.compare.alarms.ALARM_KINDS`, ``group``/``metric``/``measure`` text or
    null) or, for a ``missing`` alarm, ``settings.measures`` (a list of text) is otherwise,
    is left out with a note: an old or edited night never stops tonight's report.

    Args:
        history: the nights (their ``run_date``, ``path`` and the history's ``source``).

    Returns:
        ``({(run_date, run_id): [alarm, ...]}, notes)``, each alarm a dict with ``group``
        (``all`` for the overall rows), ``metric``, ``measure`` and ``kind``; a ``missing``
        alarm is listed once per compared measure.

    """
    import json

    from pipeline.compare.alarms import ALARM_KINDS
    from pipeline.io.runs import filesystem

    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    notes: list[str] = []
    for n in history.nights:
        run_dir = posixpath.basename(n.path.rstrip("/"))
        if not _RUN.match(run_dir):
            run_dir = f"run_id={n.run_id}"
        path = f"{history.source.rstrip('/')}/compare/run_date={n.run_date}/{run_dir}"
        try:
            fs, where = filesystem(path)
            with fs.open_input_stream(f"{where}/compare.json") as fh:
                raw = fh.read()
        except (InputError, OSError):
            continue  # no comparison that night (the first night, or one that failed)
        try:
            marks = _marks(json.loads(raw.decode("utf-8")), ALARM_KINDS)
        except (ValueError, RecursionError) as err:
            notes.append(f"history: {n.run_date}'s compare.json left out of the trend's "
                         f"marks: {str(err).splitlines()[0][:200] or type(err).__name__}")
            continue
        out[(n.run_date, n.run_id)] = marks
    return out, notes


def _marks(doc: Any, kinds: Sequence[str]) -> list[dict[str, Any]]:
    """The alarms of one ``compare.json``, checked (see :func:`night_alarms`).

    Raises:
        ValueError: a field used is missing or of another type.

    """
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    alarms = doc.get("alarms", [])
    if not isinstance(alarms, list):
        raise ValueError(f"alarms is {type(alarms).__name__}, not a list")
    marks: list[dict[str, Any]] = []
    for a in alarms:
        if not isinstance(a, dict):
            raise ValueError(f"an alarm is {type(a).__name__}, not an object")
        kind = a.get("kind")
        if not isinstance(kind, str) or kind not in kinds:
            raise ValueError(f"alarm kind {kind!r} is not one of {', '.join(kinds)}")
        for key in ("group", "metric", "measure"):
            if a.get(key) is not None and not isinstance(a.get(key), str):
                raise ValueError(f"an alarm's {key} is {type(a.get(key)).__name__}, not text")
        group = a.get("group") or "all"
        if kind == "missing":
            settings = doc.get("settings")
            measures = settings.get("measures") if isinstance(settings, dict) else None
            if not isinstance(measures, list) or not all(isinstance(m, str)
                                                         for m in measures):
                raise ValueError("settings.measures is not a list of measure names")
            named = [tuple(m.split(".", 1)) for m in measures if "." in m]
        else:
            named = [(a.get("metric"), a.get("measure"))]
        marks += [{"group": group, "metric": metric, "measure": measure, "kind": kind}
                  for metric, measure in named]
    return marks


__all__ = ["VALUE_KEY", "CompleteRun", "History", "Night", "PassedOver", "aggregate_values",
           "check_reference", "comparable_baseline", "comparable_history", "complete_runs",
           "is_run_date",
           "night_alarms", "read_history", "read_history_table", "run_date_of",
           "run_values", "values_of"]
