"""Agreement at a level over plain matrices ``X[system, input]`` (NaN for missing).

The three levels of Deutsch, Dror and Roth (2021), "A Statistical Analysis of
Summarization Evaluation Metrics using Resampling Methods", TACL (their library nlpstats,
``correlations.correlate``):

- ``system``: each system's mean metric (over its non-missing inputs) against its mean
  human score, one coefficient over the systems;
- ``input``: for each input, the coefficient across its systems (cells missing in either
  matrix dropped), averaged over the inputs where it is defined;
- ``global``: one coefficient over every non-missing cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.agree.coefficients import COEFFICIENTS, why_undefined
from pipeline.agree.coefficients import coefficient as vector_coefficient
from pipeline.agree.columns import column_coefficients

LEVELS = ("system", "input", "global")
MIN_SYSTEMS = 3  # fewer systems: no system-level coefficient (NaN, with the reason)


@dataclass(frozen=True)
class LevelValue:
    """A coefficient at one level.

    Attributes:
        value: the coefficient, or NaN when undefined.
        reason: why it is NaN (None when defined).
        n_systems: systems with a value in both matrices.
        n_inputs: inputs with a value in both matrices (input level: those where the
            coefficient is defined and averaged).

    """

    value: float
    reason: str | None
    n_systems: int
    n_inputs: int


def _check(X: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    Z = np.asarray(Z, dtype=np.float64)
    if X.ndim != 2 or X.shape != Z.shape:
        raise ValueError(f"X and Z must be 2-D matrices of one shape, got {X.shape} and "
                         f"{Z.shape}")
    return X, Z


def correlate(X: np.ndarray, Z: np.ndarray, level: str, coefficient: str, *,
              epsilon: float = 0.0) -> LevelValue:
    """A coefficient between metric and human scores at one level.

    Args:
        X: metric scores, float (systems, inputs), NaN for missing.
        Z: human scores, float (systems, inputs), NaN for missing.
        level: ``system``, ``input`` or ``global`` (module docstring).
        coefficient: a name of :data:`pipeline.agree.coefficients.COEFFICIENTS`.
        epsilon: metric-tie threshold of ``acc23`` / ``tau23``, >= 0.

    Returns:
        A :class:`LevelValue`; NaN with a reason for fewer than 3 systems (system level),
        constant scores, or no input where the coefficient is defined (input level).

    Raises:
        ValueError: X and Z of different shapes, or an unknown level.
        ConfigError: an unknown coefficient or a bad epsilon.

    """
    X, Z = _check(X, Z)
    if coefficient not in COEFFICIENTS:
        from pipeline.errors import ConfigError

        raise ConfigError(f"unknown coefficient {coefficient!r}",
                          hint=f"choose among {', '.join(COEFFICIENTS)}")
    both = ~np.isnan(X) & ~np.isnan(Z)
    systems = int(both.any(axis=1).sum())
    inputs = int(both.any(axis=0).sum())
    if level == "system":
        rows = both.any(axis=1)
        count = both[rows].sum(axis=1)
        x = np.where(both, X, 0.0)[rows].sum(axis=1) / count
        z = np.where(both, Z, 0.0)[rows].sum(axis=1) / count
        if x.size < MIN_SYSTEMS:
            return LevelValue(float("nan"), f"fewer than {MIN_SYSTEMS} systems", systems,
                              inputs)
        reason = why_undefined(x, z, coefficient)
        value = vector_coefficient(x, z, coefficient, epsilon=epsilon)
        return LevelValue(value, reason, systems, inputs)
    if level == "global":
        x, z = X[both], Z[both]
        reason = why_undefined(x, z, coefficient)
        value = vector_coefficient(x, z, coefficient, epsilon=epsilon)
        return LevelValue(value, reason, systems, inputs)
    if level != "input":
        raise ValueError(f"unknown level {level!r}; choose among {', '.join(LEVELS)}")
    per_input = column_coefficients(X, Z, coefficient, epsilon=epsilon)
    values = per_input[~np.isnan(per_input)]
    if values.size == 0:
        return LevelValue(float("nan"), "undefined on every input (fewer than 2 systems or "
                          "constant scores)", systems, 0)
    return LevelValue(float(np.mean(values)), None, systems, int(values.size))
