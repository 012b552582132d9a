"""Why one example scored what it did, for every metric family: the entry point and its text.

Each family declares its own explanation (the optional ``explain`` of
:class:`~pipeline.metrics.base.MetricFamily`, written beside the family:
:mod:`pipeline.metrics.rouge.explain`, :mod:`~pipeline.metrics.rouge155.explain`,
:mod:`~pipeline.metrics.bleu_explain`, :mod:`~pipeline.metrics.chrf_explain`,
:mod:`~pipeline.metrics.squad_explain`). This module checks the settings once (as
:class:`pipeline.Scorer` does), hands each family its metrics, and renders the result as
text. The measures and statistics of every metric equal the scorer's columns for the same
settings (a property test holds them together for every family).

Pure core: texts in, explanations out.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.errors import ConfigError
from pipeline.metrics import registry
from pipeline.metrics.base import explainer_of
from pipeline.metrics.explanation import (
    Listing,
    MetricExplanation,
    PairExplanation,
    Tokens,
)
from pipeline.scoring import (
    DEFAULT_METRICS,
    SCORING_KEYS,
    ScoringSettings,
    convert_scoring_value,
    unread_options,
)

# Manifest config keys that are not scoring options of one example (a preset's metrics and
# options are in the config already).
_NOT_EXPLAINED = ("thresholds", "threshold", "on_long_text",
                  *(p.key for p in registry.presets()))

_RULES = {"best-recall": "highest recall, first on ties",
          "best-f": "highest score, first on ties"}


@dataclass(frozen=True)
class Explanation:
    """The result of :func:`explain`.

    Attributes:
        settings: ``metrics``, the flat scoring options and ``signature`` (the run's
            signature fields for these metrics); under ``--language auto``,
            ``detected_language`` (:func:`detected_language`).
        prediction: the prediction text as given.
        references: the reference texts as given.
        metrics: per metric name, its :class:`MetricExplanation`, in the order asked.

    """

    settings: dict[str, Any]
    prediction: str | None
    references: list[str | None]
    metrics: dict[str, MetricExplanation]

    def __str__(self) -> str:
        """The text ``overlap explain`` prints (:func:`format_explanation`)."""
        return format_explanation(self)

    def __repr__(self) -> str:
        """One short line: the metrics, the number of references, the prediction's start."""
        pred = self.prediction if self.prediction is None or len(self.prediction) <= 30 \
            else self.prediction[:27] + "..."
        n = len(self.references)
        return (f"Explanation(metrics=[{', '.join(self.metrics)}], {n} reference"
                f"{'' if n == 1 else 's'}, prediction={pred!r})")

    @property
    def views(self) -> dict[str, tuple[Tokens, list[Tokens]]]:
        """Per token view (``rouge``, ``bleu``, ``chrf``...), the prediction's and references'."""
        out: dict[str, tuple[Tokens, list[Tokens]]] = {}
        for m in self.metrics.values():
            out.setdefault(m.view, (m.prediction, m.references))
        return out

    def to_document(self) -> dict[str, Any]:
        """The JSON document of ``overlap explain --format json`` (see docs/explain.md).

        Keys: ``settings``, ``prediction`` and ``references`` (the texts), ``tokens`` (per
        view the prediction's and references' tokens and sentences), ``metrics`` (per
        metric: family, rule, winning ``reference_index``, measures and statistics as the
        scorer's columns, metric-level detail, and per reference the matched units).
        """
        return {"settings": dict(self.settings), "prediction": self.prediction,
                "references": list(self.references),
                "tokens": {name: {"prediction": p.to_document(),
                                  "references": [r.to_document() for r in refs]}
                           for name, (p, refs) in self.views.items()},
                "metrics": {k: m.to_document() for k, m in self.metrics.items()}}


def explain(prediction: str | None, references: Sequence[str | None], *,
            metrics: Sequence[str] | None = None, **options: Any) -> Explanation:
    """Explain one example's scores: per metric the matched units of each reference.

    Args:
        prediction: the prediction text (None: empty).
        references: one or more reference texts.
        metrics: metric names of any family (default: the ``rouge155`` flags' metrics when
            given, else :data:`pipeline.scoring.DEFAULT_METRICS`).
        options: scoring settings by key, as :class:`pipeline.Scorer` takes them
            (``tokenizer``, ``stemmer``, ``bleu_tokenize``, ``rouge155``, ``max_tokens``...),
            with the same defaults and checks.

    Returns:
        An :class:`Explanation`; its measures and statistics equal
        ``Scorer(metrics=..., **options).score_batch([prediction], [references])``.

    Raises:
        ConfigError: an unknown metric, key or value; a family without an explanation; no
            reference.
        TypeError: a bare string as ``references``.

    """
    if isinstance(references, str):
        raise TypeError("references must be a list of reference texts, not a str")
    if not references:
        raise ConfigError("explain needs at least one reference")
    values = dict(options)
    if metrics is not None:
        values["metrics"] = tuple(metrics)
    elif all(values.get(p.key) is None for p in registry.presets()):
        values["metrics"] = DEFAULT_METRICS
    checked = ScoringSettings.from_values(**values)
    flat = checked.option_map
    # --language auto: the example's language, detected once, shown and handed to the
    # explainers (ROUGE's tokenizes with it) beside the options
    detected = detected_language(prediction, list(references), checked.metrics, flat)
    given = flat if detected is None else {**flat, "detected_language": detected}
    out: dict[str, MetricExplanation] = {}
    for family, names in registry.by_family(checked.metrics):
        explainer = explainer_of(family)
        if explainer is None:
            raise ConfigError(f"the {family.name} family does not explain its metrics "
                              f"({', '.join(names)})")
        out.update(explainer(prediction, list(references), names, given))
    settings = {"metrics": list(checked.metrics), **flat,
                "signature": registry.signature_fields(checked.metrics, flat)}
    if detected is not None:
        settings["detected_language"] = detected
    return Explanation(settings=settings, prediction=prediction, references=list(references),
                       metrics={m: out[m] for m in checked.metrics})


def run_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The scoring settings of a run's resolved config (manifest ``config``) for :func:`explain`.

    Every metric the run computed and every scoring option it recorded; keys absent keep
    their defaults, keys that are not scoring settings (inputs, engine...) are dropped.
    """
    keys = set(SCORING_KEYS) | {o.key for o in registry.options()}
    out = {k: v for k, v in config.items()
           if k in keys and k not in _NOT_EXPLAINED and v is not None}
    metrics = config.get("metrics")
    if isinstance(metrics, str):
        out["metrics"] = tuple(m for m in metrics.split(",") if m)
    elif metrics:
        out["metrics"] = tuple(metrics)
    return out


def detected_language(prediction: str | None, references: Sequence[str | None],
                      metrics: Sequence[str], options: Mapping[str, Any]) -> str | None:
    """The language ``--language auto`` gives this example, as scoring detects it, or None.

    The scorer's own detection (:func:`pipeline.metrics.rouge.languages.detected_languages`,
    from the scripts of the prediction and references together): one of ``chinese``,
    ``japanese``, ``thai``, ``burmese`` or ``other`` (XL-Sum's fallback tokenizer). None
    when ``language`` is not ``auto`` or no ROUGE metric reads it.
    """
    from pipeline.metrics.rouge.languages import detected_languages, is_auto

    if not is_auto(options.get("language")) or not any(
            registry.family_of(m).name == "rouge" for m in metrics):
        return None
    return detected_languages([prediction], [list(references)])[0]


def without_unread(values: Mapping[str, Any], *,
                   keep: Sequence[str] = ()) -> dict[str, Any]:
    """A run's settings for some of its metrics, or one row: the options they do not read dropped.

    A run may set options that only some of its metrics read (``wlcs_weight`` of a run of
    ``rouge1`` and ``rougeWsum``, where ``rouge1`` alone is explained), or that one row does
    not read (``japanese_dictionary`` of a ``column:COL`` run, for a row in another
    language): explaining those metrics or that row takes the defaults instead, as scoring
    them did. Options the user gave (``keep``) stay, so an unread one is still refused.

    Args:
        values: scoring settings by key, ``metrics`` included (default metrics when absent).
        keep: keys given by the user.

    Returns:
        ``values`` without the unread options (unchanged when a preset is given: it sets
        the metrics and options itself).

    """
    from pipeline.metrics.rouge.languages import dictionary_unread

    if any(values.get(p.key) is not None for p in registry.presets()):
        return dict(values)
    metrics = convert_scoring_value("metrics", values.get("metrics") or DEFAULT_METRICS)
    declared = {o.key for o in registry.options()}
    options = {k: convert_scoring_value(k, v) for k, v in values.items() if k in declared}
    unread = {key for key, _, _ in unread_options(metrics, options)}
    if dictionary_unread(options):
        unread.add("japanese_dictionary")
    return {k: v for k, v in values.items() if k not in unread or k in keep}


# ---------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------

def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


_ROUGE_VIEWS = ("rouge", "xlsum", "xlsum-lines")


def zero_token_warnings(explanation: Explanation) -> list[str]:
    """``warning: ...`` lines for texts with letters but no ROUGE token (silent zeros).

    One line per ROUGE view (``rouge``, ``xlsum``, ``xlsum-lines``) where a text that is not
    only white space has no token (e.g. Chinese under rouge-score's tokenizer, which keeps
    ``[a-z0-9]`` only), naming the texts' scripts and the options that fix it; the same
    texts the run's ``zero_token_texts`` count holds. Empty when there is none.
    """
    from pipeline.tokenizers.scripts import letter_script

    out = []
    for name, (pred, refs) in explanation.views.items():
        if name not in _ROUGE_VIEWS:
            continue
        empty = [(label, t) for label, t in [("prediction", pred),
                                             *((f"reference {i}", r)
                                               for i, r in enumerate(refs))]
                 if not t.tokens and t.text and not t.text.isspace()]
        if not empty:
            continue
        scripts = sorted({s for _, t in empty if (s := letter_script(t.text))})
        fix = ("is it the texts' language?" if name != "rouge" else
               "for text not in Latin script: --language LANG, XL-Sum's per-language "
               "tokenizer, or --tokenizer unicode")
        out.append(f"warning: {', '.join(label for label, _ in empty)} "
                   f"{'has' if len(empty) == 1 else 'have'} no token in view {name}"
                   + (f" (scripts: {', '.join(scripts)})" if scripts else "")
                   + f", so ROUGE is 0 ({fix})")
    return out


def _language_warnings(language: Any) -> list[str]:
    """A ``warning: ...`` line when ``--language NAME`` falls back (not a named language)."""
    if not isinstance(language, str) or not language:
        return []
    from pipeline.metrics.rouge.languages import fallback_notes

    return [f"warning: {note}" for note in fallback_notes({"language": language})]


def _tokens_line(label: str, t: Tokens, *, shown: bool = False) -> str:
    lines = sum(1 for a, b in t.sentences if b > a)
    extra = f", {_count(lines, 'sentence')}" if len(t.sentences) > 1 else ""
    if shown:  # per-language tokens (--language): quoted, so a ' ' token is seen
        listed = t.tokens[:60]
        extra += ": " + " ".join(repr(x) for x in listed) + (" ..." if len(t.tokens) > 60
                                                             else "")
    return f"{label}: {_count(len(t.tokens), 'token')}{extra}"


def _values(measures: Mapping[str, float], statistics: Mapping[str, Any]) -> str:
    short = {"precision": "P", "recall": "R", "fmeasure": "F"}
    head = "  ".join(f"{short.get(k, k)} {v:.4f}" for k, v in measures.items())
    if set(statistics) == {"matches", "prediction_units", "reference_units"}:
        tail = (f"matches {_num(statistics['matches'])} / prediction "
                f"{_num(statistics['prediction_units'])} / reference "
                f"{_num(statistics['reference_units'])}")
    elif len(statistics) <= 4:
        tail = ", ".join(f"{k} {_num(v)}" for k, v in statistics.items())
    else:  # BLEU's and chrF's: shown per order below (and all in --format json)
        tail = ""
    if head and tail:
        return f"{head}  ({tail})"
    return head or tail


def _num(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _rule(m: MetricExplanation) -> str:
    if m.reference_index >= 0:
        best = f"highest {'fmeasure' if 'fmeasure' in m.measures else next(iter(m.measures))}"
        why = _RULES.get(m.rule, f"{best}, first on ties" if m.rule == "max" else m.rule)
        return f"reference {m.reference_index} won ({m.rule}: {why})"
    if m.rule == "sacrebleu":
        return (f"{_count(len(m.pairs), 'reference')}: each n-gram clipped to its largest "
                "count in any one, the closest length")
    return f"{m.rule} over {_count(len(m.pairs), 'reference')}"


def _wrap(listing: Sequence[Listing], width: int, indent: int) -> list[str]:
    out: list[str] = []
    for label, items in listing:
        lead = " " * indent + f"{label}: "
        if not items:
            out.append(lead + "(none)")
            continue
        out += textwrap.wrap(", ".join(items), width=width, initial_indent=lead,
                             subsequent_indent=" " * (indent + 2), break_on_hyphens=False)
    return out


def said_language(language: str) -> str:
    """A detected language as said (``other`` names the tokenizer it stands for)."""
    from pipeline.tokenizers.multilingual import AUTO_FALLBACK

    return "other (XL-Sum's fallback tokenizer)" if language == AUTO_FALLBACK else language


def format_explanation(explanation: Explanation, *, width: int = 100) -> str:
    """Render an explanation as readable text (what ``overlap explain`` prints).

    Args:
        explanation: from :func:`explain`.
        width: wrap lists of units at about this many characters.

    Returns:
        Lines: the settings (signature fields), under ``--language auto`` the language
        detected for the example, the token counts per view, then per metric
        its measures and statistics, the multi-reference outcome, the metric-level detail
        and per reference the matched units (``*`` marks the kept reference).

    """
    e = explanation
    sig = "|".join(f"{k}:{v}" for k, v in e.settings.get("signature", {}).items())
    out = [f"settings: {sig}", *_language_warnings(e.settings.get("language")),
           *zero_token_warnings(explanation)]
    if e.settings.get("detected_language"):
        out.insert(1, f"language: {said_language(e.settings['detected_language'])}, detected "
                      "from the scripts of the texts (--language auto)")
    for name, (pred, refs) in e.views.items():
        out.append(f"tokens ({name})")
        out.append("  " + _tokens_line("prediction", pred, shown=name.startswith("xlsum")))
        out += ["  " + _tokens_line(f"reference {i}", r, shown=name.startswith("xlsum"))
                for i, r in enumerate(refs)]
    for name, m in e.metrics.items():
        out += ["", f"{name}: {_values(m.measures, m.statistics)}; {_rule(m)}"]
        out += _wrap(m.listing, width, 2)
        for p in m.pairs:
            out += [f"  reference {p.reference_index}"
                    f"{' *' if p.reference_index == m.reference_index else ''}: "
                    f"{_values(p.measures, p.statistics)}"]
            out += _wrap(p.listing, width, 4)
    return "\n".join(out)


__all__ = ["Explanation", "MetricExplanation", "PairExplanation", "Tokens", "explain",
           "detected_language", "format_explanation", "run_settings", "said_language",
           "without_unread"]
