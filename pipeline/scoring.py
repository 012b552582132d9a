"""Score a batch of predictions against their references: the one place the rules live.

Per (prediction, reference) pair the compiled kernel returns sufficient statistics
(matches, prediction units, reference units); precision, recall and fmeasure are derived from
them exactly as rouge-score 0.1.2 does, and the multi-reference rule picks or pools pairs
into one row per example.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.compiled import kernel
from pipeline.errors import ConfigError, did_you_mean
from pipeline.tokenizers import STEMMERS, TOKENIZERS, Tokenizer, get_tokenizer, tokenize_batch

METRICS = tuple(f"rouge{n}" for n in range(1, 10)) + ("rougeL", "rougeLsum")
DEFAULT_METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")
MULTI_REFERENCE_RULES = ("max", "mean", "pooled", "best-recall")
SENTENCE_SPLITS = ("newline", "punctuation")
# sentence_split="punctuation": a line break after . ! or ? followed by white space.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SEVERAL_SENTENCES = re.compile(r"[.!?]\s+\S")
MEASURES = ("precision", "recall", "fmeasure")
STATISTICS = ("matches", "prediction_units", "reference_units")


class ZeroTokenWarning(UserWarning):
    """Non-empty texts produced no tokens (e.g. non-Latin text under ``rouge-score``)."""


class SentenceSplitWarning(UserWarning):
    """rougeLsum was asked for texts with several sentences on one line (it then equals rougeL)."""


# Metric codes of the batch kernel (pipeline.metrics.batch): n for rougeN.
ROUGE_L = 0
ROUGE_LSUM = -1


def _metric_code(name: str) -> int:
    if name == "rougeL":
        return ROUGE_L
    if name == "rougeLsum":
        return ROUGE_LSUM
    match = re.fullmatch(r"rouge([1-9])", name)
    if not match:
        raise ConfigError(f"unknown metric {name!r}; choose from rouge1..rouge9, rougeL, "
                          "rougeLsum", hint=did_you_mean(name, METRICS))
    return int(match.group(1))


def fmeasure(precision: np.ndarray, recall: np.ndarray) -> np.ndarray:
    """Harmonic mean, elementwise, as rouge-score 0.1.2 ``scoring.fmeasure``.

    ``2 * p * r / (p + r)`` evaluated in that order (other algebraic forms differ in the last
    bit), and 0 where ``p + r == 0``.

    Args:
        precision: float64 array in [0, 1].
        recall: float64 array of the same shape, in [0, 1].

    """
    denom = precision + recall
    with np.errstate(invalid="ignore", divide="ignore"):
        f = 2 * precision * recall / denom
    return np.where(denom > 0, f, 0.0)


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / max(denominator, 1)`` in float64: rouge-score's precision and recall.

    rouge-score divides by ``max(count, 1)`` for ROUGE-N and returns 0 when either side is
    empty for ROUGE-L/Lsum; both equal this, since matches are 0 when a side has no units.
    """
    return numerator.astype(np.float64) / np.maximum(denominator, 1).astype(np.float64)


@dataclass(frozen=True)
class ScoredBatch:
    """The result of :meth:`Scorer.score_batch`.

    Attributes:
        table: one row per example: ``n_references`` (int32) and per metric
            ``{metric}_precision``, ``{metric}_recall``, ``{metric}_fmeasure`` (float64 in
            [0, 1]), ``{metric}_matches``, ``{metric}_prediction_units``,
            ``{metric}_reference_units`` (int64) and ``{metric}_reference_index`` (int32; -1
            when the rule pools references or there is none).
        n_zero_token_texts: predictions and references with visible characters but no token.
        truncated: bool, shape (N,): True where the prediction or a reference had more than
            ``max_tokens`` tokens and was cut (None when no limit was set).
        n_one_line_texts: predictions and references with several sentences but no newline,
            for which rougeLsum equals rougeL (counted only when rougeLsum is asked for
            with ``sentence_split="newline"``).
    """

    table: pa.Table
    n_zero_token_texts: int = 0
    truncated: np.ndarray | None = None
    n_one_line_texts: int = 0


@dataclass(frozen=True)
class Scorer:
    """Scores batches of predictions against lists of references.

    Build one per worker: names are validated here, once.

    Args:
        metrics: names among rouge1..rouge9, rougeL, rougeLsum.
        tokenizer: a name in ``TOKENIZERS`` (default ``rouge-score``: rouge-score 0.1.2).
        stemmer: ``none`` or ``porter`` (rouge-score ``use_stemmer=True``).
        case_sensitive: keep case when tokenizing.
        multi_reference: how several references combine into one score per metric:
            ``max``: rouge-score ``score_multi``: the reference with the highest fmeasure,
            first on ties, with that reference's precision and recall;
            ``mean``: mean precision, recall and fmeasure over references;
            ``pooled``: ROUGE-1.5.5 ``-f A``: matches and reference units summed over
            references, prediction units counted once per reference;
            ``best-recall``: ROUGE-1.5.5 ``-f B``: the reference with the highest recall,
            first on ties.
        sentence_split: how rougeLsum finds sentences: ``newline`` (rouge-score: lines of
            the text) or ``punctuation`` (also a break after ``.``, ``!`` or ``?`` followed by
            white space; a deviation that works offline, unlike rouge-score's NLTK punkt).
        max_tokens: when set, a text with more tokens is cut to its first ``max_tokens``
            tokens before scoring and its example flagged in :attr:`ScoredBatch.truncated`:
            a guard against pathological inputs (LCS time grows with the product of the
            lengths). None (the default) scores every token, like rouge-score.

    Raises:
        ConfigError: unknown metric, tokenizer, stemmer or rule.

    """

    metrics: tuple[str, ...] = DEFAULT_METRICS
    tokenizer: str = "rouge-score"
    stemmer: str = "none"
    case_sensitive: bool = False
    multi_reference: str = "max"
    sentence_split: str = "newline"
    max_tokens: int | None = None
    _codes: np.ndarray = field(init=False, repr=False, compare=False)
    _tokenizer: Tokenizer = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        metrics = tuple(self.metrics)
        if not metrics:
            raise ConfigError("no metric requested")
        if len(set(metrics)) != len(metrics):
            raise ConfigError(f"metric listed twice in {','.join(metrics)}")
        object.__setattr__(self, "metrics", metrics)
        object.__setattr__(self, "_codes",
                           np.array([_metric_code(m) for m in metrics], dtype=np.int64))
        object.__setattr__(self, "_tokenizer",
                           get_tokenizer(self.tokenizer, case_sensitive=self.case_sensitive))
        if self.stemmer not in STEMMERS:
            raise ConfigError(f"unknown stemmer {self.stemmer!r}; choose one of "
                              f"{', '.join(STEMMERS)}", hint=did_you_mean(self.stemmer, STEMMERS))
        if self.multi_reference not in MULTI_REFERENCE_RULES:
            raise ConfigError(
                f"unknown multi-reference rule {self.multi_reference!r}; choose one of "
                f"{', '.join(MULTI_REFERENCE_RULES)}",
                hint=did_you_mean(self.multi_reference, MULTI_REFERENCE_RULES))
        if self.sentence_split not in SENTENCE_SPLITS:
            raise ConfigError(
                f"unknown sentence split {self.sentence_split!r}; choose one of "
                f"{', '.join(SENTENCE_SPLITS)}",
                hint=did_you_mean(self.sentence_split, SENTENCE_SPLITS))

        if self.max_tokens is not None and (
                isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int)
                or self.max_tokens < 1):
            raise ConfigError(f"max_tokens must be a whole number >= 1, not {self.max_tokens!r}")

    def signature_extra(self) -> dict[str, str]:
        """Signature fields of deviations not covered by the tok/stem/case/ref fields.

        Empty for rouge-score's behaviour; ``split:punct`` for punctuation splitting and
        ``maxtok:N`` when texts are cut at N tokens.
        """
        extra = {"split": "punct"} if self.sentence_split == "punctuation" else {}
        if self.max_tokens is not None:
            extra["maxtok"] = str(self.max_tokens)
        return extra

    def output_schema(self) -> pa.Schema:
        """Schema of :attr:`ScoredBatch.table` for this scorer's metrics."""
        fields = [pa.field("n_references", pa.int32())]
        for m in self.metrics:
            fields += [pa.field(f"{m}_{x}", pa.float64()) for x in MEASURES]
            fields += [pa.field(f"{m}_{x}", pa.int64()) for x in STATISTICS]
            fields.append(pa.field(f"{m}_reference_index", pa.int32()))
        return pa.schema(fields)

    def score_batch(
        self,
        predictions: Sequence[str | None] | pa.Array,
        references: Sequence[Sequence[str | None] | None] | pa.Array,
    ) -> ScoredBatch:
        """Score N predictions, each against its list of references.

        Each prediction is tokenized once and each reference once, whatever the number of
        references.

        Args:
            predictions: N texts (a list or an Arrow string array); None scores as empty.
            references: N lists of reference texts (a list of lists or an Arrow
                list<string> array); an empty or null list scores 0 with reference index -1.

        Returns:
            A :class:`ScoredBatch` with N rows in input order. Warns
            :class:`ZeroTokenWarning` once when texts with visible characters yield no token.

        Raises:
            ValueError: predictions and references differ in length.
            TypeError: a bare string where a list of texts belongs (it would otherwise be
                scored character by character).

        """
        if isinstance(predictions, str):
            raise TypeError("predictions must be a list of texts, not a str")
        if self._tokenizer.reads_bytes and self.sentence_split == "newline" \
                and isinstance(predictions, (pa.Array, pa.ChunkedArray)) \
                and isinstance(references, (pa.Array, pa.ChunkedArray)):
            # Arrow in: the texts' UTF-8 bytes go to the tokenizer as they are.
            n_refs, flat = _flatten_references_arrow(references)
            n = len(predictions)
            if len(n_refs) != n:
                raise ValueError(f"{n} predictions but {len(n_refs)} reference lists")
            texts: Sequence[str | None] | pa.Array = pa.concat_arrays(
                [_large_strings(predictions), flat])
            n_flat = len(flat)
            one_line = _count_one_line(texts) if ROUGE_LSUM in self._codes else 0
        else:
            preds = predictions.to_pylist() \
                if isinstance(predictions, (pa.Array, pa.ChunkedArray)) else list(predictions)
            n_refs, flat_refs = _flatten_references(references)
            if len(n_refs) != len(preds):
                raise ValueError(f"{len(preds)} predictions but {len(n_refs)} reference lists")
            n = len(preds)
            n_flat = len(flat_refs)
            texts = preds + flat_refs
            one_line = 0
            if ROUGE_LSUM in self._codes:
                if self.sentence_split == "punctuation":
                    texts = [_SENTENCE_END.sub("\n", t) if t else t for t in texts]
                else:
                    one_line = sum(1 for t in texts
                                   if t and "\n" not in t and _SEVERAL_SENTENCES.search(t))
        if one_line:
            warnings.warn(
                f"{one_line} texts have several sentences but no newline: rougeLsum "
                "splits sentences on '\\n' only, so for them it equals rougeL (put one "
                "sentence per line, or use sentence_split='punctuation')",
                SentenceSplitWarning, stacklevel=2)
        batch = tokenize_batch(texts, tokenizer=self._tokenizer, stemmer=self.stemmer)
        truncated = None
        if self.max_tokens is not None:
            batch, cut = batch.truncated_to(self.max_tokens)
            example_of_text = np.concatenate([np.arange(n), np.repeat(np.arange(n), n_refs)])
            truncated = np.zeros(n, dtype=bool)
            truncated[example_of_text[cut]] = True
        if batch.n_zero_token_texts:
            hint = (" (try tokenizer 'unicode')"
                    if self.tokenizer != "unicode" else "")
            warnings.warn(f"{batch.n_zero_token_texts} non-empty texts produced no tokens "
                          f"with tokenizer {self.tokenizer!r}{hint}", ZeroTokenWarning,
                          stacklevel=2)
        pair_pred = np.repeat(np.arange(n, dtype=np.int64), n_refs)
        pair_ref = np.arange(n, n + n_flat, dtype=np.int64)
        stats = kernel("score_pairs")(batch.tokens, batch.line_offsets, batch.text_line_offsets,
                            pair_pred, pair_ref, self._codes, batch.vocab_size)
        columns = combine_references(stats, n_refs, rule=self.multi_reference)
        arrays = [pa.array(n_refs.astype(np.int32))]
        for k, _ in enumerate(self.metrics):
            arrays += [pa.array(columns[x][:, k]) for x in MEASURES]
            arrays += [pa.array(columns[x][:, k]) for x in STATISTICS]
            arrays.append(pa.array(columns["reference_index"][:, k]))
        return ScoredBatch(pa.Table.from_arrays(arrays, schema=self.output_schema()),
                           batch.n_zero_token_texts, truncated, one_line)


def _large_strings(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    return texts if texts.type == pa.large_string() else pc.cast(texts, pa.large_string())


def _flatten_references_arrow(references: pa.Array | pa.ChunkedArray
                              ) -> tuple[np.ndarray, pa.Array]:
    """References per example (int64) and the reference texts in order (large_string)."""
    if isinstance(references, pa.ChunkedArray):
        references = references.combine_chunks()
    if isinstance(references, pa.StringArray | pa.LargeStringArray):
        raise TypeError("references must be a list array of reference texts per prediction")
    lists = references.fill_null([]) if references.null_count else references
    offsets = np.asarray(lists.offsets, dtype=np.int64)
    return np.diff(offsets), _large_strings(lists.values[offsets[0]:offsets[-1]])


# Python's \s in a str pattern (str.isspace()), spelled out for RE2, whose \s is ASCII only.
_SPACE_CLASS = (r"\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}"
                r"\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}")
_SEVERAL_SENTENCES_RE2 = f"[.!?][{_SPACE_CLASS}]+[^{_SPACE_CLASS}]"


def _count_one_line(texts: pa.Array) -> int:
    """Texts with several sentences but no newline (as ``_SEVERAL_SENTENCES`` on str)."""
    several = pc.and_(pc.match_substring_regex(texts, _SEVERAL_SENTENCES_RE2),
                      pc.invert(pc.match_substring(texts, "\n")))
    return int(pc.sum(pc.fill_null(several, False)).as_py() or 0)


def _flatten_references(references) -> tuple[np.ndarray, list[str | None]]:
    if isinstance(references, pa.ChunkedArray):
        references = references.combine_chunks()
    if isinstance(references, pa.Array):
        lists = references.fill_null([]) if references.null_count else references
        offsets = np.asarray(lists.offsets, dtype=np.int64)
        flat = lists.values[offsets[0]:offsets[-1]].to_pylist()
        return np.diff(offsets), flat
    if isinstance(references, str):
        raise TypeError("references must be a list of reference texts per prediction, not a str")
    for i, r in enumerate(references):
        if isinstance(r, str):
            raise TypeError("references must hold a list of reference texts per prediction; "
                            f"item {i} is a str")
    n_refs = np.fromiter((0 if r is None else len(r) for r in references), dtype=np.int64)
    return n_refs, [t for r in references if r is not None for t in r]


def combine_references(
    stats: np.ndarray, n_refs: np.ndarray, *, rule: str
) -> dict[str, np.ndarray]:
    """Apply a multi-reference rule to per-pair statistics.

    Args:
        stats: int64, shape (P, K, 3): matches, prediction units, reference units per pair and
            metric, pairs grouped by example in order.
        n_refs: int64, shape (N,), references per example, summing to P.
        rule: one of ``MULTI_REFERENCE_RULES`` (see :class:`Scorer`).

    Returns:
        Arrays of shape (N, K): ``precision``, ``recall``, ``fmeasure`` (float64),
        ``matches``, ``prediction_units``, ``reference_units`` (int64) and
        ``reference_index`` (int32). For ``max`` and ``best-recall`` the statistics are the
        chosen reference's; for ``pooled`` and ``mean`` they are sums over references
        (prediction units once per reference) and ``reference_index`` is -1. Examples
        without references score 0 with index -1.

    """
    n = len(n_refs)
    k = stats.shape[1]
    has = n_refs > 0
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(n_refs[:-1], out=starts[1:])
    idx = starts[has]
    out_stats = np.zeros((n, k, 3), dtype=np.int64)
    ref_index = np.full((n, k), -1, dtype=np.int32)
    if len(stats):
        summed = np.add.reduceat(stats, idx, axis=0)
    precision = ratio(stats[..., 0], stats[..., 1])
    recall = ratio(stats[..., 0], stats[..., 2])
    if rule in ("max", "best-recall"):
        key = fmeasure(precision, recall) if rule == "max" else recall
        example_of_pair = np.repeat(np.arange(n), n_refs)
        best = np.maximum.reduceat(key, idx, axis=0) if len(stats) else key[:0]
        best_full = np.zeros((n, k))
        best_full[has] = best
        position = np.arange(len(stats), dtype=np.int64)[:, None]
        candidate = np.where(key == best_full[example_of_pair], position, np.iinfo(np.int64).max)
        chosen = np.minimum.reduceat(candidate, idx, axis=0) if len(stats) else candidate[:0]
        out_stats[has] = stats[chosen, np.arange(k)[None, :]]
        ref_index[has] = (chosen - idx[:, None]).astype(np.int32)
        p = ratio(out_stats[..., 0], out_stats[..., 1])
        r = ratio(out_stats[..., 0], out_stats[..., 2])
        f = fmeasure(p, r)
    elif rule == "pooled":
        if len(stats):
            out_stats[has] = summed
        p = ratio(out_stats[..., 0], out_stats[..., 1])
        r = ratio(out_stats[..., 0], out_stats[..., 2])
        f = fmeasure(p, r)
    elif rule == "mean":
        if len(stats):
            out_stats[has] = summed
        p = np.zeros((n, k))
        r = np.zeros((n, k))
        f = np.zeros((n, k))
        if len(stats):
            denom = n_refs[has][:, None].astype(np.float64)
            p[has] = np.add.reduceat(precision, idx, axis=0) / denom
            r[has] = np.add.reduceat(recall, idx, axis=0) / denom
            f[has] = np.add.reduceat(fmeasure(precision, recall), idx, axis=0) / denom
    else:
        raise ConfigError(f"unknown multi-reference rule {rule!r}")
    return {
        "precision": p, "recall": r, "fmeasure": f,
        "matches": out_stats[..., 0], "prediction_units": out_stats[..., 1],
        "reference_units": out_stats[..., 2], "reference_index": ref_index,
    }


__all__ = ["DEFAULT_METRICS", "METRICS", "MULTI_REFERENCE_RULES", "SENTENCE_SPLITS", "Scorer",
           "ScoredBatch", "SentenceSplitWarning", "TOKENIZERS", "ZeroTokenWarning",
           "combine_references", "fmeasure"]
