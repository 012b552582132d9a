"""Pairwise preferences: does the metric pick the summary the raters picked?

A preferences table names two examples (``id_a``, ``id_b``) and the raters' choice:
``choice`` in ``a``, ``b``, ``tie``, one row per rater (any other columns ignored), or
counts ``n_a``, ``n_b``, ``n_tie`` per pair. For each pair:

- the raters' **majority**: the choice with most votes; equal top counts make ``tie``;
- the **metric's choice**: ``a`` when the metric scores ``id_a`` higher, ``b`` when lower,
  ``tie`` when equal (or within ``epsilon``);
- they **agree** when the two choices are equal; a tie counts as agreement only with a tie,
  as mt-metrics-eval's acc23 counts pairs (Deutsch, Foster and Freitag 2023).

The agreement rate is the share of pairs where they agree, with a percentile bootstrap
interval over the pairs (seeded); the 50% line is chance between two choices. One rater's
agreement with the others: each vote against the majority of the other votes on its pair
(pairs with at least two votes), averaged over the votes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pipeline.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

CHOICES = ("a", "b", "tie")


@dataclass(frozen=True)
class PreferenceCounts:
    """Votes per pair.

    Attributes:
        id_a: the first example of each pair, (pairs,).
        id_b: the second example of each pair, (pairs,).
        votes: int (pairs, 3): votes for ``a``, ``b``, ``tie``.

    """

    id_a: np.ndarray
    id_b: np.ndarray
    votes: np.ndarray


def read_counts(frame: pd.DataFrame, *, name: str) -> PreferenceCounts:
    """Votes per pair from one row per rater (``choice``) or counts (``n_a``, ``n_b``, ``n_tie``).

    Args:
        frame: the preferences table.
        name: its path, for errors.

    Returns:
        :class:`PreferenceCounts`, pairs in order of first appearance.

    Raises:
        InputError: no ``id_a`` / ``id_b``; neither ``choice`` nor the three counts; a choice
            other than a, b, tie (names the row's ids); negative counts.

    """
    for c in ("id_a", "id_b"):
        if c not in frame.columns:
            raise InputError(f"preferences {name} have no column {c!r}",
                             hint="a row is id_a, id_b and choice (a, b or tie), or counts "
                                  "n_a, n_b, n_tie")
    if "choice" in frame.columns:
        choice = frame["choice"].astype(str).str.strip().str.lower()
        bad = ~choice.isin(CHOICES)
        if bad.any():
            row = frame[bad].iloc[0]
            raise InputError(f"preferences {name}: choice {frame['choice'][bad].iloc[0]!r} "
                             f"for ids {row['id_a']!r}, {row['id_b']!r} is not a, b or tie")
        onehot = np.stack([(choice == c).to_numpy() for c in CHOICES], axis=1).astype(np.int64)
    elif all(c in frame.columns for c in ("n_a", "n_b", "n_tie")):
        onehot = frame[["n_a", "n_b", "n_tie"]].to_numpy(dtype=np.int64)
        if (onehot < 0).any():
            raise InputError(f"preferences {name}: negative counts")
    else:
        raise InputError(f"preferences {name} have neither a choice column nor n_a, n_b, n_tie")
    keys = list(zip(frame["id_a"].tolist(), frame["id_b"].tolist(), strict=True))
    index: dict[tuple[Any, Any], int] = {}
    for k in keys:
        index.setdefault(k, len(index))
    votes = np.zeros((len(index), 3), dtype=np.int64)
    np.add.at(votes, np.array([index[k] for k in keys], dtype=np.int64), onehot)
    pairs = list(index)
    return PreferenceCounts(np.array([p[0] for p in pairs], dtype=object),
                            np.array([p[1] for p in pairs], dtype=object), votes)


def majority(votes: np.ndarray) -> np.ndarray:
    """The majority choice per pair: 0 (a), 1 (b), 2 (tie); equal top counts give tie.

    Args:
        votes: int (pairs, 3).

    Returns:
        int (pairs,); -1 for a pair without votes.

    """
    top = votes.max(axis=1)
    winners = (votes == top[:, None]).sum(axis=1)
    out = np.where(winners > 1, 2, votes.argmax(axis=1))
    out[top == 0] = -1
    return out


def metric_choice(score_a: np.ndarray, score_b: np.ndarray, epsilon: float = 0.0
                  ) -> np.ndarray:
    """0 (a scored higher), 1 (b higher) or 2 (a tie: ``|a - b| <= epsilon``), per pair."""
    diff = np.asarray(score_a, dtype=np.float64) - np.asarray(score_b, dtype=np.float64)
    return np.where(np.abs(diff) <= epsilon, 2, np.where(diff > 0, 0, 1))


def rater_agreement(votes: np.ndarray) -> float:
    """Each vote against the majority of the other votes on its pair, averaged over votes.

    Args:
        votes: int (pairs, 3).

    Returns:
        The share of votes (on pairs with at least 2 votes) equal to the leave-one-out
        majority; NaN when no pair has 2 votes.

    """
    agree = 0
    total = 0
    for row in votes:
        if row.sum() < 2:
            continue
        for c in range(3):
            if row[c] == 0:
                continue
            others = row.copy()
            others[c] -= 1
            maj = majority(others[None])[0]
            agree += int(row[c]) * int(maj == c)
            total += int(row[c])
    return agree / total if total else float("nan")


def preference_agreement(counts: PreferenceCounts, scores: dict[Any, float], *,
                         epsilon: float = 0.0, n_resamples: int = 1000,
                         confidence: float = 0.95, seed: int = 12345) -> dict[str, Any]:
    """The metric's agreement with the raters' majority on the pairs.

    Args:
        counts: the votes (:func:`read_counts`).
        scores: the metric's score per example id.
        epsilon: metric differences up to this are ties.
        n_resamples: bootstrap resamples over the pairs (0: no interval).
        confidence: the interval's coverage.
        seed: the bootstrap's seed.

    Returns:
        ``{"n_pairs", "agreement", "low", "high", "chance", "rater_agreement",
        "majority_a", "majority_b", "majority_tie"}`` (shares in [0, 1]).

    Raises:
        InputError: a pair's id without a score (names up to 5).

    """
    missing = [i for i in (*counts.id_a, *counts.id_b) if i not in scores]
    if missing:
        shown = ", ".join(repr(m) for m in list(dict.fromkeys(missing))[:5])
        raise InputError(f"preferences name ids that have no score: {shown}")
    maj = majority(counts.votes)
    keep = maj >= 0
    a = np.array([scores[i] for i in counts.id_a[keep]], dtype=np.float64)
    b = np.array([scores[i] for i in counts.id_b[keep]], dtype=np.float64)
    hit = (metric_choice(a, b, epsilon) == maj[keep]).astype(np.float64)
    n = int(hit.size)
    out: dict[str, Any] = {"n_pairs": n, "agreement": float(hit.mean()) if n else float("nan"),
                           "low": float("nan"), "high": float("nan"), "chance": 0.5,
                           "rater_agreement": rater_agreement(counts.votes[keep])}
    for k, c in enumerate(CHOICES):
        out[f"majority_{c}"] = float(np.mean(maj[keep] == k)) if n else float("nan")
    if n and n_resamples > 0:
        rng = np.random.default_rng(seed)
        means = hit[rng.integers(0, n, size=(n_resamples, n))].mean(axis=1)
        alpha = (1 - confidence) / 2
        out["low"], out["high"] = (float(v) for v in np.percentile(means, [alpha * 100,
                                                                           (1 - alpha) * 100]))
    return out
