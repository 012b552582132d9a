"""What a family's explanation is made of: tokens with their place in the text, matched units.

Every family that explains its scores (the optional ``explainer`` of
:class:`~pipeline.metrics.base.MetricFamily`) returns one :class:`MetricExplanation` per
metric: the scores and statistics under the names of the metric's spec (so that they compare
key for key with the scorer's columns), one :class:`PairExplanation` per reference with the
matched units, and the token lists the positions point into. The helpers here (clipped
n-gram matches, character spans of tokens, the union-LCS pairing of ROUGE-Lsum and the
script's ROUGE-L) are shared by the families' explainers; the definitions stay in the
families' modules.

Pure core: texts and tokens in, dataclasses out.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# A text line of the explanation: a label and the units it lists, e.g.
# ("clipped 2-grams", ["the cat x1", ...]); the formatter wraps the items.
Listing = tuple[str, list[str]]


@dataclass(frozen=True)
class Tokens:
    """A text as a family's scorer sees it.

    Attributes:
        text: the text as given ("" for None).
        tokens: the compared units (normalized, stemmed, cut at a limit, as the family does).
        sentences: ``(start, end)`` token ranges of the text's sentences, for families
            that use them (ROUGE's rougeLsum, ROUGE-1.5.5's lines); else one range.
        spans: ``(start, end)`` character offsets of each token in ``text``, or None when
            they cannot be followed back (a normalization that rewrites the text); the
            report marks words with them.

    """

    text: str
    tokens: list[str]
    sentences: list[tuple[int, int]]
    spans: list[tuple[int, int]] | None

    def to_document(self) -> dict[str, Any]:
        """JSON-ready dict: ``tokens`` and ``sentences`` (``[start, end]`` pairs)."""
        return {"tokens": list(self.tokens), "sentences": [list(s) for s in self.sentences]}


@dataclass(frozen=True)
class PairExplanation:
    """One metric on one (prediction, reference) pair.

    Attributes:
        reference_index: 0-based index of the reference in the example's list.
        statistics: the pair's sufficient statistics, named as the metric's spec names
            them (e.g. ``matches``, ``prediction_units``, ``reference_units``).
        measures: the pair's measures, named as the spec names them (e.g. ``fmeasure``).
        detail: the matched units, JSON-ready, family-specific (``ngrams``, ``alignment``,
            ``sentences``, ``orders``, ``skip_bigrams``, ``shared``...; see docs/explain.md).
        prediction_positions: prediction token positions taking part in the matches.
        reference_positions: reference token positions taking part in the matches.
        listing: what ``overlap explain`` prints for the pair, as :data:`Listing` lines.

    """

    reference_index: int
    statistics: dict[str, Any]
    measures: dict[str, float]
    detail: dict[str, Any] = field(default_factory=dict)
    prediction_positions: list[int] = field(default_factory=list)
    reference_positions: list[int] = field(default_factory=list)
    listing: list[Listing] = field(default_factory=list)

    def to_document(self) -> dict[str, Any]:
        """JSON-ready dict: index, statistics, measures, then the detail's keys."""
        return {"reference_index": self.reference_index, "statistics": dict(self.statistics),
                "measures": dict(self.measures), **self.detail}


@dataclass(frozen=True)
class MetricExplanation:
    """One metric on one example: every reference, and the multi-reference rule's outcome.

    Attributes:
        metric: e.g. ``rouge2``, ``bleu``, ``chrfpp``.
        family: the family's registry name.
        rule: the multi-reference rule (the spec's ``reference_rule``).
        reference_index: the reference whose statistics the example keeps; -1 when the rule
            pools or averages references, or for BLEU (clipping by every reference).
        measures: per measure of the spec, the value the scorer writes.
        statistics: per statistic of the spec, the value the scorer writes.
        pairs: one :class:`PairExplanation` per reference the family reads (references
            that are None are skipped by the BLEU, chrF and SQuAD families), in order.
        view: the name of the token view (e.g. ``rouge``, ``bleu``, ``chrf``); metrics of
            one family share it.
        prediction: the prediction's tokens in that view.
        references: each reference's tokens in that view, in the example's order.
        detail: metric-level detail, JSON-ready (BLEU: lengths, brevity penalty,
            precisions and n-grams per order).
        listing: what ``overlap explain`` prints at the metric level.

    """

    metric: str
    family: str
    rule: str
    reference_index: int
    measures: dict[str, float]
    statistics: dict[str, Any]
    pairs: list[PairExplanation]
    view: str
    prediction: Tokens
    references: list[Tokens]
    detail: dict[str, Any] = field(default_factory=dict)
    listing: list[Listing] = field(default_factory=list)

    def pair(self, reference_index: int) -> PairExplanation | None:
        """The pair of the reference with this index (None when the family skipped it)."""
        for p in self.pairs:
            if p.reference_index == reference_index:
                return p
        return None

    @property
    def winner(self) -> PairExplanation | None:
        """The kept reference's pair (None when references are pooled or averaged)."""
        return self.pair(self.reference_index) if self.reference_index >= 0 else None

    def to_document(self) -> dict[str, Any]:
        """JSON-ready dict: the fields, ``pairs`` as ``references``, ``view`` as ``tokens``."""
        return {"family": self.family, "rule": self.rule,
                "reference_index": self.reference_index, "measures": dict(self.measures),
                "statistics": dict(self.statistics), **self.detail, "tokens": self.view,
                "references": [p.to_document() for p in self.pairs]}


# ---------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------

def char_spans(text: str, surface: Sequence[str], normalize: Callable[[str], str], *,
               word_start: bool = False) -> list[tuple[int, int]] | None:
    """Character spans of ``surface`` tokens found in order in ``normalize(text)``.

    ``normalize`` is applied character by character so that every output character keeps
    its source; when that differs from normalizing the whole text (even after NFC), or a
    token is not found, the spans cannot be followed back and None is returned.

    Args:
        text: the text as given.
        surface: the tokens before stemming, in text order.
        normalize: the tokenizer's per-text normalization (e.g. lower-casing).
        word_start: a token starts a word (not after a letter or digit); for tokenizers
            that drop words (SQuAD's articles), so that ``he`` is not found in ``the``.

    Returns:
        One ``(start, end)`` character range of ``text`` per token, or None.

    """
    out_chars: list[str] = []
    source: list[int] = []
    for i, ch in enumerate(text):
        norm = normalize(ch)
        out_chars.append(norm)
        source += [i] * len(norm)
    norm_text = "".join(out_chars)
    if norm_text != normalize(text) and unicodedata.normalize("NFC", norm_text) \
            != unicodedata.normalize("NFC", normalize(text)):
        return None
    spans = []
    cursor = 0
    for token in surface:
        at = norm_text.find(token, cursor) if token else -1
        while word_start and at > 0 and norm_text[at - 1].isalnum():
            at = norm_text.find(token, at + 1)
        if at < 0:
            return None
        end = at + len(token)
        spans.append((source[at], source[end - 1] + 1))
        cursor = end
    return spans


def ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """The n-grams of ``tokens`` in order, ``len(tokens) - n + 1`` of them (none if shorter)."""
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def clipped_matches(prediction: Sequence[tuple[str, ...]], clip: Counter[tuple[str, ...]]
                    ) -> list[dict[str, Any]]:
    """Clipped matches of the prediction's n-grams against clipping counts.

    Args:
        prediction: the prediction's n-grams in order.
        clip: per n-gram, how many times it may match (its count in the reference, or for
            BLEU its largest count in any one reference).

    Returns:
        Per n-gram found in both, in order of first occurrence in the prediction:
        ``{"ngram": [...], "prediction_count", "reference_count", "matches"}`` with matches
        = min(prediction count, clip count); their sum is the clipped match count.

    """
    counts = Counter(prediction)
    return [{"ngram": list(g), "prediction_count": counts[g], "reference_count": clip[g],
             "matches": min(counts[g], clip[g])}
            for g in dict.fromkeys(prediction) if clip.get(g, 0) > 0]


def matched_positions(grams: Sequence[tuple[str, ...]], budget: dict[tuple[str, ...], int]
                      ) -> list[int]:
    """Token positions covered by the first ``budget[g]`` occurrences of each n-gram ``g``.

    Args:
        grams: a text's n-grams in order (n-gram i covers tokens i..i+n-1).
        budget: per n-gram, how many of its occurrences are matched.

    Returns:
        The covered token positions, sorted.

    """
    left = dict(budget)
    marked: set[int] = set()
    for i, g in enumerate(grams):
        if left.get(g, 0) > 0:
            left[g] -= 1
            marked.update(range(i, i + len(g)))
    return sorted(marked)


def gram_items(rows: Sequence[dict[str, Any]], *, joiner: str = " ",
               reference: str = "ref", quoted: bool = False) -> list[str]:
    """Rows of :func:`clipped_matches` as listing items: ``the cat x2 (pred 3, ref 2)``.

    ``quoted``: each token as a Python literal (``'the' 'cat' x2``), so that a token of
    white space (jieba's ``' '`` under ``--language``) is seen.
    """
    return [f"{joiner.join(map(repr, r['ngram']) if quoted else r['ngram'])} x{r['matches']}"
            + (f" (pred {r['prediction_count']}, {reference} {r['reference_count']})"
               if r["prediction_count"] != r["reference_count"] else "")
            for r in rows]


def one_range(tokens: Sequence[str]) -> list[tuple[int, int]]:
    """The sentences of a text that has none: one range over all its tokens."""
    return [(0, len(tokens))]


def union_pairs(ref: Sequence[str], ref_sentences: Sequence[tuple[int, int]],
                pred: Sequence[str], pred_sentences: Sequence[tuple[int, int]]) -> list[int]:
    """Per reference position, the prediction position it pairs with in the union, or -1.

    Each reference sentence's LCS with each prediction sentence in order (rouge-score's
    backtrack, :func:`pipeline.metrics.rouge.explain.lcs_pairs`), the first prediction
    sentence to take a position pairing it; computed by
    :func:`pipeline.metrics.rouge.lcs.union_lcs_alignment` in one call. Shared by rougeLsum's
    explanation and the ROUGE-1.5.5 script's ROUGE-L.

    Args:
        ref: reference tokens, length R.
        ref_sentences: ``(start, end)`` token ranges of the reference's sentences.
        pred: prediction tokens.
        pred_sentences: ``(start, end)`` token ranges of the prediction's sentences.

    Returns:
        R prediction positions (``0 <= p < len(pred)``), -1 where the reference token is not
        in the union.

    """
    if not ref:
        return []
    from pipeline.compiled import kernel

    ids: dict[str, int] = {}
    encoded = np.fromiter((ids.setdefault(t, len(ids)) for t in [*ref, *pred]),
                          dtype=np.int32, count=len(ref) + len(pred))
    bounds = [np.array(list(b), dtype=np.int64).reshape(-1, 2)
              for b in (ref_sentences, pred_sentences)]
    first = kernel("union_lcs_alignment")(encoded, len(ref), bounds[0], bounds[1],
                                           max(len(ids), 1))
    return [int(p) for p in first.tolist()]


__all__ = ["Listing", "MetricExplanation", "PairExplanation", "Tokens", "char_spans",
           "clipped_matches", "gram_items", "matched_positions", "ngrams", "one_range",
           "union_pairs"]
