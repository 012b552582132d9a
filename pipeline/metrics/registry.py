"""The metric registry: metric names -> families and :class:`~pipeline.metrics.base.MetricSpec`.

The one place downstream layers (output schema, aggregate, compare, thresholds, signature,
CLI) learn which metrics exist, which columns a metric writes, how its corpus value is
computed, and which options a family has. A family claims names by pattern
(:meth:`MetricFamily.serves`), so ``rouge7`` needs no list entry.

Adding a family: write its module under ``metrics/`` (a
:class:`~pipeline.metrics.base.Family` subclass implementing
:class:`~pipeline.metrics.base.MetricFamily`) and add it to :data:`FAMILIES`; nothing else
changes (``docs/adding-a-metric.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.errors import ConfigError, did_you_mean
from pipeline.metrics.base import DataNote, MetricFamily, MetricSpec, Option, Preset
from pipeline.metrics.bleu import FAMILY as BLEU
from pipeline.metrics.chrf import FAMILY as CHRF
from pipeline.metrics.rouge.family import FAMILY as ROUGE
from pipeline.metrics.rouge155.family import FAMILY as ROUGE155
from pipeline.metrics.squad import FAMILY as SQUAD

# Every family, in the order their options and names are listed.
FAMILIES: tuple[MetricFamily, ...] = (ROUGE, ROUGE155, BLEU, CHRF, SQUAD)


def family_of(metric: str) -> MetricFamily:
    """The family serving ``metric``.

    Raises:
        ConfigError: no family serves it (with a "did you mean" hint).

    """
    for family in FAMILIES:
        if family.serves(metric):
            return family
    raise ConfigError(f"unknown metric {metric!r}; choose from {', '.join(names())}",
                      hint=did_you_mean(metric, names()))


def names() -> tuple[str, ...]:
    """Every listed metric name, family by family (for help texts and hints)."""
    return tuple(n for f in FAMILIES for n in f.names)


def options() -> tuple[Option, ...]:
    """Every family option, each key once, in family order.

    Raises:
        ConfigError: two families declare one key differently (a programming error).

    """
    seen: dict[str, Option] = {}
    for family in FAMILIES:
        for option in family.options:
            if option.key in seen and seen[option.key] != option:
                raise ConfigError(f"option {option.key!r} is declared differently by two "
                                  "metric families")
            seen.setdefault(option.key, option)
    return tuple(seen.values())


def readers(key: str) -> tuple[MetricFamily, ...]:
    """The families that declare option ``key`` or read it (their ``reads``), in order."""
    return tuple(f for f in FAMILIES
                 if any(o.key == key for o in f.options) or key in getattr(f, "reads", ()))


def with_defaults(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with every family option it lacks at its default (other keys kept)."""
    out = {o.key: o.default for o in options()}
    out.update(values)
    return out


def spec(metric: str, options: Mapping[str, Any]) -> MetricSpec:
    """The spec of one metric name under the flat scoring options.

    Args:
        metric: a metric name, e.g. ``rouge1``.
        options: scoring options as in the config file or a manifest's ``config``
            (``multi_reference``, ``bleu_tokenize``...); missing options take their
            defaults, other keys are ignored.

    Raises:
        ConfigError: an unknown metric name, or an option value its family refuses.

    """
    return family_of(metric).spec(metric, with_defaults(options))


def specs(metrics: Sequence[str], options: Mapping[str, Any]) -> tuple[MetricSpec, ...]:
    """Specs of ``metrics`` in order (see :func:`spec`)."""
    full = with_defaults(options)
    return tuple(family_of(m).spec(m, full) for m in metrics)


def by_family(metrics: Sequence[str]) -> list[tuple[MetricFamily, tuple[str, ...]]]:
    """``metrics`` grouped by family, families in order of their first metric.

    Raises:
        ConfigError: an unknown metric name.

    """
    groups: dict[str, tuple[MetricFamily, list[str]]] = {}
    for m in metrics:
        family = family_of(m)
        groups.setdefault(family.name, (family, []))[1].append(m)
    return [(family, tuple(ms)) for family, ms in groups.values()]


def presets() -> tuple[Preset, ...]:
    """Every family's presets, in family order (settings keys, e.g. ``rouge155``)."""
    return tuple(p for f in FAMILIES for p in f.presets)


def data_notes() -> tuple[DataNote, ...]:
    """Every family's data notes, each key once, in family order (the manifest's order)."""
    seen: dict[str, DataNote] = {}
    for family in FAMILIES:
        for note in family.notes:
            seen.setdefault(note.key, note)
    return tuple(seen.values())


def trailing_signature_fields() -> tuple[str, ...]:
    """Signature keys the families write after ``seed``, in family order."""
    return tuple(dict.fromkeys(k for f in FAMILIES for k in f.trailing_signature_fields))


def measure_of_column(column: str) -> tuple[str, str] | None:
    """``(metric, measure)`` when ``column`` is a measure column ``{metric}_{measure}``.

    A metric some family serves and one of the measures of its spec under default options
    (e.g. ``rougeL_fmeasure`` -> ``("rougeL", "fmeasure")``, ``token_f1_recall`` ->
    ``("token_f1", "recall")``); None for any other column.
    """
    for cut in range(len(column) - 1, 0, -1):
        if column[cut] != "_":
            continue
        metric, measure = column[:cut], column[cut + 1:]
        for family in FAMILIES:
            if family.serves(metric):
                try:
                    measures = family.spec(metric, with_defaults({})).measures
                except ConfigError:
                    measures = ()
                if measure in measures:
                    return metric, measure
    return None


def signature_fields(metrics: Sequence[str], options: Mapping[str, Any]) -> dict[str, str]:
    """Signature fields of the families of ``metrics``, in order of their first metric.

    Raises:
        ConfigError: an unknown metric name, or two families writing one field differently.

    """
    full = with_defaults(options)
    fields: dict[str, str] = {}
    writers: dict[str, tuple[MetricFamily, tuple[str, ...]]] = {}
    for family, names_ in by_family(metrics):
        for key, value in family.signature_fields(full).items():
            if fields.setdefault(key, value) != value:
                first, first_names = writers[key]
                raise ConfigError(
                    f"{', '.join(first_names)} and {', '.join(names_)} cannot be scored in "
                    f"one run as set: their families disagree on signature field {key!r}, "
                    f"{key}:{fields[key]} against {key}:{value}",
                    hint=_mixing_hint(key, (first, first_names), (family, names_)))
            writers.setdefault(key, (family, names_))
    return fields


def _mixing_hint(key: str, *sides: tuple[MetricFamily, tuple[str, ...]]) -> str:
    """What to do about two families writing signature field ``key`` differently."""
    for family, names_ in sides:
        hint = getattr(family, "mixing_hints", {}).get(key)
        if hint:
            return hint.format(metrics=", ".join(names_))
    return "set the option they share to one value, or score them in two runs"


__all__ = ["FAMILIES", "by_family", "data_notes", "family_of", "measure_of_column", "names",
           "options", "presets", "signature_fields", "spec", "specs", "trailing_signature_fields",
           "with_defaults"]
