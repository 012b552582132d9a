"""Measure names of a comparison, from the metric registry.

A measure is written ``METRIC.MEASURE`` (``rougeL.fmeasure``, ``token_f1.fmeasure``,
``bleu.score``): a metric name of the runs and one of its spec's measures. Its value is the
mean of the per-example column ``{metric}_{measure}``, except the primary measure of a corpus
metric (BLEU, chrF), whose value is the corpus score of the summed statistics
(``{metric}_{statistic}`` columns), as sacrebleu computes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pipeline.errors import ConfigError, InputError
from pipeline.metrics import registry
from pipeline.metrics.base import MetricSpec

_MEASURE_RE = re.compile(r"^(?P<metric>[A-Za-z][A-Za-z0-9_]*)\.(?P<measure>[A-Za-z][A-Za-z0-9_]*)$")


@dataclass(frozen=True)
class Measure:
    """One compared measure.

    Attributes:
        name: ``METRIC.MEASURE``.
        metric: the metric name.
        measure: the measure name.
        statistic: ``mean`` (of per-example values) or ``corpus`` (score of summed statistics).
        columns: the per-example columns it reads (one for a mean; the statistics, in the
            corpus function's order, for a corpus score).
        spec: the metric's spec, when known.

    """

    name: str
    metric: str
    measure: str
    statistic: str
    columns: tuple[str, ...]
    spec: MetricSpec | None = None


def split_measure(name: str) -> tuple[str, str]:
    """``token_f1.fmeasure`` -> (``token_f1``, ``fmeasure``).

    Raises:
        ConfigError: not of the form ``METRIC.MEASURE``.

    """
    match = _MEASURE_RE.match(name)
    if not match:
        raise ConfigError(f"not a measure: {name!r}; write METRIC.MEASURE, e.g. rougeL.fmeasure, "
                          "bleu.score or token_f1.fmeasure")
    return match.group("metric"), match.group("measure")


def measure_column(measure: str) -> str:
    """Column name of a measure in a run's examples: ``rougeL.fmeasure`` -> ``rougeL_fmeasure``.

    Raises:
        ConfigError: not of the form ``METRIC.MEASURE``.

    """
    metric, name = split_measure(measure)
    return f"{metric}_{name}"


def measures_in(columns: Iterable[str]) -> tuple[str, ...]:
    """Measures named by ``{metric}_{measure}`` columns, as the families' specs name them.

    The fallback for runs whose manifest does not list their metrics (see
    :func:`pipeline.metrics.registry.measure_of_column`).
    """
    found = []
    for name in columns:
        pair = registry.measure_of_column(name)
        if pair is not None:
            found.append(".".join(pair))
    return tuple(found)


def _primary(measure: str) -> bool:
    """True when ``METRIC.MEASURE`` is its metric's primary measure (default options)."""
    metric, name = split_measure(measure)
    try:
        return registry.spec(metric, {}).primary == name
    except ConfigError:
        return False


def measures_of(specs: Sequence[MetricSpec]) -> tuple[str, ...]:
    """Every measure of the specs, ``METRIC.MEASURE``, in spec order."""
    return tuple(f"{s.name}.{m}" for s in specs for m in s.measures)


def primary_measures(specs: Sequence[MetricSpec]) -> tuple[str, ...]:
    """The headline measure of each spec (fmeasure for ROUGE, score for BLEU...)."""
    return tuple(f"{s.name}.{s.primary}" for s in specs)


def describe(name: str, specs: Sequence[MetricSpec] = ()) -> Measure:
    """The :class:`Measure` of a name: a corpus score for a corpus metric's primary measure.

    Raises:
        ConfigError: a malformed name.

    """
    metric, measure = split_measure(name)
    spec = next((s for s in specs if s.name == metric), None)
    if spec is not None and spec.corpus is not None and measure == spec.primary:
        return Measure(name, metric, measure, "corpus", spec.statistic_columns, spec)
    return Measure(name, metric, measure, "mean", (f"{metric}_{measure}",), spec)


def resolve_measures(
    requested: Sequence[str] | None,
    baseline_measures: Sequence[str],
    candidate_measures: Sequence[str],
    *,
    default: Sequence[str] | None = None,
) -> tuple[str, ...]:
    """Choose the measures to compare.

    Args:
        requested: ``METRIC.MEASURE`` names, or None/empty for the default.
        baseline_measures: measures the baseline run has.
        candidate_measures: measures the candidate run has.
        default: the measures compared when none is requested, kept when both runs have
            them (default: each metric's primary measure, as its family's spec says).

    Returns:
        The measures, duplicates removed, in request order.

    Raises:
        ConfigError: a malformed name, or a name neither run has.
        InputError: a requested measure missing from one run, or no default in common.

    """
    common = [m for m in baseline_measures if m in set(candidate_measures)]
    if not requested:
        chosen = [m for m in common if m in set(default)] if default is not None else \
            [m for m in common if _primary(m)]
        if not chosen:
            raise InputError("the two runs have no measure to compare in common "
                             f"(baseline: {', '.join(baseline_measures) or 'none'}; "
                             f"candidate: {', '.join(candidate_measures) or 'none'})")
        return tuple(chosen)
    out: list[str] = []
    for name in requested:
        split_measure(name)
        if name not in baseline_measures and name not in candidate_measures:
            raise ConfigError(f"measure {name!r} is not in the baseline run nor in the "
                              "candidate run",
                              hint=f"they have {', '.join(common) or 'no measure'}")
        for side, have in (("baseline", baseline_measures), ("candidate", candidate_measures)):
            if name not in have:
                raise InputError(f"measure {name!r} is not in the {side} run",
                                 hint=f"it has {', '.join(have) or 'no measure'}")
        if name not in out:
            out.append(name)
    return tuple(out)


__all__ = ["Measure", "describe", "measure_column", "measures_in",
           "measures_of", "primary_measures", "resolve_measures", "split_measure"]
