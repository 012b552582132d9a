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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

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

    """

    key: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    kind: type | None = None

    @property
    def type(self) -> type:
        """The value type: ``kind``, else the type of ``default``."""
        return self.kind if self.kind is not None else type(self.default)

    @property
    def flag(self) -> str:
        """The command-line flag, ``--`` and the key with ``-`` for ``_``."""
        return "--" + self.key.replace("_", "-")


@dataclass(frozen=True)
class FamilyScores:
    """What a family's ``score`` returns for one batch.

    Attributes:
        columns: column name -> array of length N, for every column of the requested
            metrics' specs (measures, statistics, reference index).
        truncated: bool (N,): the example had a text cut at ``max_tokens`` (None when the
            family cuts nothing).
        counts: data-warning counts, keyed as in the manifest's ``counts`` (e.g.
            ``zero_token_texts``); summed over families and batches.

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

    Optional attribute ``reads_arrow = True``: ``score`` also takes the batch as Arrow
    arrays (a string array and a list<string> array, nulls as in the input; see
    :func:`reference_lists`), so a family may read the texts' bytes without Python strings.
    Other families get Python lists, converted once per batch for all of them.

    Optional method ``explain(prediction, references, metrics, options)``: why one example
    scored what it did, as ``{metric: MetricExplanation}``
    (:class:`pipeline.metrics.explanation.MetricExplanation`: the matched units per
    reference, and measures and statistics named and valued as the family's columns);
    ``overlap explain`` and the report's marked words use it. A family without it is
    scored but not explained.

    """

    # read-only, so a family may declare them as plain class attributes
    @property
    def name(self) -> str: ...  # noqa: D102
    @property
    def names(self) -> tuple[str, ...]: ...  # noqa: D102
    @property
    def options(self) -> tuple[Option, ...]: ...  # noqa: D102

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


def reference_lists(references: Any) -> list[list[str | None]]:
    """N lists of reference texts from a list of lists or an Arrow list<string> array.

    A null list (Arrow) or None item becomes an empty list.

    Raises:
        TypeError: a bare string where a list of texts belongs (it would otherwise be
            scored character by character).

    """
    import pyarrow as pa

    if isinstance(references, pa.ChunkedArray):
        references = references.combine_chunks()
    if isinstance(references, pa.Array):
        lists = references.fill_null([]) if references.null_count else references
        offsets = np.asarray(lists.offsets, dtype=np.int64)
        flat = lists.values[offsets[0]:offsets[-1]].to_pylist()
        rel = (offsets - offsets[0]).tolist()
        return [flat[rel[i]:rel[i + 1]] for i in range(len(rel) - 1)]
    if isinstance(references, str):
        raise TypeError("references must be a list of reference texts per prediction, not a str")
    out = []
    for i, r in enumerate(references):
        if isinstance(r, str):
            raise TypeError("references must hold a list of reference texts per prediction; "
                            f"item {i} is a str")
        out.append([] if r is None else list(r))
    return out


def text_list(texts: Any) -> list[str | None]:
    """N texts as a Python list, from a list or an Arrow string array."""
    import pyarrow as pa

    if isinstance(texts, (pa.Array, pa.ChunkedArray)):
        return texts.to_pylist()
    return list(texts)


__all__ = ["CorpusScore", "FamilyScores", "MetricFamily", "MetricSpec", "Option",
           "reference_lists", "text_list"]
