"""Checked conversion of setting values (from YAML, flags or Python), each naming its key.

Every converter takes ``(key, value)`` and returns the value in its settings type, or raises
:class:`~pipeline.errors.ConfigError` naming the key. They accept the YAML form and the
Python form alike (a list or a comma-separated string of names; a tuple), and refuse what a
YAML typo produces (``"yes please"`` for a bool, ``"100"`` for an int).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date
from typing import Any

from pipeline.errors import ConfigError, did_you_mean
from pipeline.metrics.base import Option


def as_str(key: str, value: Any) -> str:
    """A string."""
    if not isinstance(value, str):
        raise ConfigError(f"{key}: expected a string, got {value!r}")
    return value


def as_opt_str(key: str, value: Any) -> str | None:
    """A string or None."""
    return None if value is None else as_str(key, value)


def as_names(key: str, value: Any) -> tuple[str, ...]:
    """A tuple of names, from a YAML list or a comma-separated string."""
    if value is None:
        return ()
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value]
    else:
        raise ConfigError(f"{key}: expected a list of names or a comma-separated string, "
                          f"got {value!r}")
    if any(not v for v in items):
        raise ConfigError(f"{key}: empty name in {value!r}")
    return tuple(items)


def as_bool(key: str, value: Any) -> bool:
    """``true`` or ``false``, nothing else."""
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value


def as_int(key: str, value: Any) -> int:
    """A whole number (not a bool, not a string)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    return value


def as_opt_int(key: str, value: Any) -> int | None:
    """A whole number or None."""
    return None if value is None else as_int(key, value)


def as_float(key: str, value: Any) -> float:
    """A finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        raise ConfigError(f"{key}: expected a number, got {value!r}")
    return float(value)


def as_mapping(key: str, value: Any) -> Mapping[str, Any] | None:
    """A mapping (copied) or None."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}: expected a mapping, got {value!r}")
    return dict(value)


def as_choice(key: str, value: Any, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (with a "did you mean" hint)."""
    value = as_str(key, value)
    if value not in choices:
        raise ConfigError(f"{key}: unknown value {value!r}; choose one of {', '.join(choices)}",
                          hint=did_you_mean(value, choices))
    return value


def as_option(option: Option, value: Any) -> Any:
    """A family option's value, of the type of its default, within its choices or bounds.

    Raises:
        ConfigError: wrong type, unknown choice or below ``option.minimum``.

    """
    key = option.key
    if value is None and option.default is None:
        return None
    kind = option.type
    if kind is bool:
        return as_bool(key, value)
    if kind is int:
        out: Any = as_int(key, value)
    elif kind is float:
        out = as_float(key, value)
    elif option.choices:
        return as_choice(key, value, option.choices)
    else:
        return as_str(key, value)
    if option.minimum is not None and out < option.minimum:
        raise ConfigError(f"{key}: expected a value >= {option.minimum:g}, got {out!r}")
    return out


__all__ = ["MAX_BOOTSTRAP", "MAX_BOOTSTRAP_WORK", "as_bool", "as_choice", "as_float", "as_int",
           "as_mapping", "as_names", "as_opt_int", "as_opt_str", "as_option", "as_str",
           "check_resamples", "check_resampling_work", "work_limit_note"]


def parse_run_date(text: str) -> date:
    """Parse a run date ``YYYY-MM-DD`` (the nightly's RUN_DATE, ``publish --run-date``).

    Raises:
        ConfigError: another format or an impossible date (``2026-13-01``, ``2026-02-30``).

    """
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        raise ConfigError(f"run date {text!r}: use YYYY-MM-DD")
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"run date {text!r}: no such day (month 01-12, a day the month "
                          "has)") from None


# The bootstrap's bounds, for score's ``bootstrap`` and compare's ``n_bootstrap`` alike:
# resamples at most, and rows x resamples (weighted draws) above the default at most. 10^10
# draws (100,000 rows x 100,000 resamples, four ROUGE metrics) took 17.6-28.6 s on the
# project's 2-core machine; the default 1,000 reaches it at 10M rows. A typo (30,000,000
# resamples) is refused, not run for hours.
MAX_BOOTSTRAP = 100_000
MAX_BOOTSTRAP_WORK = 10**10


def check_resamples(key: str, n_resamples: int, *, default: int,
                    maximum: int = MAX_BOOTSTRAP) -> None:
    """Refuse more than ``maximum`` bootstrap resamples.

    Args:
        key: the setting's name in the message (``bootstrap``, ``n_bootstrap``).
        n_resamples: the resamples asked for.
        default: the setting's default, named in the hint.
        maximum: resamples at most (:data:`MAX_BOOTSTRAP`).

    Raises:
        ConfigError: ``key: N resamples is more than the maximum of M``.

    """
    if n_resamples > maximum:
        raise ConfigError(f"{key}: {n_resamples:,} resamples is more than the maximum of "
                          f"{maximum:,}", hint=f"the default is {default:,}")


def check_resampling_work(key: str, n_resamples: int, n_rows: int, *, default: int,
                          limit: int = MAX_BOOTSTRAP_WORK) -> None:
    """Refuse a bootstrap whose work on ``n_rows`` examples is beyond ``limit``.

    The work is ``n_rows * n_resamples`` weighted draws (each resample weighs every example
    once); refused when it exceeds ``limit`` and ``n_resamples`` exceeds ``default`` (the
    default is taken at any size).

    Args:
        key: the setting's name in the message (``bootstrap``, ``n_bootstrap``).
        n_resamples: the resamples asked for, >= 0.
        n_rows: the examples the bootstrap runs over, >= 0.
        default: resamples taken at any size.
        limit: weighted draws at most (:data:`MAX_BOOTSTRAP_WORK`).

    Raises:
        ConfigError: names the resamples, the rows, the draws and the largest number of
            resamples within the limit at this size.

    """
    work = n_rows * n_resamples
    if n_resamples <= default or work <= limit:
        return
    fits = max(default, limit // max(1, n_rows))
    raise ConfigError(f"{key}: {n_resamples:,} resamples over {n_rows:,} examples are "
                      f"{_power(work)} weighted draws, more than the limit of "
                      f"{_power(limit)} (rows x resamples)",
                      hint=f"at most {fits:,} resamples at this size")


def work_limit_note(default: int, *, limit: int = MAX_BOOTSTRAP_WORK) -> str:
    """The work limit in words, for a hint beside a bound on resamples.

    Args:
        default: resamples taken at any size.
        limit: weighted draws at most (:data:`MAX_BOOTSTRAP_WORK`).

    Returns:
        ``above the default 1,000, rows x resamples is at most 1e10``.

    """
    return f"above the default {default:,}, rows x resamples is at most {_power(limit)}"


def _power(n: int) -> str:
    """``n`` in two significant digits and a power of ten: ``3e12``, ``1.5e11``."""
    return f"{n:.2g}".replace("e+", "e")
