"""Token F1 and exact match, the official SQuAD v1.1 evaluation's: the ``squad`` family.

Metric names ``token_f1`` and ``exact_match``.

Both texts are normalized (lower-cased, ASCII punctuation ``string.punctuation`` removed,
the words a/an/the removed with ``\\b(a|an|the)\\b``, white space collapsed) and split on
white space. Token F1 is the harmonic mean of precision and recall of the multiset
intersection of the two token lists, 0 when nothing is shared; exact match is 1 when the
normalized texts are equal. With several references each takes the maximum over them; the
output keeps the first reference reaching it (its index) and, for token F1, that
reference's counts. The corpus value of both is the mean of the per-example values.

Definition: Rajpurkar et al. (2016), "SQuAD: 100,000+ Questions for Machine Comprehension
of Text"; code: the official ``evaluate-v1.1.py`` (``normalize_answer``, ``f1_score``,
``exact_match_score``, ``metric_max_over_ground_truths``).
"""

from __future__ import annotations

import re
import string
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.compiled import kernel, lazy_njit
from pipeline.metrics.base import DataNote, DataWarning, Family, FamilyScores, MetricSpec, Option
from pipeline.tokenizers.scripts import count_unsegmented

NAMES = ("token_f1", "exact_match")
OPTIONS: tuple[Option, ...] = ()
TOKEN_F1_STATISTICS = (("matches", "int64"), ("prediction_tokens", "int64"),
                       ("reference_tokens", "int64"))
_DELETE_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's ``normalize_answer``: lower, no ASCII punctuation, no a/an/the, spaces."""
    text = _ARTICLES.sub(" ", text.lower().translate(_DELETE_PUNCTUATION))
    return " ".join(text.split())


@lazy_njit(cache=True, nogil=True)
def _score(ids, offsets, n_predictions, ref_offsets, n_types):
    # texts 0..N-1 are the predictions, N + ref_offsets[i] .. the references of example i
    counts = np.zeros((n_predictions, 3), np.int64)
    prf = np.zeros((n_predictions, 3))
    f1_index = np.full(n_predictions, -1, np.int32)
    exact = np.zeros(n_predictions)
    exact_index = np.full(n_predictions, -1, np.int32)
    count = np.zeros(max(n_types, 1), np.int32)
    for i in range(n_predictions):
        h_lo = offsets[i]
        h_len = offsets[i + 1] - h_lo
        best = -1.0
        best_exact = -1.0
        for j in range(ref_offsets[i + 1] - ref_offsets[i]):
            r = n_predictions + ref_offsets[i] + j
            r_lo = offsets[r]
            r_len = offsets[r + 1] - r_lo
            for p in range(r_lo, r_lo + r_len):
                count[ids[p]] += 1
            same = 0
            for p in range(h_lo, h_lo + h_len):
                if count[ids[p]] > 0:
                    count[ids[p]] -= 1
                    same += 1
            for p in range(r_lo, r_lo + r_len):
                count[ids[p]] = 0
            precision = 0.0
            recall = 0.0
            f1 = 0.0
            if same != 0:
                precision = 1.0 * same / h_len
                recall = 1.0 * same / r_len
                f1 = (2 * precision * recall) / (precision + recall)
            if f1 > best:
                best = f1
                f1_index[i] = j
                counts[i, 0] = same
                counts[i, 1] = h_len
                counts[i, 2] = r_len
                prf[i, 0] = precision
                prf[i, 1] = recall
                prf[i, 2] = f1
            equal = 1.0 if r_len == h_len else 0.0
            if equal:
                for k in range(h_len):
                    if ids[h_lo + k] != ids[r_lo + k]:
                        equal = 0.0
                        break
            if equal > best_exact:
                best_exact = equal
                exact_index[i] = j
                exact[i] = equal
    return counts, prf, f1_index, exact, exact_index


def squad_scores(predictions: Sequence[str | None],
                 references: Sequence[Sequence[str | None]]) -> dict[str, np.ndarray]:
    """Token F1 (with precision, recall, counts) and exact match of each example.

    Args:
        predictions: N answers (None is empty).
        references: N lists of reference answers (None entries are skipped; an example
            with none scores 0, reference index -1).

    Returns:
        Columns of length N: ``token_f1_precision``, ``token_f1_recall``,
        ``token_f1_fmeasure`` (float64 in [0, 1]), ``token_f1_matches``,
        ``token_f1_prediction_tokens``, ``token_f1_reference_tokens`` (int64, of the kept
        reference), ``token_f1_reference_index`` and ``exact_match_reference_index``
        (int32, the first reference reaching the maximum), ``exact_match_score`` (0.0 or
        1.0).

    Raises:
        ValueError: ``references`` and ``predictions`` differ in length.

    """
    if len(references) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} reference lists")
    kept = [[j for j, r in enumerate(rs) if r is not None] for rs in references]
    ref_offsets = np.zeros(len(kept) + 1, np.int64)
    np.cumsum([len(k) for k in kept], out=ref_offsets[1:])
    texts = [t or "" for t in predictions]
    texts += [rs[j] or "" for rs, k in zip(references, kept, strict=True) for j in k]
    vocab: dict[str, int] = {}
    tokens = [normalize_answer(t).split() for t in texts]
    ids = np.array([vocab.setdefault(w, len(vocab)) for ts in tokens for w in ts], np.int32)
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum([len(ts) for ts in tokens], out=offsets[1:])
    counts, prf, f1_index, exact, exact_index = kernel("squad_score")(
        ids, offsets, len(predictions), ref_offsets, len(vocab))
    positions = np.array([j for k in kept for j in k], np.int32)

    def original(index: np.ndarray) -> np.ndarray:
        out = np.full(len(index), -1, np.int32)
        has = index >= 0
        out[has] = positions[ref_offsets[:-1][has] + index[has]]
        return out

    columns = {f"token_f1_{m}": np.ascontiguousarray(prf[:, k])
               for k, m in enumerate(("precision", "recall", "fmeasure"))}
    columns.update(Family.statistic_columns("token_f1", TOKEN_F1_STATISTICS, counts))
    columns["token_f1_reference_index"] = original(f1_index)
    columns["exact_match_score"] = exact
    columns["exact_match_reference_index"] = original(exact_index)
    return columns


NOTES = (
    DataNote("squad_unsegmented_texts", "{n} texts are in a script written without spaces "
             "(Chinese, Japanese, Thai...): token_f1 and exact_match compare white-space "
             "separated words, so each run of it is one word and shares nothing with a "
             "different one (score such texts with rouge1 --language LANG)",
             "{n} text is in a script written without spaces (Chinese, Japanese, Thai...): "
             "token_f1 and exact_match compare white-space separated words, so each run of "
             "it is one word and shares nothing with a different one (score such texts with "
             "rouge1 --language LANG)", loud=True, omit_zero=True),
)


class UnsegmentedTextWarning(DataWarning):
    """Texts in a script written without spaces, which SQuAD's words do not split."""


class Squad(Family):
    """The ``squad`` family: ``token_f1`` and ``exact_match`` (no options)."""

    name = "squad"
    # its explanation, imported on first use (the explainer imports this module)
    explainer = "pipeline.metrics.squad_explain:explain_squad"
    names = NAMES
    options = OPTIONS
    notes = NOTES

    def spec(self, metric: str, options: Mapping[str, Any]) -> MetricSpec:
        """``token_f1``: precision, recall, fmeasure and counts; ``exact_match``: score.

        Both take the maximum over references; their corpus value is the mean.
        """
        if metric == "token_f1":
            return MetricSpec(
                name=metric, family=self.name, measures=("precision", "recall", "fmeasure"),
                primary="fmeasure", statistics=TOKEN_F1_STATISTICS, reference_rule="max",
                has_reference_index=True)
        return MetricSpec(name=metric, family=self.name, measures=("score",),
                          primary="score", statistics=(), reference_rule="max",
                          has_reference_index=True)

    def signature_fields(self, options: Mapping[str, Any]) -> dict[str, str]:
        """``qa-norm:squad-v1.1`` (the normalization both metrics use)."""
        return {"qa-norm": "squad-v1.1"}

    def score(self, predictions: Sequence[str | None],
              references: Sequence[Sequence[str | None]], metrics: Sequence[str],
              options: Mapping[str, Any]) -> FamilyScores:
        """The columns of ``metrics`` (see :func:`squad_scores`); texts normalized once.

        Warns :class:`UnsegmentedTextWarning` (and counts ``squad_unsegmented_texts``) when
        texts are in a script written without spaces.
        """
        unsegmented = count_unsegmented([*predictions, *(t for r in references for t in r)])
        if unsegmented:
            warnings.warn(NOTES[0].text(unsegmented, {}), UnsegmentedTextWarning,
                          stacklevel=3)
        return FamilyScores(self.columns_of(squad_scores(predictions, references), metrics),
                            counts={"squad_unsegmented_texts": unsegmented})


FAMILY = Squad()

__all__ = ["FAMILY", "NAMES", "OPTIONS", "TOKEN_F1_STATISTICS", "Squad", "normalize_answer",
           "squad_scores"]
