"""BLEU as sacrebleu 2.x computes it: the ``bleu`` family.

Per example, sacrebleu's sufficient statistics in its own layout: prediction length,
(closest) reference length, clipped n-gram matches for orders 1..4 and the prediction's
n-gram counts for orders 1..4. With several references an n-gram's clipping count is its
largest count in any one reference, and the reference length is the one closest to the
prediction's length (the shorter on ties). ``bleu_score`` is sacrebleu's ``sentence_bleu``
(effective order, smoothing ``exp`` unless told otherwise); the corpus score is computed
from statistics summed over examples, as ``corpus_bleu`` (no effective order).

Definition: Papineni et al. (2002), "BLEU: a Method for Automatic Evaluation of Machine
Translation"; smoothing: Chen and Cherry (2014), "A Systematic Comparison of Smoothing
Techniques for Sentence-Level BLEU"; code: sacrebleu 2.x ``metrics/bleu.py``
(``compute_bleu``, ``_extract_reference_info``, ``_compute_segment_statistics``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from pipeline.compiled import kernel, lazy_njit
from pipeline.errors import ConfigError, did_you_mean
from pipeline.metrics import floats
from pipeline.metrics.base import DataNote, DataWarning, Family, FamilyScores, MetricSpec, Option
from pipeline.metrics.hashing import (
    clear,
    extend_hash,
    probe,
    start_hash,
    table_mask,
    take_at,
)
from pipeline.tokenizers.sacrebleu import MT_TOKENIZERS, check_tokenizer, tokenize_mt
from pipeline.tokenizers.scripts import count_unsegmented

MAX_ORDER = 4
NAMES = ("bleu",)
# sacrebleu's BLEU.SMOOTH_DEFAULTS: the value a method uses when none is given
SMOOTH_DEFAULTS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}
SMOOTH_METHODS = ("exp", "floor", "add-k", "none")
STATISTICS = (
    ("prediction_tokens", "int64"), ("reference_tokens", "int64"),
    *((f"matches_{n}", "int64") for n in range(1, MAX_ORDER + 1)),
    *((f"prediction_ngrams_{n}", "int64") for n in range(1, MAX_ORDER + 1)),
)
OPTIONS = (
    Option("bleu_tokenize", "13a", "Tokenizer of BLEU, as sacrebleu's: 13a (mteval-v13a, "
           "sacrebleu's default), intl (mteval-v14 international), zh, char, none, ja-mecab "
           "(extra 'bleu-ja') or ko-mecab (extra 'bleu-ko').",
           choices=MT_TOKENIZERS),
    Option("bleu_smooth", "exp", "Smoothing of BLEU, as sacrebleu's: exp (its default), "
           "floor, add-k or none.", choices=SMOOTH_METHODS),
    Option("bleu_smooth_value", None, "The value of BLEU's floor or add-k smoothing; unset: "
           "sacrebleu's defaults (floor 0.1, add-k 1).", minimum=0.0, kind=float),
    Option("bleu_lowercase", False, "Lowercase texts before BLEU's tokenizer (sacrebleu "
           "lowercase=True; signature bleu-case:lc)."),
)
_LOG_ZERO = -9999999999.0  # sacrebleu's my_log(0)


@lazy_njit(cache=True, nogil=True)
def _bleu(stats, smooth, smooth_value, effective_order):
    # sacrebleu's BLEU.compute_bleu on one row [sys_len, ref_len, correct * 4, total * 4],
    # operation for operation. smooth: 0 none, 1 floor, 2 add-k, 3 exp.
    sys_len = stats[0]
    ref_len = stats[1]
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    any_correct = False
    for n in range(MAX_ORDER):
        if stats[2 + n] != 0:
            any_correct = True
    if not any_correct:
        return 0.0
    precisions = np.zeros(MAX_ORDER)
    smooth_mteval = 1.0
    eff_order = MAX_ORDER
    for n in range(1, MAX_ORDER + 1):
        correct = stats[1 + n]
        total = stats[1 + MAX_ORDER + n]
        if smooth == 2 and n > 1:
            correct += smooth_value
            total += smooth_value
        if total == 0:
            break
        if effective_order:
            eff_order = n
        if correct == 0:
            if smooth == 3:
                smooth_mteval *= 2
                precisions[n - 1] = 100.0 / (smooth_mteval * total)
            elif smooth == 1:
                precisions[n - 1] = 100.0 * smooth_value / total
        else:
            precisions[n - 1] = 100.0 * correct / total
    log_sum = 0.0
    for n in range(eff_order):
        log_sum += math.log(precisions[n]) if precisions[n] != 0.0 else _LOG_ZERO
    return bp * math.exp(log_sum / eff_order)


@lazy_njit(cache=True, nogil=True)
def _bleu_rows(stats, smooth, smooth_value, effective_order):
    out = np.empty(stats.shape[0])
    for i in range(stats.shape[0]):
        out[i] = _bleu(stats[i], smooth, smooth_value, effective_order)
    return out


def _smooth(smooth: str, smooth_value: float | None) -> tuple[int, float]:
    if smooth not in SMOOTH_DEFAULTS:
        raise ConfigError(f"unknown BLEU smoothing {smooth!r}; choose from "
                          f"{', '.join(SMOOTH_METHODS)}", hint=did_you_mean(smooth, SMOOTH_METHODS))
    value = SMOOTH_DEFAULTS[smooth] if smooth_value is None else smooth_value
    return ("none", "floor", "add-k", "exp").index(smooth), float(value or 0.0)


def bleu_from_statistics(stats: np.ndarray, *, smooth: str = "exp",
                         smooth_value: float | None = None,
                         effective_order: bool = False) -> np.ndarray:
    """BLEU of each row of sufficient statistics, as sacrebleu's ``BLEU.compute_bleu``.

    Args:
        stats: shape (R, 10) in sacrebleu's layout (:data:`STATISTICS`): prediction length,
            reference length, matches of orders 1..4, prediction n-grams of orders 1..4;
            integers, or their float64 sums.
        smooth: ``exp`` (NIST geometric decay), ``floor``, ``add-k`` or ``none``.
        smooth_value: the value of ``floor`` / ``add-k``; None: sacrebleu's default
            (:data:`SMOOTH_DEFAULTS`).
        effective_order: True for sentence BLEU (orders without any prediction n-gram are
            left out of the geometric mean), False for corpus BLEU.

    Returns:
        float64 (R,), BLEU in [0, 100].

    Raises:
        ConfigError: an unknown smoothing method.

    """
    method, value = _smooth(smooth, smooth_value)
    rows = np.ascontiguousarray(np.asarray(stats, dtype=np.float64).reshape(-1, len(STATISTICS)))
    return kernel("bleu_rows")(rows, method, value, effective_order)


def corpus_bleu_score(stats: np.ndarray, *, smooth: str = "exp",
                      smooth_value: float | None = None) -> np.ndarray:
    """Corpus BLEU from statistics summed over examples: sacrebleu's ``corpus_bleu``.

    Args:
        stats: float64 (R, 10), each row a sum of per-example statistics (see
            :func:`bleu_from_statistics`).
        smooth: the smoothing method (``exp`` is ``corpus_bleu``'s default).
        smooth_value: the value of ``floor`` / ``add-k`` (None: sacrebleu's default).

    Returns:
        float64 (R,), corpus BLEU in [0, 100].

    """
    return bleu_from_statistics(stats, smooth=smooth, smooth_value=smooth_value,
                                effective_order=False)


# sacrebleu's BLEUScore fields beside the score, as aggregate.parquet columns (bleu_...)
BREAKDOWN = (
    *((f"precision_{n}", "float64") for n in range(1, MAX_ORDER + 1)),
    ("bp", "float64"), ("ratio", "float64"), ("sys_len", "int64"), ("ref_len", "int64"),
)


def bleu_breakdown(stats: np.ndarray, *, smooth: str = "exp",
                   smooth_value: float | None = None) -> dict[str, np.ndarray]:
    """Corpus BLEU's breakdown from summed statistics, as sacrebleu's ``BLEUScore`` has it.

    The n-gram precisions (smoothed as the score is: sacrebleu's ``compute_bleu`` with
    ``effective_order=False``, so all zero when nothing matches), the brevity penalty, the
    length ratio ``sys_len / ref_len`` (0 without reference tokens) and the two lengths:
    sacrebleu 2.x ``BLEUScore.precisions``, ``.bp``, ``.ratio``, ``.sys_len``, ``.ref_len``.

    Args:
        stats: float64 (R, 10), each row a sum of per-example statistics (see
            :func:`bleu_from_statistics`).
        smooth: the smoothing method, as for the score.
        smooth_value: the value of ``floor`` / ``add-k`` (None: sacrebleu's default).

    Returns:
        Arrays of length R keyed as :data:`BREAKDOWN`: ``precision_1`` .. ``precision_4``
        in [0, 100] (float64), ``bp`` in [0, 1], ``ratio`` >= 0 (float64), ``sys_len``
        and ``ref_len`` in tokens (int64).

    Raises:
        ConfigError: an unknown smoothing method.

    """
    method, value = _smooth(smooth, smooth_value)
    rows = np.asarray(stats, dtype=np.float64).reshape(-1, len(STATISTICS))
    sys_len, ref_len = rows[:, 0], rows[:, 1]
    correct = rows[:, 2:2 + MAX_ORDER].copy()
    total = rows[:, 2 + MAX_ORDER:].copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        short = (sys_len < ref_len) & (sys_len > 0)
        bp = np.where(sys_len < ref_len, 0.0, 1.0)
        # the C library's exp, as sacrebleu's math.exp, the same on every CPU (see floats)
        bp[short] = floats.exp(1 - ref_len[short] / sys_len[short])
        ratio = np.where(ref_len > 0, sys_len / np.where(ref_len > 0, ref_len, 1.0), 0.0)
        precisions = np.zeros_like(correct)
        mteval = np.ones(len(rows))  # sacrebleu's smooth_mteval, per row
        alive = (correct != 0).any(axis=1)  # no match at all: every precision stays 0
        for n in range(MAX_ORDER):
            if method == 2 and n > 0:  # add-k
                correct[:, n] += value
                total[:, n] += value
            alive &= total[:, n] != 0  # sacrebleu stops at the first order without n-grams
            zero = alive & (correct[:, n] == 0)
            if method == 3:  # exp
                mteval[zero] *= 2
                precisions[zero, n] = 100.0 / (mteval[zero] * total[zero, n])
            elif method == 1:  # floor
                precisions[zero, n] = 100.0 * value / total[zero, n]
            hit = alive & (correct[:, n] != 0)
            precisions[hit, n] = 100.0 * correct[hit, n] / total[hit, n]
    out = {f"precision_{n + 1}": precisions[:, n] for n in range(MAX_ORDER)}
    out.update(bp=bp, ratio=ratio, sys_len=sys_len.astype(np.int64),
               ref_len=ref_len.astype(np.int64))
    return out


def verbose_breakdown(parts: Mapping[str, Any]) -> str:
    """The breakdown in one line, as sacrebleu's ``BLEUScore`` prints it after the score.

    Args:
        parts: one value per name of :data:`BREAKDOWN` (one scope's).

    Returns:
        e.g. ``45.1/17.2/7.5/3.1 (BP = 0.981 ratio = 0.981 hyp_len = 1234 ref_len = 1258)``
        (sacrebleu 2.x ``BLEUScore._verbose``).

    """
    precisions = "/".join(f"{parts[f'precision_{n}']:.1f}" for n in range(1, MAX_ORDER + 1))
    return (f"{precisions} (BP = {parts['bp']:.3f} ratio = {parts['ratio']:.3f} "
            f"hyp_len = {int(parts['sys_len']):d} ref_len = {int(parts['ref_len']):d})")


@lazy_njit(cache=True, nogil=True)
def _segment_statistics(ids, offsets, n_predictions, ref_offsets):
    # texts 0..N-1 are the predictions, N + ref_offsets[i] .. N + ref_offsets[i+1] - 1 the
    # references of example i. Per example one table of the references' n-grams: each
    # entry keeps its count in the current reference and its largest count in any.
    out = np.zeros((n_predictions, 2 + 2 * MAX_ORDER), np.int64)
    most = 0
    for i in range(n_predictions):
        n_entries = 0
        for r in range(n_predictions + ref_offsets[i], n_predictions + ref_offsets[i + 1]):
            n_entries += max(offsets[r + 1] - offsets[r], 0) * MAX_ORDER
        most = max(most, n_entries)
    size = table_mask(most) + 1
    slot_pos = np.full(size, -1, np.int64)
    slot_order = np.zeros(size, np.int32)
    slot_clip = np.zeros(size, np.int32)
    slot_count = np.zeros(size, np.int32)
    slot_ref = np.zeros(size, np.int64)
    used = np.empty(most + 1, np.int64)
    for i in range(n_predictions):
        hyp_lo = offsets[i]
        hyp_len = offsets[i + 1] - hyp_lo
        n_entries = 0
        for r in range(n_predictions + ref_offsets[i], n_predictions + ref_offsets[i + 1]):
            for n in range(MAX_ORDER):
                n_entries += max(offsets[r + 1] - offsets[r] - n, 0)
        mask = table_mask(n_entries)
        n_used = 0
        closest_diff = -1
        closest_len = 0
        for r in range(n_predictions + ref_offsets[i], n_predictions + ref_offsets[i + 1]):
            lo = offsets[r]
            ref_len = offsets[r + 1] - lo
            diff = abs(hyp_len - ref_len)
            if closest_diff == -1 or diff < closest_diff:
                closest_diff = diff
                closest_len = ref_len
            elif diff == closest_diff and ref_len < closest_len:
                closest_len = ref_len
            for p in range(lo, lo + ref_len):
                h = start_hash()
                for n in range(min(MAX_ORDER, lo + ref_len - p)):
                    h = extend_hash(h, ids[p + n])
                    s = probe(ids, p, n, h, slot_pos, slot_order, mask)
                    if slot_pos[s] == -1:
                        slot_pos[s] = p
                        slot_order[s] = n
                        slot_clip[s] = 0
                        slot_ref[s] = -1
                        used[n_used] = s
                        n_used += 1
                    if slot_ref[s] != r:
                        slot_ref[s] = r
                        slot_count[s] = 0
                    slot_count[s] += 1
                    if slot_count[s] > slot_clip[s]:
                        slot_clip[s] = slot_count[s]
        out[i, 0] = hyp_len
        out[i, 1] = closest_len
        for p in range(hyp_lo, hyp_lo + hyp_len):
            h = start_hash()
            for n in range(min(MAX_ORDER, hyp_lo + hyp_len - p)):
                h = extend_hash(h, ids[p + n])
                out[i, 2 + n] += take_at(slot_pos, slot_clip,
                                         probe(ids, p, n, h, slot_pos, slot_order, mask))
        for n in range(MAX_ORDER):
            out[i, 2 + MAX_ORDER + n] = max(hyp_len - n, 0)
        clear(slot_pos, used, n_used)
    return out


def _prepare(texts: Sequence[str | None], lowercase: bool) -> list[str]:
    # sacrebleu's BLEU._preprocess_segment before the tokenizer: lower(), then rstrip()
    if lowercase:
        return [(t or "").lower().rstrip() for t in texts]
    return [(t or "").rstrip() for t in texts]


def bleu_statistics(predictions: Sequence[str | None],
                    references: Sequence[Sequence[str | None]], *, tokenize: str = "13a",
                    lowercase: bool = False) -> np.ndarray:
    """Per-example BLEU sufficient statistics, as sacrebleu's ``_extract_corpus_statistics``.

    Args:
        predictions: N texts (None is empty).
        references: N lists of reference texts; None entries are dropped (sacrebleu's
            variable number of references); a list with none left has no reference
            (reference length 0, nothing matches).
        tokenize: ``13a`` (default), ``intl``, ``zh``, ``char``, ``none``, ``ja-mecab`` or
            ``ko-mecab``.
        lowercase: lowercase every text first (sacrebleu ``lowercase=True``).

    Returns:
        int64 (N, 10) in :data:`STATISTICS` order.

    Raises:
        ConfigError: an unknown tokenizer; a MeCab tokenizer whose extra is missing.

    Raises nothing else: any text is valid input.

    """
    check_tokenizer(tokenize)
    if len(references) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} reference lists")
    refs = [[r for r in rs if r is not None] for rs in references]
    ref_offsets = np.zeros(len(refs) + 1, np.int64)
    np.cumsum([len(rs) for rs in refs], out=ref_offsets[1:])
    texts = _prepare(predictions, lowercase) + _prepare([r for rs in refs for r in rs],
                                                        lowercase)
    batch = tokenize_mt(texts, tokenizer=tokenize)
    return kernel("bleu_statistics")(batch.ids, batch.offsets, len(predictions), ref_offsets)


def sentence_bleu_scores(predictions: Sequence[str | None],
                         references: Sequence[Sequence[str | None]], *, tokenize: str = "13a",
                         smooth: str = "exp", smooth_value: float | None = None,
                         lowercase: bool = False) -> np.ndarray:
    """Sacrebleu's ``sentence_bleu`` for each example (see :func:`bleu_statistics`).

    Returns:
        float64 (N,), BLEU in [0, 100].

    Raises:
        ConfigError: an unknown tokenizer or smoothing method.

    """
    stats = bleu_statistics(predictions, references, tokenize=tokenize, lowercase=lowercase)
    return bleu_from_statistics(stats, smooth=smooth, smooth_value=smooth_value,
                                effective_order=True)


@dataclass(frozen=True)
class _UnsegmentedNote(DataNote):
    """The unsegmented-text note, its advice leaving out the tokenizer in use."""

    def text(self, n: int, config: Mapping[str, Any]) -> str:
        """The note for ``n`` texts, advising only tokenizers other than ``bleu_tokenize``."""
        return super().text(n, {**config, "advice": unsegmented_advice(
            str(config.get("bleu_tokenize", "")))})


def unsegmented_advice(tokenize: str) -> str:
    """The tokenizers to advise for texts that BLEU tokenizer ``tokenize`` leaves unsplit.

    ``zh`` splits Han (so the texts left are kana, Thai...), ``ja-mecab`` segments Japanese
    (Han and kana): neither is advised when it is the one in use.
    """
    if tokenize == "zh":
        return "--bleu-tokenize ja-mecab for Japanese, char for the others"
    if tokenize == "ja-mecab":
        return "--bleu-tokenize char for them"
    return "--bleu-tokenize zh for Chinese, ja-mecab for Japanese, char for the others"


NOTES = (
    _UnsegmentedNote("bleu_unsegmented_texts", "{n} texts are in a script written without "
                     "spaces (Chinese, Japanese, Thai...) that BLEU tokenizer {bleu_tokenize} "
                     "does not split: each run of it is one word, so BLEU is near 0 "
                     "({advice})",
                     "{n} text is in a script written without spaces (Chinese, Japanese, "
                     "Thai...) that BLEU tokenizer {bleu_tokenize} does not split: each run of "
                     "it is one word, so BLEU is near 0 ({advice})",
                     loud=True, omit_zero=True),
)


class UnsegmentedTextWarning(DataWarning):
    """Texts in a script written without spaces that the BLEU tokenizer does not split."""


class BleuFamily(Family):
    """The ``bleu`` family; its options are :data:`OPTIONS` (``bleu_tokenize``...)."""

    name = "bleu"
    # its explanation, imported on first use (the explainer imports this module)
    explainer = "pipeline.metrics.bleu_explain:explain_bleu"
    names = NAMES
    options = OPTIONS
    notes = NOTES

    def _options(self, options: Mapping[str, Any]) -> tuple[str, str, float | None, bool]:
        tokenize = str(self.option(options, "bleu_tokenize"))
        if tokenize not in MT_TOKENIZERS:
            check_tokenizer(tokenize)
        if tokenize.endswith("-mecab"):  # fail early, in one line naming the extra
            from pipeline.tokenizers.mecab import check_installed

            check_installed(tokenize)
        smooth = str(self.option(options, "bleu_smooth"))
        smooth_value = self.option(options, "bleu_smooth_value")
        _smooth(smooth, smooth_value)
        return tokenize, smooth, smooth_value, bool(self.option(options, "bleu_lowercase"))

    def spec(self, metric: str, options: Mapping[str, Any]) -> MetricSpec:
        """The spec of ``bleu``: measure ``score`` (0-100), sacrebleu's statistics.

        Raises:
            ConfigError: an unknown tokenizer or smoothing method.

        """
        _, smooth, smooth_value, _ = self._options(options)
        return MetricSpec(
            name=metric, family=self.name, measures=("score",), primary="score",
            statistics=STATISTICS, reference_rule="sacrebleu", has_reference_index=False,
            corpus=partial(corpus_bleu_score, smooth=smooth, smooth_value=smooth_value),
            scale=100.0,
            breakdown=partial(bleu_breakdown, smooth=smooth, smooth_value=smooth_value),
            breakdown_columns=BREAKDOWN, breakdown_text=verbose_breakdown,
            corpus_sized=True)

    def signature_fields(self, options: Mapping[str, Any]) -> dict[str, str]:
        """Sacrebleu's BLEU signature fields: ``bleu-tok``, ``bleu-smooth``, ``bleu-case``.

        A MeCab tokenizer is named as sacrebleu names it, with its dictionary's version
        (``ja-mecab-0.996-IPA-ipadic-1.0.0``).
        """
        tokenize, smooth, smooth_value, lowercase = self._options(options)
        value = SMOOTH_DEFAULTS[smooth] if smooth_value is None else smooth_value
        smooth_text = smooth if value is None else f"{smooth}[{value:.2f}]"
        tok_text = tokenize
        if tokenize.endswith("-mecab"):
            from pipeline.tokenizers.mecab import signature_name

            tok_text = signature_name(tokenize)
        return {"bleu-tok": tok_text, "bleu-smooth": smooth_text,
                "bleu-case": "lc" if lowercase else "mixed"}

    def score(self, predictions: Sequence[str | None],
              references: Sequence[Sequence[str | None]], metrics: Sequence[str],
              options: Mapping[str, Any]) -> FamilyScores:
        """``bleu_score`` (sacrebleu's ``sentence_bleu``) and the statistics columns.

        Raises:
            ConfigError: an unknown tokenizer or smoothing method.

        """
        tokenize, smooth, smooth_value, lowercase = self._options(options)
        stats = bleu_statistics(predictions, references, tokenize=tokenize,
                                lowercase=lowercase)
        columns = {"bleu_score": bleu_from_statistics(stats, smooth=smooth,
                                                      smooth_value=smooth_value,
                                                      effective_order=True),
                   **self.statistic_columns("bleu", STATISTICS, stats)}
        unsegmented = 0 if tokenize == "char" else count_unsegmented(
            [*predictions, *(t for r in references for t in r)], han_split=tokenize == "zh",
            japanese_split=tokenize == "ja-mecab")
        if unsegmented:
            warnings.warn(NOTES[0].text(unsegmented, {"bleu_tokenize": tokenize}),
                          UnsegmentedTextWarning, stacklevel=3)
        return FamilyScores(self.columns_of(columns, metrics),
                            counts={"bleu_unsegmented_texts": unsegmented})


FAMILY = BleuFamily()

__all__ = ["BREAKDOWN", "FAMILY", "MAX_ORDER", "NAMES", "OPTIONS", "SMOOTH_DEFAULTS",
           "SMOOTH_METHODS", "STATISTICS", "BleuFamily", "bleu_breakdown",
           "bleu_from_statistics", "bleu_statistics", "corpus_bleu_score",
           "sentence_bleu_scores", "verbose_breakdown"]
