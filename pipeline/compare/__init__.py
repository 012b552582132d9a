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
examples, groups, rows), :mod:`.signatures` (which settings must agree), :mod:`.comparison`
(run directories in, ``compare.json`` / ``compare.parquet`` out).

Names are imported from their module when first used (PEP 562), so ``import
pipeline.compare`` (the CLI's options read its defaults) costs no pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module that defines it
_LAZY = {
    "ALARM_KINDS": "alarms", "alarm_list": "alarms", "band_summary": "alarms",
    "band_text": "alarms", "p_text": "alarms", "with_history": "alarms",
    "BAND_MULTIPLIER": "bands", "DEFAULT_HISTORY_WINDOW": "bands", "learn_bands": "bands",
    "measure_floors": "bands", "MIN_NIGHTS": "bands",
    "compare_runs": "comparison", "run_specs": "comparison", "RunComparison": "comparison",
    "cusum": "drift", "DRIFT_METHOD": "drift", "drift_rows": "drift", "ewma": "drift",
    "History": "history", "Night": "history", "read_history": "history",
    "read_history_table": "history",
    "describe": "measures", "Measure": "measures", "measure_column": "measures",
    "measures_in": "measures", "resolve_measures": "measures",
    "ALL_GROUP": "pairing", "compare_examples": "pairing", "Comparison": "pairing",
    "ROW_COLUMNS": "pairing",
    "check_signatures": "signatures", "NON_SCORE_FIELDS": "signatures",
    "score_fields": "signatures",
    "ADJUST_METHODS": "statistics", "adjust_p_values": "statistics",
    "bootstrap_mean_differences": "statistics", "DEFAULT_ADJUST": "statistics",
    "DEFAULT_BAND": "statistics", "DEFAULT_CONFIDENCE": "statistics",
    "DEFAULT_MAX_MISSING": "statistics", "DEFAULT_N_BOOTSTRAP": "statistics",
    "DEFAULT_SEED": "statistics", "DEFAULT_TOP": "statistics", "INTERVAL_METHOD": "statistics",
    "is_alarm": "statistics", "is_missing": "statistics", "MDE_METHOD": "statistics",
    "paired_resampling": "statistics", "paired_test": "statistics", "PairedTest": "statistics",
    "TEST_METHOD": "statistics",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f"pipeline.compare.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pipeline.compare' has no attribute {name!r}")


__all__ = sorted(_LAZY)
