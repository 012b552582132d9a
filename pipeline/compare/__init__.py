"""Deltas between two scoring runs, their uncertainty, and the nightly alarm.

Two runs of ``overlap score`` are paired example by example (by id, and by the group columns
when the runs were grouped). For every requested measure (``rougeL.fmeasure``,
``bleu.score``...) and every group: each run's value (a mean, or for a corpus metric the corpus
score of the summed statistics), the delta, its paired bootstrap interval, an approximate
randomization p-value and the minimal detectable effect (:mod:`.statistics`).

**Alarms**, per measure and group: a *change* when the p-value adjusted across all rows
(:func:`.statistics.adjust_p_values`) is below ``1 - confidence`` and ``|delta| > band``, in
either direction, the band learned from the nightly history (:mod:`.bands`); a *drift* when
the history's control chart passes its limit (:mod:`.drift`); *missing examples* when a group
of the baseline is absent from the candidate or more than ``max_missing`` of its examples are.
All are seeded and reproducible; :func:`.alarms.alarm_list` orders them for reading.

The package, along its seams: :mod:`.measures` (names, from the metric registry),
:mod:`.statistics` (the paired tests, over :mod:`pipeline.stats`), :mod:`.pairing` (pairing
examples, groups, rows), :mod:`.signatures` (which settings must agree), :mod:`.document`
(run directories in, ``compare.json`` / ``compare.parquet`` out).
"""

from __future__ import annotations

from pipeline.compare.alarms import ALARM_KINDS, alarm_list, band_summary, with_history
from pipeline.compare.bands import (
    BAND_MULTIPLIER,
    DEFAULT_HISTORY_WINDOW,
    MIN_NIGHTS,
    learn_bands,
    measure_floors,
)
from pipeline.compare.comparison import RunComparison, compare_runs, run_specs
from pipeline.compare.drift import DRIFT_METHOD, cusum, drift_rows, ewma
from pipeline.compare.history import History, Night, read_history, read_history_table
from pipeline.compare.measures import (
    Measure,
    describe,
    measure_column,
    measures_in,
    resolve_measures,
)
from pipeline.compare.pairing import (
    ALL_GROUP,
    DEFAULT_TOP,
    ROW_COLUMNS,
    Comparison,
    compare_examples,
)
from pipeline.compare.signatures import NON_SCORE_FIELDS, check_signatures, score_fields
from pipeline.compare.statistics import (
    ADJUST_METHODS,
    DEFAULT_ADJUST,
    DEFAULT_BAND,
    DEFAULT_CONFIDENCE,
    DEFAULT_MAX_MISSING,
    DEFAULT_N_BOOTSTRAP,
    DEFAULT_SEED,
    INTERVAL_METHOD,
    MDE_METHOD,
    TEST_METHOD,
    PairedTest,
    adjust_p_values,
    bootstrap_mean_differences,
    is_alarm,
    is_missing,
    paired_resampling,
    paired_test,
)

__all__ = ["ADJUST_METHODS", "ALARM_KINDS", "BAND_MULTIPLIER", "DEFAULT_ADJUST",
           "DEFAULT_HISTORY_WINDOW", "DRIFT_METHOD", "MIN_NIGHTS", "History", "Night",
           "adjust_p_values", "alarm_list", "band_summary", "cusum", "drift_rows", "ewma",
           "learn_bands", "measure_floors", "read_history", "read_history_table",
           "with_history", "ALL_GROUP", "DEFAULT_BAND", "DEFAULT_CONFIDENCE", "DEFAULT_MAX_MISSING",
           "DEFAULT_N_BOOTSTRAP", "DEFAULT_SEED", "DEFAULT_TOP", "INTERVAL_METHOD",
           "MDE_METHOD", "NON_SCORE_FIELDS", "ROW_COLUMNS", "TEST_METHOD",
           "Comparison", "Measure", "PairedTest", "RunComparison", "bootstrap_mean_differences",
           "check_signatures", "compare_examples", "compare_runs", "describe", "is_alarm",
           "is_missing", "measure_column", "measures_in", "paired_resampling", "paired_test",
           "resolve_measures", "run_specs", "score_fields"]
