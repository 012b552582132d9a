"""The metric family protocol: what every family declares.

In the spirit of sacrebleu's ``metrics/base.py``: statistics per segment, a score from summed
statistics, a signature per metric.

A *family* (ROUGE, BLEU, chrF, SQuAD, ROUGE-1.5.5) serves one or more *metric names*
(``rouge1``, ``rougeL``, ``bleu``, ``token_f1``...). For each name it requests, a run gets a
:class:`MetricSpec`: the per-example columns it writes, how references combine, whether it
has a corpus score computed from summed statistics, and that score's function. Everything
downstream (output schema, aggregate, compare, thresholds, CLI choices, signature) reads the
specs, never a hand-kept list of names.

Column naming in the per-example output: ``{name}_{measure}`` (float64) for each measure,
``{name}_{statistic}`` for each sufficient statistic (int64 or float64), and
``{name}_reference_index`` (int32) when the family keeps which reference was used.

A family's settings are :class:`Option` declarations: each is a key of the settings object,
of the config file and a command-line flag (``bleu_tokenize`` is ``--bleu-tokenize``), so a
new family adds its options without touching the settings, the CLI or the config reader.
Likewise its :class:`DataNote` declarations (counts it keeps about the data, and what each
means to a user) reach the manifest, the summary and the report, and its signature fields
the signature, without a line elsewhere. :class:`Family` holds what every family shares
(``serves``, option reading, the statistics-to-columns copy); ``docs/adding-a-metric.md``
walks through a new family.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from pipeline.arrays import to_numpy

# summed statistics, float64 shape (R, S) in the spec's statistics order -> corpus scores (R,)
CorpusScore = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class MetricSpec:
    """One requested metric name, as every layer after scoring sees it.

    Attributes:
        name: the metric's output name, e.g. ``rouge1``, ``bleu``, ``token_f1``.
        family: the registry name of the family that computes it.
        measures: per-example measures, each a float64 column ``{name}_{measure}``, e.g.
            ``("precision", "recall", "fmeasure")`` or ``("score",)``.
        primary: the headline measure (in ``measures``): the summary table shows it.
        statistics: per-example sufficient statistics, each a column ``{name}_{stat}``,
            with their Arrow type names (``"int64"`` or ``"float64"``), in the order the
            corpus function reads them.
        reference_rule: how several references combine (e.g. ``max``, ``pooled``,
            ``sacrebleu``), written in the output so a reader knows.
        has_reference_index: a ``{name}_reference_index`` int32 column says which reference
            was used (-1 when pooled or none).
        corpus: for a corpus metric, the function from summed statistics to the corpus
            value of ``primary`` (same scale as the per-example measure); None when the
            corpus value is the mean of per-example values. Must be picklable (a
            module-level function or a ``functools.partial`` of one).
        scale: the upper end of the measures' range (1.0 for ROUGE/F1, 100.0 for BLEU/chrF).
        breakdown: for a corpus metric, the function from summed statistics (R, S) to the
            parts of its corpus value by name, arrays of length R (BLEU: sacrebleu's
            precisions, brevity penalty, ratio and lengths); None: no breakdown.
            Picklable, as ``corpus``.
        breakdown_columns: the breakdown's ``(name, Arrow type name)`` pairs, in order:
            ``aggregate.parquet`` has a column ``{name}_{part}`` for each, filled on the
            metric's corpus rows and null elsewhere.
        breakdown_text: the breakdown in one line as the reference implementation prints
            it, from the part values by name (BLEU: sacrebleu's ``45.1/17.2/7.5/3.1 (BP =
            0.981 ratio = 0.981 hyp_len = 1234 ref_len = 1258)``); None: none.
        corpus_sized: the corpus function depends on the statistics' scale, not only on
            their ratios (BLEU's smoothing: ``exp`` gives an order without a match
            ``100 / (2^k x total)``): a bootstrap resample's weighted sums are then scaled to
            the scope's size before it is applied (:func:`pipeline.stats.evaluate`).

    """

    name: str
    family: str
    measures: tuple[str, ...]
    primary: str
    statistics: tuple[tuple[str, str], ...]
    reference_rule: str
    has_reference_index: bool = False
    corpus: CorpusScore | None = None
    scale: float = 1.0
    breakdown: Callable[[np.ndarray], Mapping[str, np.ndarray]] | None = None
    breakdown_columns: tuple[tuple[str, str], ...] = ()
    breakdown_text: Callable[[Mapping[str, Any]], str] | None = None
    corpus_sized: bool = False

    @property
    def measure_columns(self) -> tuple[str, ...]:
        """Per-example measure column names, in ``measures`` order."""
        return tuple(f"{self.name}_{m}" for m in self.measures)

    @property
    def statistic_columns(self) -> tuple[str, ...]:
        """Per-example statistic column names, in ``statistics`` order."""
        return tuple(f"{self.name}_{s}" for s, _ in self.statistics)

    @property
    def breakdown_fields(self) -> tuple[tuple[str, str], ...]:
        """The breakdown's ``aggregate.parquet`` columns: ``({name}_{part}, type name)``."""
        return tuple((f"{self.name}_{p}", t) for p, t in self.breakdown_columns)


@dataclass(frozen=True)
class Option:
    """One setting of a family, declared once.

    Attributes:
        key: the settings and config-file key, e.g. ``bleu_tokenize``; the flag is
            ``--bleu-tokenize`` (``--key/--no-key`` for a bool).
        default: the default value; its type is the option's type (str, bool, int or
            float). A default of None means "not set" (None is then always allowed) and
            ``kind`` gives the type.
        help: one sentence for ``--help`` and ``configs/default.yaml``.
        choices: the allowed values of a str option (empty: any string).
        minimum: the smallest allowed value of an int or float option (None: no bound).
        kind: the value type when ``default`` is None (str, int or float).
        omit_default: left out of a run's written config (``manifest.json``) while at its
            default, so the outputs of runs that do not use an option added later stay
            byte for byte as they were (reading the config back gives the default).

    """

    key: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    kind: type | None = None
    omit_default: bool = False

    @property
    def type(self) -> type:
        """The value type: ``kind``, else the type of ``default``."""
        return self.kind if self.kind is not None else type(self.default)

    @property
    def flag(self) -> str:
        """The command-line flag, ``--`` and the key with ``-`` for ``_``."""
        return "--" + self.key.replace("_", "-")


@dataclass(frozen=True)
class Preset:
    """A setting of a family that stands for metrics and option values at once.

    E.g. ROUGE-1.5.5's ``rouge155`` (the Perl script's flags, ``"-n 4 -w 1.2 -2 4 -U -f A"``).
    Like an option, its key is a settings and config-file key; given (not None), the metrics
    and options it expands to replace those given beside it.

    Attributes:
        key: the settings key, e.g. ``rouge155``; the flag is ``--rouge155``.
        expand: the text -> (metric names in output order, option values by key, notes on
            parts of the text that change nothing). Raises ``ConfigError`` for text it
            refuses.
        help: one sentence for ``--help``.

    """

    key: str
    expand: Callable[[str], tuple[tuple[str, ...], dict[str, Any], list[str]]]
    help: str = ""

    @property
    def flag(self) -> str:
        """The command-line flag, ``--`` and the key with ``-`` for ``_``."""
        return "--" + self.key.replace("_", "-")

    def describe(self, text: str) -> list[str]:
        """What ``text`` stands for, as lines: notes, then the metrics, then the options.

        Raises:
            ConfigError: text the preset refuses.

        """
        metrics, options, notes = self.expand(text)
        return [f"note: {n}" for n in notes] + [
            f"{self.key} {text!r} -> metrics: {','.join(metrics)}",
            "  options: " + ", ".join(f"{k}={v}" for k, v in options.items())]


class DataWarning(UserWarning):
    """A family's warning about the data of a batch (its count is a :class:`DataNote`).

    A run counts these in its manifest instead of printing them per batch, so the engine
    silences this class (and its subclasses, e.g. ROUGE's ``ZeroTokenWarning``) in workers.
    """


@dataclass(frozen=True)
class DataNote:
    """A count a family keeps about the data, and what it tells a user.

    The count is summed over batches and partitions and written in the manifest's
    ``counts`` under ``key`` (0 when the run did not count it); the summary of ``overlap
    score`` and the report print :meth:`text` when it is not 0.

    Attributes:
        key: the count's key in :attr:`FamilyScores.counts` and the manifest's ``counts``,
            e.g. ``zero_token_texts``.
        message: the note, a :meth:`str.format` template over ``n`` (the count) and the
            run's config keys (e.g. ``{tokenizer}``).
        message_one: the note when ``n`` is 1, its words agreeing (default: ``message``).
        loud: the count means scores of 0 that say nothing about the texts (e.g. non-Latin
            text under a tokenizer that keeps only ``[a-z0-9]``): printed as a warning on
            stderr as soon as the run is scored and first in the summary, not as a last
            note.
        omit_zero: left out of the manifest's ``counts`` while 0 (notes added after the
            stored outputs of earlier runs, which stay byte for byte).

    """

    key: str
    message: str
    message_one: str | None = None
    loud: bool = False
    omit_zero: bool = False

    def text(self, n: int, config: Mapping[str, Any]) -> str:
        """The note for a count of ``n`` under a run's config (its manifest's ``config``)."""
        template = self.message_one if n == 1 and self.message_one else self.message
        return template.format_map(_Missing({**config, "n": n}))


class _Missing(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


@dataclass(frozen=True)
class FamilyScores:
    """What a family's ``score`` returns for one batch.

    Attributes:
        columns: column name -> array of length N, for every column of the requested
            metrics' specs (measures, statistics, reference index).
        truncated: bool (N,): the example had a text cut at ``max_tokens`` (None when the
            family cuts nothing).
        counts: data-note counts, keyed as the family's :class:`DataNote` declarations (and
            the manifest's ``counts``), e.g. ``zero_token_texts``; summed over families and
            batches.

    """

    columns: dict[str, np.ndarray]
    truncated: np.ndarray | None = None
    counts: Mapping[str, int] = field(default_factory=dict)


class MetricFamily(Protocol):
    """What a metric family module provides (one module per family under ``metrics/``).

    A family is stateless; its options come in the flat scoring-options mapping (the same
    keys as the config file, e.g. ``tokenizer``, ``stemmer``, ``bleu_tokenize``), with every
    declared option present (the registry fills in defaults).

    Attributes:
        name: the family's registry name, e.g. ``rouge``.
        names: the metric names it serves as listed in ``--help`` and "did you mean" hints
            (a family serving names by pattern lists the usual ones).
        options: its settings (keys shared with another family must be declared alike).
        presets: its :class:`Preset` declarations (usually none).
        notes: its :class:`DataNote` declarations (the keys of :attr:`FamilyScores.counts`
            it fills).
        trailing_signature_fields: keys of its signature fields written after ``seed``
            (see :func:`pipeline.signature.build_signature`); usually none.

    Subclass :class:`Family` for ``serves``, option reading and the empty defaults.

    Optional attribute ``reads``: keys of options declared by another family that this one
    also reads (e.g. ROUGE-1.5.5's metrics read ROUGE's ``stemmer``), so that an option set
    while none of its readers is requested is refused (:func:`pipeline.scoring.unread_options`).

    Optional attribute ``reads_arrow = True``: ``score`` also takes the batch as Arrow
    arrays (a string array and a list<string> array, nulls as in the input; see
    :func:`reference_lists`), so a family may read the texts' bytes without Python strings.
    Other families get Python lists, converted once per batch for all of them.

    Optional attribute ``explainer``: the ``"module:function"`` path of the function that
    explains why one example scored what it did, called as
    ``function(prediction, references, metrics, options)`` and returning
    ``{metric: MetricExplanation}``
    (:class:`pipeline.metrics.explanation.MetricExplanation`: the matched units per
    reference, and measures and statistics named and valued as the family's columns);
    ``overlap explain`` and the report's marked words use it (see :func:`explainer_of`). The
    family names its explainer by path and never imports it: the explainer depends on the
    family, not the other way round. A family without one is scored but not explained.

    """

    # read-only, so a family may declare them as plain class attributes
    @property
    def name(self) -> str: ...  # noqa: D102
    @property
    def names(self) -> tuple[str, ...]: ...  # noqa: D102
    @property
    def options(self) -> tuple[Option, ...]: ...  # noqa: D102
    @property
    def presets(self) -> tuple[Preset, ...]: ...  # noqa: D102
    @property
    def notes(self) -> tuple[DataNote, ...]: ...  # noqa: D102
    @property
    def trailing_signature_fields(self) -> tuple[str, ...]: ...  # noqa: D102

    def serves(self, metric: str) -> bool:
        """True when ``metric`` is one of this family's names (e.g. ``rouge7``)."""
        ...

    def spec(self, metric: str, options: Mapping[str, Any]) -> MetricSpec:
        """The spec of ``metric`` under ``options``.

        Raises:
            ConfigError: an invalid option value for this family.

        """
        ...

    def signature_fields(self, options: Mapping[str, Any]) -> dict[str, str]:
        """Signature ``key: value`` fields of this family's options (only when used)."""
        ...

    def score(self, predictions: Sequence[str | None],
              references: Sequence[Sequence[str | None]], metrics: Sequence[str],
              options: Mapping[str, Any]) -> FamilyScores:
        """Per-example columns for ``metrics`` of this family (names as in the specs).

        Every text is tokenized once for all of ``metrics``.

        Args:
            predictions: N texts (None scores as empty).
            references: N lists of reference texts (a list may be empty: the example
                scores 0, reference index -1).
            metrics: names this family serves, in output order.
            options: the flat scoring options.

        Returns:
            :class:`FamilyScores`: per column an array of length N (measures, statistics,
            reference indexes).

        """
        ...


class Family:
    """What every family shares; a family subclasses it and adds ``spec`` and ``score``.

    In the spirit of sacrebleu's ``metrics/base.py`` ``Metric``: the class attributes
    declare the family (see :class:`MetricFamily` for their meaning) and the methods here
    are the parts every family had written out again.

    Attributes:
        name: the registry name, e.g. ``bleu``.
        names: the metric names it serves (and lists in help texts).
        pattern: when set, the names it serves are those this pattern matches in full
            (e.g. ``rouge([1-9])|rougeL|rougeLsum``); otherwise exactly ``names``.
        options: its settings.
        reads: keys of other families' options it also reads (see :class:`MetricFamily`).
        presets: its settings that stand for metrics and options at once (:class:`Preset`).
        notes: its data notes, in the order they are written and printed.
        trailing_signature_fields: signature fields written after ``seed`` rather than
            after ``metrics`` (where ROUGE's ``split`` and ``maxtok`` have always been).
        explainer: ``"module:function"`` of its explanation (see :class:`MetricFamily`),
            imported on first use; None when the family is not explained.
        mixing_hints: per signature field, what to do when another family's metrics in the
            same run write that field otherwise (``{metrics}`` stands for this family's
            metric names); read by :func:`pipeline.metrics.registry.signature_fields`.

    """

    name: ClassVar[str] = ""
    names: ClassVar[tuple[str, ...]] = ()
    pattern: ClassVar[re.Pattern[str] | None] = None
    options: ClassVar[tuple[Option, ...]] = ()
    reads: ClassVar[tuple[str, ...]] = ()
    presets: ClassVar[tuple[Preset, ...]] = ()
    notes: ClassVar[tuple[DataNote, ...]] = ()
    trailing_signature_fields: ClassVar[tuple[str, ...]] = ()
    explainer: ClassVar[str | None] = None
    mixing_hints: ClassVar[Mapping[str, str]] = {}

    def serves(self, metric: str) -> bool:
        """True when ``metric`` is one of this family's names (:attr:`pattern` or ``names``)."""
        if self.pattern is not None:
            return self.pattern.fullmatch(metric) is not None
        return metric in self.names

    def option(self, options: Mapping[str, Any], key: str) -> Any:
        """The value of this family's option ``key`` in ``options``, else its default.

        Raises:
            KeyError: ``key`` is not one of :attr:`options`.

        """
        for declared in self.options:
            if declared.key == key:
                return options.get(key, declared.default)
        raise KeyError(f"{self.name} has no option {key!r}")

    def signature_fields(self, options: Mapping[str, Any]) -> dict[str, str]:
        """Signature ``key: value`` fields of this family's options (none by default)."""
        return {}

    @staticmethod
    def statistic_columns(metric: str, statistics: Sequence[tuple[str, str]],
                          values: np.ndarray) -> dict[str, np.ndarray]:
        """``{metric}_{statistic}`` columns from a per-example statistics array.

        Args:
            metric: the metric name.
            statistics: the spec's ``(name, type)`` pairs, in ``values``' column order.
            values: shape (N, S) with S = len(statistics).

        Returns:
            One contiguous array of length N per statistic.

        """
        return {f"{metric}_{stat}": np.ascontiguousarray(values[:, j])
                for j, (stat, _) in enumerate(statistics)}

    @staticmethod
    def columns_of(columns: Mapping[str, np.ndarray], metrics: Sequence[str]
                   ) -> dict[str, np.ndarray]:
        """The columns of ``metrics`` (named ``{metric}_...``) among ``columns``, in order."""
        return {c: v for c, v in columns.items() if any(c.startswith(f"{m}_") for m in metrics)}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def as_list(value: Any, *, name: str, what: str) -> list[Any]:
    """``value`` as a Python list when it is a list of something (any iterable, Arrow).

    Args:
        value: the argument.
        name: its name, for the message (``predictions``, ``references[3]``).
        what: what it should hold, for the message.

    Raises:
        TypeError: a str or bytes (never split into characters), a dict (never taken as
            its keys), or anything not iterable.

    """
    import pyarrow as pa

    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return value.to_pylist()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of {what}, not a {type(value).__name__} "
                        f"({_short(value)})")
    return list(value)


def check_texts(texts: Sequence[Any], *, name: str) -> None:
    """Check that every item is a text (``str``) or None.

    Raises:
        TypeError: names the first other item's position and type (``references[0][1]
            must be a str (or None), got dict {...}``).

    """
    for i, t in enumerate(texts):
        if t is not None and not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a str (or None), got {type(t).__name__} "
                            f"{_short(t)}")


def explainer_of(family: MetricFamily) -> Callable[..., dict[str, Any]] | None:
    """The function explaining ``family``'s metrics on one example, imported on first use.

    Args:
        family: a registered family; its optional ``explainer`` attribute is a
            ``"module:function"`` path (see :class:`MetricFamily`).

    Returns:
        ``function(prediction, references, metrics, options) -> {metric: MetricExplanation}``,
        or None when the family declares no explainer.

    Raises:
        ImportError: the declared module cannot be imported.
        AttributeError: the module has no such function.

    """
    path = getattr(family, "explainer", None)
    if path is None:
        return None
    import importlib

    module, _, function = str(path).partition(":")
    explain: Callable[..., dict[str, Any]] = getattr(importlib.import_module(module), function)
    return explain


def reference_lists(references: Any) -> list[list[str | None]]:
    """N lists of reference texts from a list of lists or an Arrow list<string> array.

    A null list (Arrow) or None item becomes an empty list. Python lists are checked item
    by item (Arrow's types are checked by the readers).

    Raises:
        TypeError: a bare string or a dict where a list of texts belongs (it would
            otherwise be scored character by character, or as its keys); an item that is
            a str, a dict or a number, or holds anything but texts (names its position).

    """
    import pyarrow as pa

    if isinstance(references, pa.ChunkedArray):
        references = references.combine_chunks()
    if isinstance(references, pa.Array):
        lists = references.fill_null([]) if references.null_count else references
        offsets = to_numpy(lists.offsets, np.int64)
        flat = lists.values[offsets[0]:offsets[-1]].to_pylist()
        rel = (offsets - offsets[0]).tolist()
        return [flat[rel[i]:rel[i + 1]] for i in range(len(rel) - 1)]
    if isinstance(references, str):
        raise TypeError("references must be a list of reference texts per prediction, not a str")
    out: list[list[str | None]] = []
    for i, r in enumerate(as_list(references, name="references",
                                  what="reference lists (one per prediction)")):
        if isinstance(r, str):
            raise TypeError("references must hold a list of reference texts per prediction; "
                            f"item {i} is a str")
        if r is None:
            out.append([])
            continue
        try:
            texts = as_list(r, name=f"references[{i}]", what="reference texts")
        except TypeError:
            raise TypeError(f"references[{i}] must be a reference text or a list of them, "
                            f"got {type(r).__name__} {_short(r)}") from None
        check_texts(texts, name=f"references[{i}]")
        out.append(texts)
    return out


def text_list(texts: Any, *, name: str = "predictions") -> list[str | None]:
    """N texts as a Python list, from a list (any iterable) or an Arrow string array.

    Raises:
        TypeError: a bare str or a dict, or an item that is not a str or None (names its
            position and type).

    """
    out = as_list(texts, name=name, what="texts (one per example)")
    check_texts(out, name=name)
    return out


__all__ = ["CorpusScore", "DataNote", "DataWarning", "Family", "FamilyScores", "MetricFamily",
           "MetricSpec", "Option", "Preset", "as_list", "check_texts", "reference_lists",
           "text_list"]
