"""The metric registry: metric names -> :class:`~pipeline.metrics.base.MetricSpec`.

The one place downstream layers (output schema, aggregate, compare, thresholds, CLI) learn
which columns a metric writes and how its corpus value is computed.

Seam for the families being added (issue 9): today only ROUGE's specs are built here; each
family module will register itself and this module will only dispatch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.errors import ConfigError
from pipeline.metrics.base import MetricSpec

_ROUGE = re.compile(r"rouge[1-9]|rougeL|rougeLsum")


def spec(metric: str, options: Mapping[str, Any]) -> MetricSpec:
    """The spec of one metric name under the flat scoring options.

    Args:
        metric: a metric name, e.g. ``rouge1``.
        options: scoring options as in the config file (``multi_reference``...).

    Raises:
        ConfigError: an unknown metric name.

    """
    if _ROUGE.fullmatch(metric):
        return MetricSpec(
            name=metric, family="rouge", measures=("precision", "recall", "fmeasure"),
            primary="fmeasure",
            statistics=(("matches", "int64"), ("prediction_units", "int64"),
                        ("reference_units", "int64")),
            reference_rule=str(options.get("multi_reference", "max")),
            has_reference_index=True)
    raise ConfigError(f"unknown metric {metric!r}")


def specs(metrics: Sequence[str], options: Mapping[str, Any]) -> tuple[MetricSpec, ...]:
    """Specs of ``metrics`` in order (see :func:`spec`)."""
    return tuple(spec(m, options) for m in metrics)


__all__ = ["spec", "specs"]
