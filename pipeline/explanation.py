"""Why one example scored what it did: the matched units behind each metric's statistics.

Pure core (texts in, explanations out), written in plain Python over token strings so that
it reads like the definitions, but for the LCS walks, which run in compiled kernels
(:func:`pipeline.metrics.rouge.lcs.lcs_alignment`,
:func:`~pipeline.metrics.rouge.lcs.union_lcs_alignment`: linear memory, about the scorer's
time; a table in Python lists took 31 s and 1.1 GB for two 10,000-token texts); the
scorer's kernels compute the same numbers (a property test holds the two together, another
holds the walks to rouge-score's):

- ``rougeN``: the clipped n-gram matches: every n-gram in both texts with its count in the
  prediction, in the reference and ``min`` of the two (Lin 2004, §2; rouge-score
  ``_score_ngrams``); matches = the sum of the minima.
- ``rougeL``: one longest common subsequence of the whole texts as pairs of token
  positions (prediction, reference), found on rouge-score's table (reference rows,
  prediction columns) with its backtrack rule (``_backtrack_norec``); matches = its length.
- ``rougeLsum``: per reference sentence, the union of its LCS with each prediction
  sentence (reference token positions, rouge-score ``_union_lcs``), then the hits: union
  tokens counted in reference order while the token has occurrences left on both sides
  (``_summary_level_lcs``); matches = the hits.
- several references: every reference is explained, and the multi-reference rule
  (:func:`pipeline.metrics.rouge.family.combine_references`, the scorer's own code) says
  which one won.

Positions are 0-based indices into the token lists shown (after stemming and
``max_tokens``); they are what the report uses to mark matched words.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.errors import ConfigError
from pipeline.metrics.rouge.family import FAMILY as ROUGE
from pipeline.metrics.rouge.family import combine_references
from pipeline.scoring import DEFAULT_METRICS, ScoringSettings
from pipeline.tokenizers.rouge_score import Tokenizer, get_tokenizer, porter_stem

# as pipeline.metrics.rouge.family (sentence_split="punctuation")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Tokens:
    """A text as the scorer sees it.

    Attributes:
        text: the text as given.
        tokens: the compared tokens (normalized, stemmed, cut at ``max_tokens``).
        sentences: ``(start, end)`` token ranges of the sentences rougeLsum uses (lines of
            the text, after ``sentence_split``), empty lines included.
        spans: ``(start, end)`` character offsets of each token in ``text``, or None when they
            cannot be located (a normalization that changes the text's length in a way that
            cannot be followed back); used to mark words.

    """

    text: str
    tokens: list[str]
    sentences: list[tuple[int, int]]
    spans: list[tuple[int, int]] | None

    def to_document(self) -> dict[str, Any]:
        """JSON-ready dict: ``text``, ``tokens``, ``sentences`` (``[start, end]`` pairs)."""
        return {"text": self.text, "tokens": list(self.tokens),
                "sentences": [list(s) for s in self.sentences]}


@dataclass(frozen=True)
class PairExplanation:
    """One metric on one (prediction, reference) pair.

    Attributes:
        reference_index: 0-based index of the reference.
        matches: clipped n-gram matches, LCS length or union-LCS hits.
        prediction_units: n-grams (rougeN) or tokens (rougeL, rougeLsum) of the prediction.
        reference_units: the same for the reference.
        precision, recall, fmeasure: derived as the scorer does, in [0, 1].
        ngrams: rougeN: ``{"ngram": [...], "prediction_count", "reference_count",
            "matches"}`` for each n-gram in both texts, in order of first occurrence in the
            prediction.
        alignment: rougeL: ``(prediction position, reference position)`` pairs of one LCS,
            increasing in both.
        sentences: rougeLsum: per reference sentence ``{"sentence", "start", "end",
            "union", "hits"}``: the sentence's token range in the reference, the reference
            positions in the union of its LCSs with the prediction sentences, and those of
            them counted as hits.
        prediction_positions: prediction token positions taking part in the matches (for
            marking words).
        reference_positions: reference token positions taking part in the matches.

    """

    reference_index: int
    matches: int
    prediction_units: int
    reference_units: int
    precision: float
    recall: float
    fmeasure: float
    ngrams: list[dict[str, Any]] | None = None
    alignment: list[tuple[int, int]] | None = None
    sentences: list[dict[str, Any]] | None = None
    prediction_positions: list[int] = field(default_factory=list)
    reference_positions: list[int] = field(default_factory=list)

    def to_document(self) -> dict[str, Any]:
        """JSON-ready dict of the fields (only the detail of the pair's metric kind)."""
        doc: dict[str, Any] = {
            "reference_index": self.reference_index, "matches": self.matches,
            "prediction_units": self.prediction_units,
            "reference_units": self.reference_units, "precision": self.precision,
            "recall": self.recall, "fmeasure": self.fmeasure,
        }
        if self.ngrams is not None:
            doc["ngrams"] = self.ngrams
        if self.alignment is not None:
            doc["alignment"] = [list(p) for p in self.alignment]
        if self.sentences is not None:
            doc["sentences"] = self.sentences
        return doc


@dataclass(frozen=True)
class MetricExplanation:
    """One metric on one example, all references, and the multi-reference rule's outcome.

    Attributes:
        metric: e.g. ``rouge2``.
        rule: the multi-reference rule.
        reference_index: the winning reference (``max``, ``best-recall``); -1 for ``mean``
            and ``pooled`` (then the statistics are sums over references).
        precision, recall, fmeasure: as the scorer reports them.
        matches, prediction_units, reference_units: as the scorer reports them.
        pairs: one :class:`PairExplanation` per reference, in order.

    """

    metric: str
    rule: str
    reference_index: int
    precision: float
    recall: float
    fmeasure: float
    matches: int
    prediction_units: int
    reference_units: int
    pairs: list[PairExplanation]

    @property
    def winner(self) -> PairExplanation | None:
        """The winning reference's pair (None for ``mean``/``pooled``)."""
        return self.pairs[self.reference_index] if self.reference_index >= 0 else None

    def to_document(self) -> dict[str, Any]:
        """JSON-ready dict: the fields, ``pairs`` as ``references``."""
        return {"metric": self.metric, "rule": self.rule,
                "reference_index": self.reference_index, "precision": self.precision,
                "recall": self.recall, "fmeasure": self.fmeasure, "matches": self.matches,
                "prediction_units": self.prediction_units,
                "reference_units": self.reference_units,
                "references": [p.to_document() for p in self.pairs]}


@dataclass(frozen=True)
class Explanation:
    """The result of :func:`explain`.

    Attributes:
        settings: the scoring settings (as :class:`pipeline.Scorer` fields).
        prediction: the prediction's tokens.
        references: each reference's tokens.
        metrics: per metric name, its :class:`MetricExplanation`, in the order asked.

    """

    settings: dict[str, Any]
    prediction: Tokens
    references: list[Tokens]
    metrics: dict[str, MetricExplanation]

    def to_document(self) -> dict[str, Any]:
        """The documented JSON document (see the README, ``overlap explain --format json``).

        Keys: ``settings``, ``prediction`` and ``references`` (text, tokens, sentences),
        ``metrics`` (per metric: rule, winning ``reference_index``, P/R/F and statistics,
        and per reference the matched units).
        """
        return {"settings": dict(self.settings), "prediction": self.prediction.to_document(),
                "references": [r.to_document() for r in self.references],
                "metrics": {k: m.to_document() for k, m in self.metrics.items()}}


# ---------------------------------------------------------------------------------------
# Tokens and where they are in the text
# ---------------------------------------------------------------------------------------

def _normalize_by_char(text: str, normalize: Any) -> tuple[str, list[int]]:
    """Normalize character by character, keeping for each output character its source."""
    out: list[str] = []
    source: list[int] = []
    for i, ch in enumerate(text):
        norm = normalize(ch)
        out.append(norm)
        source += [i] * len(norm)
    return "".join(out), source


def _spans(text: str, surface: list[str], normalize: Any) -> list[tuple[int, int]] | None:
    norm, source = _normalize_by_char(text, normalize)
    if norm != normalize(text):
        norm2 = unicodedata.normalize("NFC", norm)
        if norm2 != unicodedata.normalize("NFC", normalize(text)):
            return None
    spans = []
    cursor = 0
    for token in surface:
        at = norm.find(token, cursor)
        if at < 0:
            return None
        end = at + len(token)
        spans.append((source[at], source[end - 1] + 1))
        cursor = end
    return spans


def _tokens(text: str | None, tok: Tokenizer, *, stemmer: str, max_tokens: int | None,
            split_sentences: bool) -> Tokens:
    text = text or ""
    lowercase = not tok.case_sensitive
    scored = _SENTENCE_END.sub("\n", text) if split_sentences and text else text
    surface: list[str] = []
    sentences: list[tuple[int, int]] = []
    for line in scored.split("\n"):
        start = len(surface)
        surface += tok.tokenize(line)
        sentences.append((start, len(surface)))
    spans = _spans(text, surface, tok.normalize)
    if max_tokens is not None and len(surface) > max_tokens:
        cut = max_tokens
        surface = surface[:cut]
        sentences = [(min(s, cut), min(e, cut)) for s, e in sentences]
        spans = None if spans is None else spans[:cut]
    tokens = [porter_stem(t, lowercase=lowercase) for t in surface] \
        if stemmer == "porter" else surface
    return Tokens(text, tokens, sentences, spans)


# ---------------------------------------------------------------------------------------
# The three kinds of matched units
# ---------------------------------------------------------------------------------------

def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def _ratio(a: int, b: int) -> float:
    return a / max(b, 1)


def _f(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def _pair(index: int, matches: int, p_units: int, r_units: int, **detail: Any
          ) -> PairExplanation:
    p, r = _ratio(matches, p_units), _ratio(matches, r_units)
    return PairExplanation(index, matches, p_units, r_units, p, r, _f(p, r), **detail)


def explain_ngrams(prediction: Sequence[str], reference: Sequence[str], n: int, *,
                   index: int = 0) -> PairExplanation:
    """Clipped n-gram matches of one pair (rougeN).

    Args:
        prediction: prediction tokens.
        reference: reference tokens.
        n: the n-gram order, >= 1.
        index: the reference's index (copied into the result).

    Returns:
        A :class:`PairExplanation` with ``ngrams``; the first ``matches`` occurrences of each
        matched n-gram on each side give the marked positions.

    """
    pred, ref = _ngrams(prediction, n), _ngrams(reference, n)
    cp, cr = Counter(pred), Counter(ref)
    left = {g: min(cp[g], cr[g]) for g in dict.fromkeys(pred) if g in cr}
    rows: list[dict[str, Any]] = [
        {"ngram": list(g), "prediction_count": cp[g], "reference_count": cr[g], "matches": k}
        for g, k in left.items()]

    def positions(grams: list[tuple[str, ...]]) -> list[int]:
        budget = dict(left)
        marked: set[int] = set()
        for i, g in enumerate(grams):
            if budget.get(g, 0) > 0:
                budget[g] -= 1
                marked.update(range(i, i + n))
        return sorted(marked)

    return _pair(index, sum(left.values()), len(pred), len(ref), ngrams=rows,
                 prediction_positions=positions(pred), reference_positions=positions(ref))


def lcs_pairs(ref: Sequence[str], can: Sequence[str]) -> list[tuple[int, int]]:
    """One LCS as ``(reference position, candidate position)`` pairs, rouge-score's choice.

    The path is the one rouge-score 0.1.2 backtracks (``_backtrack_norec`` on
    ``_lcs_table``: reference rows, candidate columns; from the last cell, on a mismatch
    left when the left cell is greater than the one above, else up), computed by the
    compiled kernel :func:`pipeline.metrics.rouge.lcs.lcs_alignment` in bit rows with
    checkpoints: time O(n m / 64), memory O(sqrt(n) m / 64 + n + m) words (two
    100,000-token texts: about a second and 12 MiB, where the Python table took 31 s and
    1.1 GB for two 10,000-token texts).

    Args:
        ref: reference tokens, n of them.
        can: candidate (prediction) tokens, m of them.

    Returns:
        The pairs, increasing in both positions; as many as the LCS length.

    """
    if not ref or not can:
        return []
    from pipeline.compiled import kernel

    ids: dict[str, int] = {}
    encoded = np.fromiter((ids.setdefault(t, len(ids)) for t in [*ref, *can]),
                          dtype=np.int32, count=len(ref) + len(can))
    pairs = kernel("lcs_alignment")(encoded, 0, len(ref), len(ref), len(can), len(ids))
    return [(int(r), int(c)) for r, c in pairs.tolist()]


def explain_lcs(prediction: Sequence[str], reference: Sequence[str], *, index: int = 0
                ) -> PairExplanation:
    """The LCS alignment of one pair (rougeL) as (prediction, reference) position pairs."""
    pairs = [(c, r) for r, c in lcs_pairs(reference, prediction)]
    return _pair(index, len(pairs), len(prediction), len(reference), alignment=pairs,
                 prediction_positions=[c for c, _ in pairs],
                 reference_positions=[r for _, r in pairs])


def _union_pairs(ref: Sequence[str], ref_sentences: Sequence[tuple[int, int]],
                 pred: Sequence[str], pred_sentences: Sequence[tuple[int, int]]) -> list[int]:
    """Per reference position, the prediction position it pairs with in the union, or -1.

    Each reference sentence's LCS with each prediction sentence in order (rouge-score's
    backtrack, :func:`lcs_pairs`), the first prediction sentence to take a position
    pairing it; computed by :func:`pipeline.metrics.rouge.lcs.union_lcs_alignment` in one call,
    at about the scorer's cost.
    """
    from pipeline.compiled import kernel

    ids: dict[str, int] = {}
    encoded = np.fromiter((ids.setdefault(t, len(ids)) for t in [*ref, *pred]),
                          dtype=np.int32, count=len(ref) + len(pred))
    bounds = [np.array(list(b), dtype=np.int64).reshape(-1, 2)
              for b in (ref_sentences, pred_sentences)]
    first = kernel("union_lcs_alignment")(encoded, len(ref), bounds[0], bounds[1],
                                           max(len(ids), 1))
    return [int(p) for p in first.tolist()]


def explain_summary_lcs(prediction: Tokens, reference: Tokens, *, index: int = 0
                        ) -> PairExplanation:
    """Union-LCS hits per reference sentence of one pair (rougeLsum)."""
    pred, ref = prediction.tokens, reference.tokens
    if not pred or not ref:
        return _pair(index, 0, len(pred), len(ref), sentences=[])
    left_pred, left_ref = Counter(pred), Counter(ref)
    rows: list[dict[str, Any]] = []
    pred_marked: set[int] = set()
    hits_total = 0
    paired = _union_pairs(ref, reference.sentences, pred, prediction.sentences)
    for k, (rs, re_) in enumerate(reference.sentences):
        # reference position -> prediction position of the first LCS that takes it
        union = {p: paired[p] for p in range(rs, re_) if paired[p] >= 0}
        hits = []
        for pos in sorted(union):
            t = ref[pos]
            if left_pred[t] > 0 and left_ref[t] > 0:
                left_pred[t] -= 1
                left_ref[t] -= 1
                hits.append(pos)
                pred_marked.add(union[pos])
        hits_total += len(hits)
        if re_ > rs:
            rows.append({"sentence": k, "start": rs, "end": re_, "union": sorted(union),
                         "hits": hits})
    return _pair(index, hits_total, len(pred), len(ref), sentences=rows,
                 prediction_positions=sorted(pred_marked),
                 reference_positions=[p for r in rows for p in r["hits"]])


# ---------------------------------------------------------------------------------------
# One example, every metric
# ---------------------------------------------------------------------------------------

def _metric_kind(metric: str) -> int:
    if metric == "rougeL":
        return 0
    if metric == "rougeLsum":
        return -1
    return int(metric[len("rouge"):])


def explain(
    prediction: str | None,
    references: Sequence[str | None],
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    tokenizer: str = "rouge-score",
    stemmer: str = "none",
    case_sensitive: bool = False,
    multi_reference: str = "max",
    sentence_split: str = "newline",
    max_tokens: int | None = None,
) -> Explanation:
    """Explain one example's scores: the matched units of each metric and reference.

    The settings are those of :class:`pipeline.Scorer` (same names, same defaults, same
    validation, :class:`pipeline.scoring.ScoringSettings`); the statistics equal
    ``Scorer(...).score_batch([prediction], [references])`` for the same settings. ROUGE
    metrics only.

    Args:
        prediction: the prediction text (None: empty).
        references: one or more reference texts.
        metrics: rouge1..rouge9, rougeL, rougeLsum.
        tokenizer: ``rouge-score``, ``unicode`` or ``whitespace``.
        stemmer: ``none`` or ``porter``.
        case_sensitive: keep case.
        multi_reference: ``max``, ``mean``, ``pooled`` or ``best-recall``.
        sentence_split: ``newline`` or ``punctuation`` (rougeLsum).
        max_tokens: cut texts to this many tokens (None: no limit).

    Returns:
        An :class:`Explanation`.

    Raises:
        ConfigError: unknown metric, tokenizer, stemmer or rule; a metric of another family
            than ROUGE; no reference.
        TypeError: a bare string as ``references``.

    """
    if isinstance(references, str):
        raise TypeError("references must be a list of reference texts, not a str")
    if not references:
        raise ConfigError("explain needs at least one reference")
    checked = ScoringSettings.from_values(
        metrics=tuple(metrics), tokenizer=tokenizer, stemmer=stemmer,
        case_sensitive=case_sensitive, multi_reference=multi_reference,
        sentence_split=sentence_split, max_tokens=max_tokens)
    others = [m for m in checked.metrics if not ROUGE.serves(m)]
    if others:
        raise ConfigError(f"explain covers the ROUGE metrics, not {', '.join(others)}")
    names = checked.metrics
    split = "rougeLsum" in names and sentence_split == "punctuation"
    tok = get_tokenizer(tokenizer, case_sensitive=case_sensitive)

    def tokens(text: str | None) -> Tokens:
        return _tokens(text, tok, stemmer=stemmer, max_tokens=max_tokens,
                       split_sentences=split)

    pred = tokens(prediction)
    refs = [tokens(r) for r in references]
    pairs: dict[str, list[PairExplanation]] = {}
    for metric in names:
        kind = _metric_kind(metric)
        if kind > 0:
            pairs[metric] = [explain_ngrams(pred.tokens, r.tokens, kind, index=i)
                             for i, r in enumerate(refs)]
        elif kind == 0:
            pairs[metric] = [explain_lcs(pred.tokens, r.tokens, index=i)
                             for i, r in enumerate(refs)]
        else:
            pairs[metric] = [explain_summary_lcs(pred, r, index=i) for i, r in enumerate(refs)]
    stats = np.array([[[p.matches, p.prediction_units, p.reference_units]
                       for p in (pairs[m][i] for m in names)]
                      for i in range(len(refs))], dtype=np.int64)
    combined = combine_references(stats, np.array([len(refs)], dtype=np.int64),
                                  rule=multi_reference)
    out = {}
    for k, metric in enumerate(names):
        out[metric] = MetricExplanation(
            metric=metric, rule=multi_reference,
            reference_index=int(combined["reference_index"][0, k]),
            precision=float(combined["precision"][0, k]),
            recall=float(combined["recall"][0, k]),
            fmeasure=float(combined["fmeasure"][0, k]),
            matches=int(combined["matches"][0, k]),
            prediction_units=int(combined["prediction_units"][0, k]),
            reference_units=int(combined["reference_units"][0, k]),
            pairs=pairs[metric])
    settings = {"metrics": list(names), "tokenizer": tokenizer, "stemmer": stemmer,
                "case_sensitive": case_sensitive, "multi_reference": multi_reference,
                "sentence_split": sentence_split, "max_tokens": max_tokens}
    return Explanation(settings=settings, prediction=pred, references=refs, metrics=out)


def run_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The ROUGE settings of a run's resolved config (manifest ``config``) for :func:`explain`.

    Only ROUGE metrics are kept (default: :data:`pipeline.scoring.DEFAULT_METRICS` when the
    run has none); keys absent from the config keep :func:`explain`'s defaults.
    """
    metrics = config.get("metrics") or DEFAULT_METRICS
    if isinstance(metrics, str):
        metrics = metrics.split(",")
    rouge = tuple(m for m in metrics if ROUGE.serves(m))
    out: dict[str, Any] = {"metrics": rouge or DEFAULT_METRICS}
    for key in ("tokenizer", "stemmer", "case_sensitive", "multi_reference", "sentence_split",
                "max_tokens"):
        if config.get(key) is not None:
            out[key] = config[key]
    return out


def format_explanation(explanation: Explanation, *, width: int = 100) -> str:
    """Render an explanation as readable text (what ``overlap explain`` prints).

    Args:
        explanation: from :func:`explain`.
        width: wrap lists of units at about this many characters.

    """
    import textwrap

    def wrap(label: str, items: list[str]) -> list[str]:
        if not items:
            return [f"    {label}: (none)"]
        return textwrap.wrap(", ".join(items), width=width, initial_indent=f"    {label}: ",
                             subsequent_indent=" " * (6 + len(label)))

    e = explanation
    s = e.settings
    def count(n: int, noun: str) -> str:
        return f"{n} {noun}{'' if n == 1 else 's'}"

    out = [f"settings: tokenizer {s['tokenizer']}, stemmer {s['stemmer']}, "
           f"{'case kept' if s['case_sensitive'] else 'lower-cased'}, multi-reference "
           f"{s['multi_reference']}, sentences by {s['sentence_split']}"
           + (f", max {s['max_tokens']} tokens" if s["max_tokens"] else ""),
           f"prediction: {count(len(e.prediction.tokens), 'token')}, "
           f"{count(sum(1 for a, b in e.prediction.sentences if b > a), 'sentence')}"]
    for i, r in enumerate(e.references):
        out.append(f"reference {i}: {count(len(r.tokens), 'token')}, "
                   f"{count(sum(1 for a, b in r.sentences if b > a), 'sentence')}")
    for name, m in e.metrics.items():
        won = (f"reference {m.reference_index} won ({m.rule}: "
               f"{'highest fmeasure' if m.rule == 'max' else 'highest recall'}, first on ties)"
               if m.reference_index >= 0 else f"{m.rule} over {len(m.pairs)} references")
        out += ["", f"{name}: P {m.precision:.4f}  R {m.recall:.4f}  F {m.fmeasure:.4f}  "
                    f"(matches {m.matches} / prediction {m.prediction_units} / reference "
                    f"{m.reference_units}); {won}"]
        for p in m.pairs:
            mark = " *" if p.reference_index == m.reference_index else ""
            out.append(f"  reference {p.reference_index}{mark}: matches {p.matches}, "
                       f"P {p.precision:.4f} R {p.recall:.4f} F {p.fmeasure:.4f}")
            if p.ngrams is not None:
                out += wrap("clipped n-grams", [
                    f"{' '.join(g['ngram'])} x{g['matches']}"
                    + (f" (pred {g['prediction_count']}, ref {g['reference_count']})"
                       if g["prediction_count"] != g["reference_count"] else "")
                    for g in p.ngrams])
            if p.alignment is not None:
                toks = e.prediction.tokens
                out += wrap("LCS (pred pos, ref pos)",
                            [f"{toks[a]} ({a},{b})" for a, b in p.alignment])
            if p.sentences is not None:
                ref_toks = e.references[p.reference_index].tokens
                for row in p.sentences:
                    out += wrap(f"sentence {row['sentence']} hits",
                                [f"{ref_toks[q]} ({q})" for q in row["hits"]])
    return "\n".join(out)


__all__ = ["Explanation", "MetricExplanation", "PairExplanation", "Tokens", "explain",
           "explain_lcs", "explain_ngrams", "explain_summary_lcs", "format_explanation",
           "lcs_pairs", "run_settings"]
