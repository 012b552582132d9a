"""ROUGE-1.5.5 without Perl: the ``rouge155`` family and the script's flags.

Reproduces the per-example recall, precision and F of ``ROUGE-1.5.5.pl`` (Lin 2004; the
script's version 1.5.5) for ROUGE-N, ROUGE-L, ROUGE-W, ROUGE-S and ROUGE-SU, with its text
handling (:mod:`pipeline.tokenizers.rouge155`), its ``-m`` stemmer, ``-s`` stopwords, ``-l``/``-b``
length limits, ``-p`` F weighting and ``-f A``/``-f B`` reference rules. Metric names:

=============  ==================  ====================================================
ours           the script's        what
=============  ==================  ====================================================
``rougeN``     ``ROUGE-N``         clipped n-gram matches (N in 1..9)
``rougeLsum``  ``ROUGE-L``         summary-level union LCS over the lines
``rougeWsum``  ``ROUGE-W-1.2``     the same with the weighted LCS (weight option)
``rougeS4``    ``ROUGE-S4``        skip bigrams with at most 4 tokens between (any k)
``rougeSU4``   ``ROUGE-SU4``       the same plus unigrams
``rougeS``     ``ROUGE-S*``        skip bigrams without a gap limit
``rougeSU``    ``ROUGE-SU*``       the same plus unigrams
=============  ==================  ====================================================

Per (prediction, reference) pair the kernels give ``hit``, reference units and prediction
units (:mod:`pipeline.metrics.rouge155.skipgram`, :mod:`pipeline.metrics.rouge155.wlcs`, and
the n-gram kernel of :mod:`pipeline.metrics.rouge.pairs`); the reference rule pools or
picks pairs; then ``R = hit / reference units`` and ``P = hit / prediction units`` (ROUGE-W:
``(hit / units) ** (1 / weight)``, its units being ``(sum of f(sentence length)) ** weight``
for the reference and ``(tokens) ** weight`` for the prediction, as the script raises them
twice), and ``F = P R / ((1 - alpha) P + alpha R)`` (0 when that is 0).

The script prints each value rounded to 5 decimals and computes F from the rounded P and R;
these are the unrounded values (they differ from its printout by less than 5e-5 for alpha in
[0.2, 0.8]). Its ``-f B`` picks, per metric, the first reference with the highest score, the
score being recall rounded to 5 decimals for ROUGE-N/S/SU, and the unrounded recall for
ROUGE-L/W (for ROUGE-W computed with single-weighted units); that rule is kept exactly.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from pipeline.compiled import kernel
from pipeline.errors import ConfigError, did_you_mean
from pipeline.metrics import floats, multi_reference
from pipeline.metrics.base import Family, FamilyScores, MetricSpec, Option, Preset
from pipeline.tokenizers.rouge155 import TextOptions, tokenize_rouge155

NAMES = ("rouge1", "rouge2", "rouge3", "rouge4", "rougeLsum", "rougeWsum", "rougeS4",
         "rougeSU4", "rougeS", "rougeSU")
_NAME = re.compile(r"rouge([1-9])|rougeLsum|rougeWsum|rouge(SU|S)([0-9]*)")
# Names only this family serves (rougeN and rougeLsum are the rouge family's unless the
# tokenizer is rouge155).
_OWN_NAME = re.compile(r"rougeWsum|rouge(SU|S)[0-9]*")
STEMMERS = ("none", "porter-rouge155")
STOPWORDS = ("none", "smart")
MULTI_REFERENCE_RULES = ("pooled", "best-recall", "max", "mean")  # multi_reference.RULES
MEASURES = ("precision", "recall", "fmeasure")
DEFAULT_WLCS_WEIGHT = 1.2
DEFAULT_ALPHA = 0.5
# ROUGE-W's weight range. Below 1, k ** weight is subadditive: a sentence's weighted
# matches can exceed its weighted length and recall exceeds 1 (weight 0.5 gave 4.04).
# Above 5 a text's weighted units, (tokens ** weight) ** weight, may leave float64: at 5
# they stay below 1e308 for texts up to 2**31 tokens (2 ** (31 * 25) ~ 1e233).
WLCS_WEIGHT_RANGE = (1.0, 5.0)


@dataclass(frozen=True)
class Rouge155Options:
    """The script's options, as config keys (flag in brackets).

    Attributes:
        stemmer: ``none`` or ``porter-rouge155`` (``-m``: WordNet 2.0 exception list, then
            the script's Porter stemmer, on tokens longer than 3 characters).
        stopwords: ``none`` or ``smart`` (``-s``: drop the SMART common words).
        limit_words: keep only the first N words of each text (``-l N``); 0: no limit.
        limit_bytes: keep only the first N bytes of each text (``-b N``); 0: no limit.
        alpha: F-measure weight (``-p``), in [0, 1]: F = 1 / (alpha / P + (1 - alpha) / R).
        wlcs_weight: ROUGE-W's weight (``-w``), in [1, 5] (:data:`WLCS_WEIGHT_RANGE`): a run
            of k matches weighs k ** weight.
        multi_reference: ``pooled`` (``-f A``, the script's default), ``best-recall``
            (``-f B``), ``max`` (highest F, first on ties) or ``mean``.

    Raises:
        ConfigError: a value out of range (named by its key).

    """

    stemmer: str = "none"
    stopwords: str = "none"
    limit_words: int = 0
    limit_bytes: int = 0
    alpha: float = DEFAULT_ALPHA
    wlcs_weight: float = DEFAULT_WLCS_WEIGHT
    multi_reference: str = "pooled"

    def __post_init__(self) -> None:
        for key, value, choices in (("stemmer", self.stemmer, STEMMERS),
                                    ("stopwords", self.stopwords, STOPWORDS),
                                    ("multi_reference", self.multi_reference,
                                     MULTI_REFERENCE_RULES)):
            if value not in choices:
                raise ConfigError(f"{key}: unknown value {value!r} for the rouge155 metrics; "
                                  f"choose one of {', '.join(choices)}",
                                  hint=did_you_mean(str(value), choices))
        for key, number in (("limit_words", self.limit_words),
                            ("limit_bytes", self.limit_bytes)):
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                raise ConfigError(f"{key} must be a whole number >= 0, not {number!r}")
        if self.limit_words and self.limit_bytes:
            raise ConfigError("limit_words and limit_bytes cannot both be set (the script "
                              "refuses -l with -b)")
        if not 0.0 <= float(self.alpha) <= 1.0:
            raise ConfigError(f"alpha must be in [0, 1], not {self.alpha!r}")
        low, high = WLCS_WEIGHT_RANGE
        try:
            weight = float(self.wlcs_weight)
        except (TypeError, ValueError):
            weight = float("nan")
        if not low <= weight <= high:
            raise ConfigError(f"wlcs_weight (the script's -w) must be a number in [{low:g}, "
                              f"{high:g}], not {self.wlcs_weight!r}: below 1 recall exceeds 1, "
                              "above 5 the weighted units of a long text leave float64")

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> Rouge155Options:
        """The options from the flat scoring options (keys absent take their defaults)."""
        keys = cls.__dataclass_fields__
        values = {k: options[k] for k in keys if k in options and options[k] is not None}
        if values.get("stemmer") == "porter":
            raise ConfigError("stemmer 'porter' is rouge-score's; the rouge155 metrics take "
                              "'porter-rouge155' (the script's -m)")
        return cls(**values)

    @property
    def text(self) -> TextOptions:
        """The text handling these options ask for."""
        return TextOptions(remove_stopwords=self.stopwords == "smart",
                           stem=self.stemmer == "porter-rouge155",
                           max_words=self.limit_words, max_bytes=self.limit_bytes)

    def signature_fields(self) -> dict[str, str]:
        """Signature fields: ``tok:rouge155``, ``stem``, ``ref``, ``wlcs`` (the weight).

        Also ``stop``, ``lw``, ``lb`` and ``alpha`` when they differ from the script's defaults.
        """
        fields = {"tok": "rouge155", "stem": self.stemmer, "ref": self.multi_reference,
                  "wlcs": f"{self.wlcs_weight:g}"}
        if self.stopwords != "none":
            fields["stop"] = self.stopwords
        if self.limit_words:
            fields["lw"] = str(self.limit_words)
        if self.limit_bytes:
            fields["lb"] = str(self.limit_bytes)
        if self.alpha != DEFAULT_ALPHA:
            fields["alpha"] = f"{self.alpha:g}"
        return fields


@dataclass(frozen=True)
class _Kind:
    """What a metric name asks the kernels for."""

    kind: str  # "N", "L", "W" or "S"
    n: int = 0  # n-gram order
    max_gap: int = -1  # skip bigrams: most tokens between; -1: no limit
    unigrams: bool = False  # ROUGE-SU


def _kind(metric: str) -> _Kind:
    match = _NAME.fullmatch(metric)
    if not match:
        raise ConfigError(f"unknown rouge155 metric {metric!r}; choose from rouge1..rouge9, "
                          "rougeLsum, rougeWsum, rougeS{k}, rougeSU{k}, rougeS, rougeSU",
                          hint=did_you_mean(metric, NAMES))
    if match.group(1):
        return _Kind("N", n=int(match.group(1)))
    if metric == "rougeLsum":
        return _Kind("L")
    if metric == "rougeWsum":
        return _Kind("W")
    gap = match.group(3)
    return _Kind("S", max_gap=int(gap) if gap else -1, unigrams=match.group(2) == "SU")


def _round5(values: np.ndarray) -> np.ndarray:
    """Values as the script's ``sprintf("%7.5f")`` leaves them (exact decimal rounding)."""
    return np.array([float(f"{v:.5f}") for v in values.tolist()], dtype=np.float64)


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(np.broadcast(num, den).shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def f_alpha(precision: np.ndarray, recall: np.ndarray, alpha: float) -> np.ndarray:
    """The script's F: ``P R / ((1 - alpha) P + alpha R)``, 0 where that denominator is 0.

    Equals ``1 / (alpha / P + (1 - alpha) / R)`` (van Rijsbergen's weighted harmonic mean);
    alpha = 0.5 is the usual F1.

    Args:
        precision: float64 array in [0, 1].
        recall: float64 array of the same shape, in [0, 1].
        alpha: weight of precision, in [0, 1].

    """
    return _safe_ratio(precision * recall, (1 - alpha) * precision + alpha * recall)


@dataclass(frozen=True)
class _Batch:
    """Both readings of every text of a batch as token ids (texts: predictions, then refs)."""

    clip_tokens: np.ndarray  # int32, n-gram reading
    clip_offsets: np.ndarray  # int64 (T + 1,)
    lcs_tokens: np.ndarray  # int32, LCS reading
    line_offsets: np.ndarray  # int64 (L + 1,)
    text_line_offsets: np.ndarray  # int64 (T + 1,)
    vocab_size: int
    max_line: int


def _tokenize(texts: Sequence[str | None], text: TextOptions) -> _Batch:
    tokens: list[str] = []  # the n-gram reading of every text, then (under -b) the LCS one
    text_sizes: list[int] = []
    line_sizes: list[int] = []
    lines_per_text: list[int] = []
    lcs_tokens: list[str] = []
    done: dict[str | None, tuple[list[str], list[list[str]]]] = {}  # references repeat
    for t in texts:
        if t not in done:
            done[t] = tokenize_rouge155(t, text)
        clip, sentences = done[t]
        tokens += clip
        text_sizes.append(len(clip))
        line_sizes += [len(s) for s in sentences]
        lines_per_text.append(len(sentences))
        if text.max_bytes:
            lcs_tokens += [tok for s in sentences for tok in s]
    n_clip = len(tokens)
    encoded = pa.array(tokens + lcs_tokens, pa.string()).dictionary_encode()
    ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
    clip_ids = ids[:n_clip]
    lcs_ids = ids[n_clip:] if text.max_bytes else clip_ids
    return _Batch(clip_ids, _offsets(text_sizes), lcs_ids, _offsets(line_sizes),
                  _offsets(lines_per_text), max(len(encoded.dictionary), 1),
                  max(line_sizes, default=0))


def _offsets(sizes: list[int]) -> np.ndarray:
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


def _kernel_gap(max_gap: int, batch: _Batch) -> int:
    """The skip-bigram gap to hand the kernel: -1 (no limit) for any gap that allows all.

    In a text of n tokens the most tokens between the two of a skip bigram is n - 2, so a
    gap of at least the batch's longest text length minus 2 counts every pair, as no limit
    does; the script compares the gap as a number, so a larger gap is the same there. A gap
    of any size is accepted (``rougeS99999999999999999999`` is rougeS's values under its
    own name), and the kernel, whose gap is an int64, never sees one past its longest text.
    """
    longest = int(np.diff(batch.clip_offsets).max(initial=0))
    return -1 if max_gap < 0 or max_gap >= longest - 2 else max_gap


def _pair_statistics(batch: _Batch, pair_pred: np.ndarray, pair_ref: np.ndarray,
                    kinds: Sequence[_Kind], options: Rouge155Options) -> np.ndarray:
    """Per pair and metric: hit, reference units, prediction units, and the ``-f B`` score.

    Returns:
        float64, shape (P, K, 4).

    """
    score_pairs = kernel("score_pairs")
    skip_bigram_pairs = kernel("skip_bigram_pairs")
    summary_lcs_pairs = kernel("summary_lcs_pairs")
    out = np.zeros((len(pair_pred), len(kinds), 4), dtype=np.float64)
    clip_lines = np.arange(len(batch.clip_offsets), dtype=np.int64)
    weight = float(options.wlcs_weight)
    best = options.multi_reference == "best-recall"  # only then is the -f B score needed
    for k, kind in enumerate(kinds):
        if kind.kind == "N":
            stats = score_pairs(batch.clip_tokens, batch.clip_offsets, clip_lines, pair_pred,
                                pair_ref, np.array([kind.n], dtype=np.int64),
                                batch.vocab_size)[:, 0, :].astype(np.float64)
            hit, pred_units, ref_units = stats[:, 0], stats[:, 1], stats[:, 2]
            pick = _round5(_safe_ratio(hit, ref_units)) if best else hit
        elif kind.kind == "S":
            stats = skip_bigram_pairs(batch.clip_tokens, batch.clip_offsets, pair_pred,
                                      pair_ref, _kernel_gap(kind.max_gap, batch),
                                      kind.unigrams, batch.vocab_size).astype(np.float64)
            hit, pred_units, ref_units = stats[:, 0], stats[:, 1], stats[:, 2]
            pick = _round5(_safe_ratio(hit, ref_units)) if best else hit
        else:
            weighted = kind.kind == "W"
            pw = np.array([float(i) ** weight for i in range(batch.max_line + 2)])
            lcs = summary_lcs_pairs(batch.lcs_tokens, batch.line_offsets,
                                    batch.text_line_offsets, batch.clip_tokens,
                                    batch.clip_offsets, pair_pred, pair_ref, weighted, pw,
                                    batch.vocab_size)
            hit, base = lcs[:, 0], lcs[:, 1]
            pred_tokens = np.diff(batch.clip_offsets)[pair_pred].astype(np.float64)
            pick = _safe_ratio(hit, base)
            if weighted:
                pick = floats.power(pick, 1 / weight)
                ref_units = floats.power(base, weight)
                pred_units = floats.power(pred_tokens, weight)
            else:
                ref_units, pred_units = base, pred_tokens
        out[:, k, 0] = hit
        out[:, k, 1] = ref_units
        out[:, k, 2] = pred_units
        out[:, k, 3] = pick
    return out


def _measures(hit: np.ndarray, ref_units: np.ndarray, pred_units: np.ndarray, kind: _Kind,
              options: Rouge155Options) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    recall = _safe_ratio(hit, ref_units)
    precision = _safe_ratio(hit, pred_units)
    if kind.kind == "W":
        recall = floats.power(recall, 1 / options.wlcs_weight)
        precision = floats.power(precision, 1 / options.wlcs_weight)
    return precision, recall, f_alpha(precision, recall, float(options.alpha))


def score_rouge155(predictions: Sequence[str | None],
                   references: Sequence[Sequence[str | None]], metrics: Sequence[str],
                   options: Rouge155Options) -> dict[str, np.ndarray]:
    """Score N examples as ROUGE-1.5.5 does (see the module docstring).

    Each text is read and tokenized once for all ``metrics``.

    Args:
        predictions: N texts, one sentence per line (None scores as empty).
        references: N lists of reference texts (an empty list scores 0, reference index -1).
        metrics: names among rouge1..rouge9, rougeLsum, rougeWsum, rougeS{k}, rougeSU{k},
            rougeS, rougeSU.
        options: the script's options.

    Returns:
        Per metric, arrays of length N: ``{m}_precision``, ``{m}_recall``, ``{m}_fmeasure``
        (float64 in [0, 1]), ``{m}_matches``, ``{m}_reference_units``,
        ``{m}_prediction_units`` (int64; float64 for rougeWsum, whose units are weighted)
        and ``{m}_reference_index`` (int32: the reference used, -1 when pooled or none).

    Raises:
        ConfigError: an unknown metric name.
        ValueError: predictions and references differ in length.

    """
    kinds = [_kind(m) for m in metrics]
    n = len(predictions)
    if len(references) != n:
        raise ValueError(f"{n} predictions but {len(references)} reference lists")
    n_refs = np.fromiter((len(r) for r in references), dtype=np.int64, count=n)
    texts = list(predictions) + [t for r in references for t in r]
    batch = _tokenize(texts, options.text)
    pair_pred = np.repeat(np.arange(n, dtype=np.int64), n_refs)
    pair_ref = np.arange(n, len(texts), dtype=np.int64)
    stats = _pair_statistics(batch, pair_pred, pair_ref, kinds, options)

    def measures(st: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # st (..., K, 4): hit, reference units, prediction units, -f B score
        out = [np.zeros(st.shape[:-1]) for _ in range(3)]
        for k, kind in enumerate(kinds):
            values = _measures(st[..., k, 0], st[..., k, 1], st[..., k, 2], kind, options)
            for arr, v in zip(out, values, strict=True):
                arr[..., k] = v
        return out[0], out[1], out[2]

    combined = multi_reference.combine_references(
        stats, n_refs, rule=options.multi_reference, measures=measures,
        recall_key=stats[..., 3])
    chosen = combined["stats"]
    columns: dict[str, np.ndarray] = {}
    for k, (metric, kind) in enumerate(zip(metrics, kinds, strict=True)):
        stat_type = np.float64 if kind.kind == "W" else np.int64
        columns[f"{metric}_precision"] = combined["precision"][:, k]
        columns[f"{metric}_recall"] = combined["recall"][:, k]
        columns[f"{metric}_fmeasure"] = combined["fmeasure"][:, k]
        columns[f"{metric}_matches"] = chosen[:, k, 0].astype(stat_type)
        columns[f"{metric}_prediction_units"] = chosen[:, k, 2].astype(stat_type)
        columns[f"{metric}_reference_units"] = chosen[:, k, 1].astype(stat_type)
        columns[f"{metric}_reference_index"] = combined["reference_index"][:, k]
    return columns


# ---------------------------------------------------------------------------------------
# The script's flags
# ---------------------------------------------------------------------------------------

# Flags with a value, flags without, and flags accepted but without effect on per-example
# scores (the script's getopts string is 'ahHb:c:de:f:l:mMn:p:st:r:2:3:w:uUvxz:').
_WITH_VALUE = set("bcefln pr23wtz".replace(" ", ""))
_IGNORED = {"a": "evaluates all systems", "c": "sets the confidence interval",
            "d": "prints per-evaluation scores", "e": "names the data directory",
            "r": "sets the bootstrap resamples", "t": "sets the averaging unit",
            "z": "names the input format", "v": "prints debugging output",
            "h": "prints usage", "H": "prints usage"}
_REFUSED = {"3": "Basic Elements scoring (-3) is not supported",
            "M": "stemming only the references (-M) is not supported"}


def _number(flag: str, value: str, kind: type) -> Any:
    try:
        return kind(value)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ConfigError(f"rouge155 flag -{flag}: {value!r} is not {what}") from None


def parse_rouge155_flags(text: str) -> tuple[tuple[str, ...], dict[str, Any], list[str]]:
    """Map ROUGE-1.5.5 command-line flags to metric names and options.

    Honoured: ``-n N`` (rouge1..rougeN), ``-x`` (no ROUGE-L, else rougeLsum), ``-w W``
    (rougeWsum, weight W), ``-2 K`` with ``-u``/``-U`` (rougeS{K}/rougeSU{K}; K < 0: rougeS,
    rougeSU), ``-m``, ``-s``, ``-l N``, ``-b N``, ``-p ALPHA``, ``-f A|B``. Accepted and
    ignored with a note: ``-a -c -d -e -r -t -z -v -h -H``. Metrics come in the script's
    output order: ROUGE-N, L, W, S, SU.

    Args:
        text: the flags as given to the script, e.g. ``"-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2
            -a -m"`` (a trailing configuration file or system id is not allowed).

    Returns:
        ``(metrics, options, notes)``: the metric names; config keys ``tokenizer``
        (``rouge155``), ``stemmer``, ``stopwords``, ``limit_words``, ``limit_bytes``,
        ``alpha``, ``wlcs_weight``, ``multi_reference``; one note per ignored flag.

    Raises:
        ConfigError: an unknown or unsupported flag (named), a missing or bad value, or
            flags that ask for no metric.

    """
    try:
        words = shlex.split(text)
    except ValueError as err:
        raise ConfigError(f"rouge155 flags {text!r}: {err}") from None
    seen: dict[str, str] = {}
    notes: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-") or len(word) < 2:
            raise ConfigError(f"rouge155 flags: {word!r} is not a flag (give only the flags, "
                              "not the configuration file or system id)")
        letters = word[1:]
        i += 1
        for pos, flag in enumerate(letters):
            if flag in _REFUSED:
                raise ConfigError(f"rouge155 flag -{flag}: {_REFUSED[flag]}")
            if flag not in _WITH_VALUE and flag not in "msuUx" and flag not in _IGNORED:
                raise ConfigError(f"unknown rouge155 flag -{flag} in {text!r}")
            if flag in _WITH_VALUE:
                value = letters[pos + 1:]
                if not value:
                    if i >= len(words):
                        raise ConfigError(f"rouge155 flag -{flag} needs a value")
                    value = words[i]
                    i += 1
                seen[flag] = value
                break
            seen[flag] = ""
    for flag in seen:
        if flag in _IGNORED:
            notes.append(f"-{flag} ignored: it {_IGNORED[flag]}, not per-example scores")
    options: dict[str, Any] = {
        "tokenizer": "rouge155",
        "stemmer": "porter-rouge155" if "m" in seen else "none",
        "stopwords": "smart" if "s" in seen else "none",
        "limit_words": _number("l", seen["l"], int) if "l" in seen else 0,
        "limit_bytes": _number("b", seen["b"], int) if "b" in seen else 0,
        "alpha": _number("p", seen["p"], float) if "p" in seen else DEFAULT_ALPHA,
        "wlcs_weight": (_number("w", seen["w"], float) if "w" in seen
                        else DEFAULT_WLCS_WEIGHT),
        "multi_reference": "pooled",
    }
    if "f" in seen:
        rules = {"A": "pooled", "B": "best-recall"}
        if seen["f"] not in rules:
            raise ConfigError(f"rouge155 flag -f: {seen['f']!r} is not A or B")
        options["multi_reference"] = rules[seen["f"]]
    metrics: list[str] = []
    if "n" in seen:
        n = _number("n", seen["n"], int)
        if not 1 <= n <= 9:
            raise ConfigError(f"rouge155 flag -n: {n} is outside 1..9")
        metrics += [f"rouge{k}" for k in range(1, n + 1)]
    if "x" not in seen:
        metrics.append("rougeLsum")
    if "w" in seen:
        metrics.append("rougeWsum")
    if "2" in seen:
        gap = _number("2", seen["2"], int)
        suffix = str(gap) if gap >= 0 else ""
        if "U" in seen or "u" not in seen:
            metrics.append(f"rougeS{suffix}")
        if "U" in seen or "u" in seen:
            metrics.append(f"rougeSU{suffix}")
    if not metrics:
        raise ConfigError(f"rouge155 flags {text!r} ask for no metric (-x without -n, -w or "
                          "-2)")
    Rouge155Options(**{k: v for k, v in options.items() if k != "tokenizer"})  # validate
    return tuple(metrics), options, notes


# ---------------------------------------------------------------------------------------
# The family
# ---------------------------------------------------------------------------------------

OPTIONS = (
    Option("stopwords", "none", "ROUGE-1.5.5 metrics (tokenizer rouge155): none, or smart "
           "(the script's -s: drop the SMART common words; signature stop:smart).",
           choices=STOPWORDS),
    Option("limit_words", 0, "ROUGE-1.5.5 metrics: keep the first N words of each text (the "
           "script's -l N; signature lw:N); 0: no limit.", minimum=0),
    Option("limit_bytes", 0, "ROUGE-1.5.5 metrics: keep the first N bytes (UTF-8) of each "
           "text (the script's -b N; signature lb:N); 0: no limit.", minimum=0),
    Option("alpha", DEFAULT_ALPHA, "ROUGE-1.5.5 metrics: F-measure weight (the script's -p), "
           "F = 1 / (alpha / P + (1 - alpha) / R), in [0, 1]; signature alpha when not 0.5.",
           minimum=0.0),
    Option("wlcs_weight", DEFAULT_WLCS_WEIGHT, "rougeWsum: a run of k consecutive matches "
           "weighs k ** weight (the script's -w; signature wlcs), in [1, 5].",
           minimum=WLCS_WEIGHT_RANGE[0]),
)


def _require_rouge155(metric: str, options: Mapping[str, Any]) -> Rouge155Options:
    """The options of a ROUGE-1.5.5 metric, checked against the shared ROUGE options.

    The metrics always use the script's text handling (tokenizer ``rouge155``); a run that
    also asks for ROUGE metrics under another tokenizer is refused when its signature is
    built (the two would write different ``tok`` fields).
    """
    if options.get("tokenizer", "rouge155") not in ("rouge-score", "rouge155"):
        raise ConfigError(f"{metric} is ROUGE-1.5.5's and always tokenizes as the script "
                          f"does (tok:rouge155): it cannot take tokenizer "
                          f"{options['tokenizer']!r}", hint="drop --tokenizer")
    if options.get("case_sensitive"):
        raise ConfigError("tokenizer rouge155 lowercases like the script: case_sensitive "
                          "must be false")
    if options.get("sentence_split", "newline") != "newline":
        raise ConfigError("tokenizer rouge155 takes the lines as sentences, like the script: "
                          "sentence_split must be newline")
    return Rouge155Options.from_mapping(options)


def _spec(metric: str, family: str, options: Mapping[str, Any]) -> MetricSpec:
    kind = _kind(metric)
    opts = _require_rouge155(metric, options)
    stat = "float64" if kind.kind == "W" else "int64"
    return MetricSpec(name=metric, family=family, measures=MEASURES, primary="fmeasure",
                      statistics=(("matches", stat), ("prediction_units", stat),
                                  ("reference_units", stat)),
                      reference_rule=opts.multi_reference, has_reference_index=True)


def rouge_spec(metric: str, options: Mapping[str, Any]) -> MetricSpec:
    """The spec of a rouge family name (rougeN, rougeLsum) under tokenizer ``rouge155``.

    Raises:
        ConfigError: rougeL (the script's ROUGE-L is rougeLsum), or options the script
            does not have.

    """
    if metric == "rougeL":
        raise ConfigError("tokenizer rouge155 has no rougeL: the script's ROUGE-L is "
                          "summary-level, rougeLsum (on one-line texts the two are equal)")
    return _spec(metric, "rouge", options)


class Rouge155(Family):
    """The ``rouge155`` family: ROUGE-1.5.5's ROUGE-W, ROUGE-S and ROUGE-SU.

    Its ROUGE-N and ROUGE-L have the rouge family's names (rougeN, rougeLsum), which the
    rouge family hands to :func:`score_rouge155` under tokenizer ``rouge155``. It serves
    rougeWsum, rougeS{k}, rougeSU{k}, rougeS and rougeSU.
    """

    name = "rouge155"
    # its explanation, imported on first use (the explainer imports this module)
    explainer = "pipeline.metrics.rouge155.explain:explain_rouge155"
    names = ("rougeWsum", "rougeS4", "rougeSU4", "rougeS", "rougeSU")
    pattern = _OWN_NAME
    options = OPTIONS
    # the shared ROUGE options it reads (stemmer, multi_reference) or holds at the script's
    # values (tokenizer, case_sensitive, sentence_split)
    reads = ("tokenizer", "stemmer", "case_sensitive", "multi_reference", "sentence_split")
    mixing_hints = {"tok": "ROUGE-1.5.5's metrics ({metrics}) tokenize as its Perl script: "
                           "add --tokenizer rouge155 so that the other ROUGE metrics do too "
                           "(with rougeLsum for rougeL: the script's ROUGE-L), or score them "
                           "in two runs"}
    # rouge155: the script's flags, for the metrics and options they stand for
    presets = (Preset("rouge155", parse_rouge155_flags,
                      help="The ROUGE-1.5.5 Perl script's flags, quoted (e.g. \"-n 4 -w 1.2 -2 "
                           "4 -U -m -f A\"): sets the metrics and options the script would "
                           "use (tokenizer rouge155); see docs/metrics.md."),)

    def spec(self, metric: str, options: Mapping[str, Any]) -> MetricSpec:
        """P/R/F, matches and units (float64 for rougeWsum), the reference used.

        Raises:
            ConfigError: an unknown metric or an invalid option value.

        """
        return _spec(metric, self.name, options)

    def signature_fields(self, options: Mapping[str, Any]) -> dict[str, str]:
        """See :meth:`Rouge155Options.signature_fields`."""
        return Rouge155Options.from_mapping(options).signature_fields()

    def score(self, predictions: Sequence[str | None],
              references: Sequence[Sequence[str | None]], metrics: Sequence[str],
              options: Mapping[str, Any]) -> FamilyScores:
        """See :func:`score_rouge155`.

        No text is cut at ``max_tokens``: the script's own limits are ``limit_words`` and
        ``limit_bytes``.
        """
        columns = score_rouge155(predictions, references, metrics,
                                 Rouge155Options.from_mapping(options))
        return FamilyScores(columns)


FAMILY = Rouge155()

__all__ = ["FAMILY", "MULTI_REFERENCE_RULES", "NAMES", "OPTIONS", "Rouge155",
           "Rouge155Options", "STEMMERS", "STOPWORDS", "WLCS_WEIGHT_RANGE", "f_alpha",
           "parse_rouge155_flags",
           "rouge_spec", "score_rouge155"]
