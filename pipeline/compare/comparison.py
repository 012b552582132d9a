"""Comparing two run directories, and the comparison as a document (``compare.json``).

:func:`compare_runs` composes the pure parts (:mod:`.pairing`, :mod:`.statistics`) with the
run reader of :mod:`pipeline.io.runs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from pipeline.compare.alarms import alarm_list, band_summary, with_history
from pipeline.compare.bands import BAND_MULTIPLIER, DEFAULT_HISTORY_WINDOW, MIN_NIGHTS
from pipeline.compare.drift import (
    CUSUM_H,
    CUSUM_K,
    DRIFT_METHOD,
    DRIFT_METHODS,
    EWMA_L,
    EWMA_LAMBDA,
)
from pipeline.compare.history import (
    History,
    Night,
    aggregate_values,
    check_reference,
    comparable_history,
    read_history,
    run_values,
)
from pipeline.compare.measures import (
    measure_column,
    measures_in,
    measures_of,
    primary_measures,
    resolve_measures,
    split_measure,
)
from pipeline.compare.pairing import (
    Comparison,
    PairedExamples,
    check_key_types,
    compare_examples,
    paired_examples,
)
from pipeline.compare.signatures import NON_SCORE_FIELDS, check_signatures
from pipeline.compare.statistics import (
    ADJUST_METHODS,
    DEFAULT_ADJUST,
    DEFAULT_BAND,
    DEFAULT_CONFIDENCE,
    DEFAULT_MAX_MISSING,
    DEFAULT_N_BOOTSTRAP,
    DEFAULT_SEED,
    DEFAULT_TOP,
    INTERVAL_METHOD,
    MDE_METHOD,
    TEST_METHOD,
    check_settings,
)
from pipeline.config_checks import MAX_BOOTSTRAP_WORK, check_resampling_work
from pipeline.errors import ConfigError, InputError
from pipeline.metrics.base import MetricSpec

if TYPE_CHECKING:
    from pipeline.io.runs import RunInfo


@dataclass(frozen=True)
class RunComparison:
    """The result of :func:`compare_runs`.

    Attributes:
        comparison: the statistics (:class:`Comparison`).
        baseline: the baseline run's description.
        candidate: the candidate run's description.
        signature_differences: differing signature fields (allowed by the caller).
        top: the examples that moved most (:meth:`Comparison.top`, at most ``n_top``), plus
            ``baseline_prediction`` and ``candidate_prediction`` text columns (null where
            the text could not be found).
        notes: human-readable remarks (e.g. where texts could not be read).
        n_top: how many moved examples were asked for.

    """

    comparison: Comparison
    baseline: RunInfo
    candidate: RunInfo
    signature_differences: list[str]
    top: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    n_top: int = DEFAULT_TOP
    history: History | None = None
    reference_run: str | None = None
    band_multiplier: float = BAND_MULTIPLIER
    drift_method: str = DRIFT_METHOD

    @property
    def alarm(self) -> bool:
        """True when any (group, measure) row alarms: a change, missing examples, a drift."""
        return self.comparison.alarm

    @property
    def alarms(self) -> list[dict[str, Any]]:
        """The alarms in reading order (:func:`pipeline.compare.alarms.alarm_list`)."""
        return alarm_list(self.comparison.rows)

    @property
    def bands(self) -> list[str]:
        """One line per measure: the band used and where it came from.

        With a history shorter than :data:`~pipeline.compare.bands.MIN_NIGHTS` its note
        (in ``notes``) counts the nights, and the lines do not count them again.
        """
        nights = None if self.history is None else len(self.history.nights)
        return band_summary(self.comparison.rows,
                            said=nights if nights is not None and nights < MIN_NIGHTS else None)

    def to_document(self, *, max_ids: int = 20) -> dict[str, Any]:
        """Return the comparison as a JSON-ready dict (the content of ``compare.json``).

        Keys: ``alarm`` (a change, missing examples or a drift), ``alarms`` (the list of
        :attr:`alarms`: ``group``, ``metric``, ``measure``, ``kind``), ``bands`` (one line per
        measure), ``missing``,
        ``baseline``/``candidate`` (path, run_id, signature, n_examples),
        ``signature_differences``, ``settings`` (measures, band, confidence, n_bootstrap,
        seed, interval and test methods, adjust, n_trials, alarm rule, max_missing and its
        rule, the MDE's definition, top, the band rule and floors, the drift chart),
        ``history`` (source, window, nights: run_date and run_id; null without one),
        ``pairing`` (key columns, counts and up
        to ``max_ids`` ids present in one run only), ``rows`` (as :attr:`Comparison.rows`),
        ``top`` (as :attr:`top`), ``notes``, ``version``. NaN is written as null.
        """
        from pipeline import __version__

        cmp = self.comparison
        key = list(cmp.key_columns)

        def run(info: RunInfo) -> dict[str, Any]:
            return {"path": info.path, "run_id": info.run_id, "signature": str(info.signature),
                    "n_examples": info.n_examples}

        def ids(side: str) -> list[Any]:
            head = cmp.only_ids(side, max_ids)
            if len(key) == 1:
                return [_jsonable(v) for v in head[key[0]]]
            return [{k: _jsonable(v) for k, v in r.items()} for r in head.to_dict("records")]

        history = None if self.history is None else {
            "source": self.history.source, "window": self.history.window,
            "nights": [{"run_date": n.run_date, "run_id": n.run_id, "path": n.path}
                       for n in self.history.nights],
            "reference_run": self.reference_run,
        }
        return {
            "alarm": self.alarm,
            "alarms": self.alarms,
            "bands": self.bands,
            "missing": cmp.missing,
            "baseline": run(self.baseline),
            "candidate": run(self.candidate),
            "signature_differences": list(self.signature_differences),
            "settings": {
                "measures": list(cmp.measures), "band": cmp.band,
                "band_floors": dict(cmp.floors), "confidence": cmp.confidence,
                "n_bootstrap": cmp.n_bootstrap, "seed": cmp.seed, "interval": INTERVAL_METHOD,
                "test": TEST_METHOD, "adjust": cmp.adjust, "n_trials": cmp.n_trials,
                "alarm_rule": "p_adjusted < 1 - confidence and |delta| > band",
                "band_rule": f"learned: {self.band_multiplier:g} x 1.4826 x MAD of the history's "
                             f"night-to-night changes, never below the floor; static (the "
                             f"floor) with fewer than {MIN_NIGHTS} nights",
                "drift_rule": (f"two-sided tabular CUSUM, k = {CUSUM_K:g}, h = {CUSUM_H:g}"
                               if self.drift_method == "cusum" else
                               f"EWMA, lambda = {EWMA_LAMBDA:g}, L = {EWMA_L:g}")
                + f" nightly sds, against the median of the window's first {MIN_NIGHTS} "
                  "nights (or the reference run); sd: 1.4826 x MAD of the changes / sqrt 2",
                "max_missing": cmp.max_missing,
                "missing_rule": "a baseline group absent from the candidate, or more than "
                                "max_missing of its examples",
                "mde": MDE_METHOD, "top": self.n_top,
            },
            "pairing": {
                "id_column": cmp.id_column, "group_columns": list(cmp.group_columns),
                "n_paired": cmp.n_paired, "n_baseline_only": cmp.n_baseline_only,
                "n_candidate_only": cmp.n_candidate_only,
                "baseline_only_ids": ids("baseline"),
                "candidate_only_ids": ids("candidate"),
            },
            "history": history,
            "rows": _records(cmp.rows),
            "top": _records(self.top),
            "notes": list(self.notes),
            "version": __version__,
        }

    def to_arrow(self) -> pa.Table:
        """Return the rows as an Arrow table (the content of ``compare.parquet``).

        Columns: ``baseline_run_id``, ``candidate_run_id``, then :attr:`Comparison.rows`
        (counts int64, means/deltas/interval/p float64, ``alarm`` bool). Key-value metadata:
        ``overlap.compare`` (the JSON document without rows and top),
        ``overlap.baseline_signature`` and ``overlap.candidate_signature``.
        """
        import json

        rows = self.comparison.rows.copy()
        rows.insert(0, "candidate_run_id", self.candidate.run_id)
        rows.insert(0, "baseline_run_id", self.baseline.run_id)
        for col in ("baseline_run_id", "candidate_run_id"):
            rows[col] = rows[col].astype(object)
        table = pa.Table.from_pandas(rows, preserve_index=False)
        table = table.cast(pa.schema([
            pa.field(f.name, pa.string()) if f.name in ("baseline_run_id", "candidate_run_id")
            else f for f in table.schema]).with_metadata(None))
        document = {k: v for k, v in self.to_document().items() if k not in ("rows", "top")}
        return table.replace_schema_metadata({
            "overlap.compare": json.dumps(document, allow_nan=False),
            "overlap.baseline_signature": str(self.baseline.signature),
            "overlap.candidate_signature": str(self.candidate.signature),
        })


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return None
    if isinstance(value, (str, int, float, bool)):
        return value
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): _jsonable(v) for k, v in row.items()}
            for row in frame.to_dict("records")]


def run_specs(run: RunInfo) -> tuple[MetricSpec, ...]:
    """The metric specs of a run, from its manifest's config through the registry.

    Returns:
        The specs, or () when the manifest does not list the metrics or the registry does not
        know one of them (the measures are then read from the column names).

    """
    from pipeline.metrics.registry import specs

    metrics = run.config.get("metrics")
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    if not isinstance(metrics, list) or not metrics:
        return ()
    try:
        return specs([str(m) for m in metrics], run.config)
    except ConfigError:
        return ()


class _Texts:
    """The prediction texts of the top moved examples, from both runs.

    :meth:`start` (the engine's ``on_top``) reads them in a thread of their own while the
    comparison's second pass runs; :meth:`get` returns them, or reads them then when they
    were not started or were started for other examples.
    """

    def __init__(self, base: RunInfo, cand: RunInfo, key: list[str]) -> None:
        self.runs, self.key = (base, cand), key
        self.started: tuple[pd.DataFrame, Future] | None = None

    def _keys(self, moved: pd.DataFrame) -> pd.DataFrame:
        return moved[self.key].reset_index(drop=True)

    def _read(self, keys: pd.DataFrame) -> list[tuple[list[str | None], str | None]]:
        from pipeline.io.runs import read_predictions

        if keys.empty:
            return [read_predictions(run, keys) for run in self.runs]
        with ThreadPoolExecutor(2, thread_name_prefix="overlap-texts") as pool:
            return list(pool.map(lambda run: read_predictions(run, keys), self.runs))

    def start(self, moved: pd.DataFrame) -> None:
        """Start reading the texts of these examples (a :meth:`Comparison.top` frame)."""
        keys = self._keys(moved)
        pool = ThreadPoolExecutor(1, thread_name_prefix="overlap-texts")
        self.started = (keys, pool.submit(self._read, keys))
        pool.shutdown(wait=False)

    def get(self, moved: pd.DataFrame) -> list[tuple[list[str | None], str | None]]:
        """Each run's texts of ``moved``'s examples, with a note on those not found.

        As :func:`pipeline.io.runs.read_predictions`, baseline then candidate.
        """
        keys = self._keys(moved)
        if self.started is not None and self.started[0].equals(keys):
            return self.started[1].result()
        return self._read(keys)


def check_options(*, measures: Sequence[str] | None = None, band: float = DEFAULT_BAND,
                  bands: Mapping[str, float] | None = None,
                  confidence: float = DEFAULT_CONFIDENCE,
                  n_bootstrap: int = DEFAULT_N_BOOTSTRAP, top: int = DEFAULT_TOP,
                  max_missing: float = DEFAULT_MAX_MISSING, adjust: str = DEFAULT_ADJUST,
                  history: object = None, history_window: int = DEFAULT_HISTORY_WINDOW,
                  reference_run: str | None = None,
                  band_multiplier: float = BAND_MULTIPLIER,
                  drift_method: str = DRIFT_METHOD) -> None:
    """Check :func:`compare_runs`'s options before any run is read (same names and meaning).

    What can be told without the runs: ranges (confidence in (0, 1), resamples >= 1, bands
    finite and >= 0, ``max_missing`` in [0, 1], ``top`` >= 0, window >= 1, multiplier
    > 0), the adjustment and drift method by name, measure names written
    ``METRIC.MEASURE``, and a ``reference_run`` only with a ``history``. The nightly checks
    its ``COMPARE_ARGS`` with this before tonight's run is scored.

    Raises:
        ConfigError: the first option out of range, named.

    """
    check_settings(n_bootstrap=n_bootstrap, confidence=confidence, band=band,
                   max_missing=max_missing)
    if not np.isfinite(band):
        raise ConfigError(f"band must be a non-negative score difference, got {band}")
    for name, value in (bands or {}).items():
        split_measure(name)
        if not (np.isfinite(value) and value >= 0.0):
            raise ConfigError(f"band must be a non-negative score difference, got {name} "
                              f"{value}")
    for name in measures or ():
        split_measure(name)
    if top < 0:
        raise ConfigError(f"top must be >= 0, got {top}")
    if history_window < 1:
        raise ConfigError(f"history_window must be >= 1, got {history_window}")
    if adjust not in ADJUST_METHODS:
        raise ConfigError(f"unknown p-value adjustment {adjust!r}",
                          hint=f"choose one of {', '.join(ADJUST_METHODS)}")
    if drift_method not in DRIFT_METHODS:
        raise ConfigError(f"unknown drift method {drift_method!r}",
                          hint=f"choose one of {', '.join(DRIFT_METHODS)}")
    if not band_multiplier > 0:
        raise ConfigError(f"band_multiplier must be > 0, got {band_multiplier}")
    if reference_run is not None and history is None:
        raise ConfigError("--reference-run needs --history (the drift chart's nights)")


def compare_runs(
    baseline_dir: str,
    candidate_dir: str,
    *,
    measures: Sequence[str] | None = None,
    band: float = DEFAULT_BAND,
    bands: Mapping[str, float] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    n_bootstrap: int = DEFAULT_N_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    top: int = DEFAULT_TOP,
    allow_signature_mismatch: bool = False,
    max_missing: float = DEFAULT_MAX_MISSING,
    adjust: str = DEFAULT_ADJUST,
    history: str | History | None = None,
    history_window: int = DEFAULT_HISTORY_WINDOW,
    reference_run: str | None = None,
    band_multiplier: float = BAND_MULTIPLIER,
    drift_method: str = DRIFT_METHOD,
    engine: Callable[..., Comparison] | None = None,
) -> RunComparison:
    """Compare two ``overlap score`` output directories (see :func:`compare_examples`).

    Reads only the key and measure columns; prediction texts are read for the ``top``
    examples only, from the runs' ``prediction`` column when they were scored with
    ``--keep-text``, else from the input files named in their manifests when readable.

    Args:
        baseline_dir: the baseline run directory (local path or URI).
        candidate_dir: the candidate run directory.
        measures: ``METRIC.MEASURE`` names; default the primary measure of every metric
            (fmeasure for ROUGE, score for BLEU and chrF), as the registry says.
        band: the floor of every band as a fraction of each measure's full scale, >= 0.
        bands: floors in the measure's own units, by measure.
        confidence: interval level in (0, 1); alarms at ``1 - confidence``.
        n_bootstrap: resamples, 1 to :data:`~pipeline.config_checks.MAX_BOOTSTRAP`.
        seed: resampling seed.
        top: how many moved examples to list, >= 0.
        allow_signature_mismatch: compare runs whose scoring settings differ.
        max_missing: tolerated fraction of a group's baseline examples absent from the
            candidate, in [0, 1].
        adjust: p-value adjustment across rows: ``holm``, ``bh`` or ``none``.
        history: a nightly ROOT (``run_date=/run_id=`` layout) or a :class:`History` read
            otherwise (e.g. :func:`~pipeline.compare.history.read_history_table`): bands are
            learned from it and drift is charted (None: static bands, no drift).
        history_window: the last N nights of the history used, >= 1.
        reference_run: a run whose aggregate values are the drift chart's reference level
            (default: the history's own level).
        band_multiplier: the learned band in robust sds of the night-to-night changes
            (default chosen by simulation, :data:`~pipeline.compare.bands.BAND_MULTIPLIER`).
        drift_method: the drift chart, ``cusum`` or ``ewma``.
        engine: pairs and tests the runs partition by partition:
            :func:`pipeline.engine.compare.compare_on_engine` with its runner bound (the
            same :class:`Comparison`, holding nothing per example); None: both runs' key
            and score columns in memory (:func:`compare_examples`).

    Returns:
        A :class:`RunComparison`.

    Raises:
        InputError: a directory that is not a complete run, unreadable files, or bad data.
        SignatureMismatchError: the runs' scoring settings differ for a compared measure
            (unless allowed).
        ConfigError: bad settings or measure names; over the default ``n_bootstrap``,
            the smaller run's examples x ``n_bootstrap`` above
            :data:`~pipeline.config_checks.MAX_BOOTSTRAP_WORK` (before any data is read).

    """
    from pipeline.io import runs

    check_options(measures=measures, band=band, bands=bands, confidence=confidence,
                  n_bootstrap=n_bootstrap, top=top, max_missing=max_missing, adjust=adjust,
                  history=history, history_window=history_window,
                  reference_run=reference_run, band_multiplier=band_multiplier,
                  drift_method=drift_method)
    with ThreadPoolExecutor(2, thread_name_prefix="overlap-open") as pool:  # checksums side by side
        opened = [pool.submit(runs.open_run, d) for d in (baseline_dir, candidate_dir)]
    base, cand = opened[0].result(), opened[1].result()  # the baseline's error first
    # the pairs are at most the smaller run's examples: bounded before any data is read
    check_resampling_work("n_bootstrap", n_bootstrap, min(base.n_examples, cand.n_examples),
                          default=DEFAULT_N_BOOTSTRAP, limit=MAX_BOOTSTRAP_WORK)
    notes: list[str] = []
    other = base.signature.differences(cand.signature, keys=NON_SCORE_FIELDS)
    if other:
        a, b = base.signature.as_dict(), cand.signature.as_dict()
        notes.append("the signatures also differ in " + "; ".join(
            f"{k}: {a.get(k)} vs {b.get(k)}" for k in other) + " (not a scoring setting)")
    if base.id_column != cand.id_column:
        raise InputError(f"the runs use different id columns ({base.id_column!r} vs "
                         f"{cand.id_column!r})")
    group_columns = tuple(c for c in base.group_columns if c in cand.group_columns)
    key = [base.id_column, *group_columns]
    check_key_types({c: base.schema.field(c).type for c in key if c in base.schema.names},
                    {c: cand.schema.field(c).type for c in key if c in cand.schema.names})
    if group_columns != base.group_columns or group_columns != cand.group_columns:
        notes.append(f"the runs were grouped differently (baseline: "
                     f"{', '.join(base.group_columns) or 'none'}; candidate: "
                     f"{', '.join(cand.group_columns) or 'none'}); pairing and grouping on "
                     f"{', '.join(group_columns) or 'the id only'}")
    specs, cand_specs = run_specs(base), run_specs(cand)
    if specs and cand_specs:
        have_b, have_c = measures_of(specs), measures_of(cand_specs)
        default: Sequence[str] | None = primary_measures(specs)
    else:
        have_b, have_c = measures_in(base.float_columns), measures_in(cand.float_columns)
        default = None
    chosen = resolve_measures(measures, have_b, have_c, default=default)
    metrics = tuple(dict.fromkeys(m.split(".")[0] for m in chosen))
    differences = check_signatures(base.signature, cand.signature,
                                   allow_mismatch=allow_signature_mismatch,
                                   metrics=metrics if specs and cand_specs else None,
                                   options=(base.config, cand.config))
    if specs and cand_specs:
        all_fields = check_signatures(base.signature, cand.signature, allow_mismatch=True)
        aside = [k for k in all_fields if k not in differences]
        if aside:
            a, b = base.signature.as_dict(), cand.signature.as_dict()
            notes.append("the signatures differ in " + "; ".join(
                f"{k}: {a.get(k, '(absent)')} vs {b.get(k, '(absent)')}" for k in aside)
                + f", which no compared measure depends on ({', '.join(chosen)})")
    comparison_specs = [s for s in specs if any(m.split(".")[0] == s.name for m in chosen)]
    columns = [measure_column(m) for m in chosen]
    columns += [c for s in comparison_specs if s.corpus is not None for c in s.statistic_columns]
    wanted = list(dict.fromkeys([base.id_column, *group_columns, *columns]))
    texts = _Texts(base, cand, [base.id_column, *group_columns])
    if engine is None:
        comparison = compare_examples(
            runs.read_examples(base, columns=wanted), runs.read_examples(cand, columns=wanted),
            measures=chosen, id_column=base.id_column, group_columns=group_columns, band=band,
            bands=bands, confidence=confidence, n_bootstrap=n_bootstrap, seed=seed,
            specs=comparison_specs, max_missing=max_missing, adjust=adjust)
    else:
        def examples() -> PairedExamples:
            return paired_examples(
                runs.read_examples(base, columns=wanted),
                runs.read_examples(cand, columns=wanted), measures=chosen,
                specs=comparison_specs, id_column=base.id_column, group_columns=group_columns)

        comparison = engine(
            base, cand, columns=wanted, measures=chosen,
            metrics=[s.name for s in comparison_specs], options=base.config,
            group_columns=group_columns, n_top=top, band=band, bands=bands,
            confidence=confidence, n_bootstrap=n_bootstrap, seed=seed,
            max_missing=max_missing, adjust=adjust, examples=examples, on_top=texts.start)
    past: History | None = None
    if history is not None:
        past = history if isinstance(history, History) else read_history(
            history, candidate=cand, window=history_window)
        # only nights scored as tonight for the compared metrics teach a band or a drift
        past = comparable_history(past, signature=cand.signature, config=cand.config,
                                  metrics=metrics)
        notes += list(past.notes)
        keys = comparison.rows[["group", "metric", "measure", "statistic"]]
        series = past.series(keys)
        tonight = History("candidate", (Night("", cand.run_id or "", cand.path,
                                              run_values(cand)),), 1).series(keys)[:, 0]
        pinned = None
        if reference_run is not None:
            ref = runs.read_aggregate(reference_run)
            aside = check_reference(ref, signature=cand.signature, config=cand.config,
                                    metrics=metrics, allow_mismatch=allow_signature_mismatch)
            if aside:
                a, b = ref.signature.as_dict(), cand.signature.as_dict()
                notes.append(f"--reference-run {reference_run} was scored differently ("
                             + "; ".join(f"{k}: {a.get(k, '(absent)')} vs "
                                         f"{b.get(k, '(absent)')}" for k in aside)
                             + "); used anyway (--allow-signature-mismatch)")
            pinned = History("reference", (Night("", ref.run_id or "", ref.path,
                                                 aggregate_values(ref)),), 1
                             ).series(keys)[:, 0]
        comparison = with_history(comparison, series, tonight, reference=pinned,
                                  method=drift_method, multiplier=band_multiplier)
    moved = comparison.top(top)
    for side, (found, note) in zip(("baseline", "candidate"), texts.get(moved), strict=True):
        moved[f"{side}_prediction"] = found
        if note:
            notes.append(f"{side}: {note}")
    return RunComparison(comparison=comparison, baseline=base, candidate=cand,
                         signature_differences=differences, top=moved, notes=notes,
                         n_top=top, history=past, reference_run=reference_run,
                         band_multiplier=band_multiplier, drift_method=drift_method)


__all__ = ["RunComparison", "check_options", "compare_runs", "run_specs"]
