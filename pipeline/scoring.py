"""Score a batch of predictions against their references, every requested family in one pass.

:class:`ScoringSettings` is the scoring part of a run's settings (metrics, every family's
options, the long-text guard, thresholds): one frozen, picklable object that the config file,
the command line, the workers and :func:`pipeline.api.score_texts` all build the same way.
:class:`Scorer` turns it into per-example columns: each family of the requested metrics
(see :mod:`pipeline.metrics.registry`) scores its metrics over the same batch, tokenizing
each text once for all of them, and the columns are laid out as the metrics' specs say.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.arrays import from_numpy, scalar, to_numpy
from pipeline.config_checks import as_choice, as_names, as_opt_int, as_option, as_str
from pipeline.errors import ConfigError, did_you_mean
from pipeline.metrics import registry
from pipeline.metrics.base import DataWarning, MetricSpec, reference_lists, text_list

DEFAULT_METRICS = ("rouge1", "rouge2", "rougeL", "rougeLsum")
ON_LONG_TEXT = ("truncate", "error")
# Keys of ScoringSettings besides the family options (registry.options()): the families'
# presets (registry.presets(), e.g. ROUGE-1.5.5's flags) come right after metrics.
SCORING_KEYS = ("metrics", *(p.key for p in registry.presets()), "max_tokens", "threshold",
                "on_long_text")


@dataclass(frozen=True)
class Threshold:
    """A pass/fail gate on one per-example measure: an example passes when ``value >= at``.

    Attributes:
        metric: a metric name, e.g. ``rougeL`` or ``bleu``.
        measure: one of the metric's measures (its spec's ``measures``), e.g. ``fmeasure``.
        at: the threshold, in [0, the spec's ``scale``] (1 for ROUGE, 100 for BLEU).

    """

    metric: str
    measure: str
    at: float

    @property
    def column(self) -> str:
        """Name of the per-example bool column, ``passed_{metric}_{measure}``."""
        return f"passed_{self.metric}_{self.measure}"

    def __str__(self) -> str:
        return f"{self.metric}.{self.measure}={self.at:g}"

    @classmethod
    def parse(cls, text: str) -> Threshold:
        """Parse ``METRIC.MEASURE=VALUE`` (e.g. ``rougeL.fmeasure=0.5``, ``bleu.score=30``).

        Raises:
            ConfigError: malformed text, unknown metric or measure, or a value outside the
                measure's range.

        """
        match = re.fullmatch(r"\s*([A-Za-z][A-Za-z0-9_]*)\.([A-Za-z0-9_]+)\s*=\s*(\S+)\s*",
                             text)
        if not match:
            raise ConfigError(f"threshold {text!r} is not METRIC.MEASURE=VALUE",
                              hint="e.g. rougeL.fmeasure=0.5")
        metric, measure, value = match.groups()
        try:
            at = float(value)
        except ValueError:
            raise ConfigError(f"threshold {text!r}: {value!r} is not a number") from None
        return cls(metric, measure, at).checked()

    def checked(self) -> Threshold:
        """Return self after checking the metric, the measure and the range with the registry.

        Raises:
            ConfigError: unknown metric or measure, or a value outside [0, scale].

        """
        try:
            spec = registry.spec(self.metric, {})
        except ConfigError as err:
            raise ConfigError(f"threshold {self}: {err.message}", hint=err.hint) from None
        if self.measure not in spec.measures:
            raise ConfigError(f"threshold {self}: unknown measure {self.measure!r} of "
                              f"{self.metric}; choose one of {', '.join(spec.measures)}",
                              hint=did_you_mean(self.measure, spec.measures))
        if not 0.0 <= self.at <= spec.scale:
            raise ConfigError(f"threshold {self}: the value must be in [0, {spec.scale:g}]")
        return self


def as_thresholds(key: str, value: Any) -> tuple[Threshold, ...]:
    """Thresholds from ``{METRIC.MEASURE: VALUE}``, ``METRIC.MEASURE=VALUE`` strings or objects.

    Raises:
        ConfigError: anything else, or an invalid threshold.

    """
    if value is None:
        return ()
    if isinstance(value, Mapping):
        items = []
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(f"{key}: {k}: expected a number, got {v!r}")
            items.append(f"{k}={v}")
        return tuple(Threshold.parse(t) for t in items)
    if isinstance(value, (str, Threshold)):
        value = [value]
    if not isinstance(value, (list, tuple)) \
            or not all(isinstance(v, (str, Threshold)) for v in value):
        raise ConfigError(f"{key}: expected a list of METRIC.MEASURE=VALUE strings, got "
                          f"{value!r}", hint="e.g. [rougeL.fmeasure=0.5]")
    return tuple(v.checked() if isinstance(v, Threshold) else Threshold.parse(v)
                 for v in value)


@dataclass(frozen=True)
class ScoringSettings:
    """Everything that decides a run's per-example output, in one picklable object.

    Build it with :meth:`from_values` (which converts and checks every value, naming its
    key); the constructor expects values already in their types.

    Attributes:
        metrics: metric names, in output order (see :func:`pipeline.metrics.registry.names`).
        options: every family option as ``(key, value)`` pairs in registry order (e.g.
            ``("stemmer", "porter")``); read them as attributes (``settings.stemmer``) or
            with :attr:`option_map`.
        max_tokens: a text with more tokens is cut to its first ``max_tokens`` tokens by
            the families that tokenize into words (ROUGE), and its example flagged; None:
            no limit.
        thresholds: pass/fail gates, one ``passed_{metric}_{measure}`` column each.
        on_long_text: ``truncate`` (cut and flag) or ``error`` (a run fails naming them).

    Raises:
        ConfigError: an unknown metric or option value, a metric listed twice, a threshold
            on a metric the run does not score (or twice on one measure), an option no
            requested metric reads (:func:`unread_options`: ``stopwords``, ``limit_words``,
            ``limit_bytes``, ``alpha`` without ROUGE-1.5.5, ``wlcs_weight`` without
            ``rougeWsum``).

    """

    metrics: tuple[str, ...] = DEFAULT_METRICS
    options: tuple[tuple[str, Any], ...] = ()
    max_tokens: int | None = None
    thresholds: tuple[Threshold, ...] = ()
    on_long_text: str = "truncate"

    def __post_init__(self) -> None:
        if not self.metrics:
            raise ConfigError("metrics: no metric requested")
        if len(set(self.metrics)) != len(self.metrics):
            raise ConfigError(f"metrics: a metric is listed twice in {','.join(self.metrics)}")
        full = registry.with_defaults(dict(self.options))
        object.__setattr__(self, "options", tuple((o.key, full[o.key])
                                                  for o in registry.options()))
        self.specs()  # unknown metric names, option values a family refuses
        self._check_used()
        self.signature_fields()  # families that cannot share one signature
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be a whole number >= 1, not {self.max_tokens!r}")
        seen: set[str] = set()
        for t in self.thresholds:
            if t.metric not in self.metrics:
                raise ConfigError(f"threshold {t}: metric {t.metric!r} is not among the run's "
                                  f"metrics ({', '.join(self.metrics)})",
                                  hint=did_you_mean(t.metric, self.metrics))
            if t.column in seen:
                raise ConfigError(f"threshold {t}: {t.metric}.{t.measure} has two thresholds")
            seen.add(t.column)

    def _check_used(self) -> None:
        """Refuse an option no requested metric reads (it would be silently ignored).

        Raises:
            ConfigError: the first of :func:`unread_options`.
        """
        unread = unread_options(self.metrics, dict(self.options))
        if unread:
            _, message, hint = unread[0]
            raise ConfigError(message, hint=hint)

    @classmethod
    def from_values(cls, **values: Any) -> ScoringSettings:
        """Convert and check scoring settings given by key (YAML, flag or Python values).

        Args:
            values: keys among :data:`SCORING_KEYS` (``thresholds`` is accepted for
                ``threshold``) and the family options (:func:`scoring_keys`); absent keys
                take their defaults.

        Raises:
            ConfigError: an unknown key (with "did you mean") or an invalid value.

        """
        kw: dict[str, Any] = {}
        options: dict[str, Any] = {}
        declared = {o.key: o for o in registry.options()}
        presets = registry.presets()
        for preset in presets:  # it sets the metrics and the options it stands for
            if values.get(preset.key) is not None:
                metrics, implied, _ = preset.expand(as_str(preset.key, values[preset.key]))
                values = {**values, "metrics": metrics, **implied}
        for key, value in values.items():
            if any(key == p.key for p in presets):
                continue
            converted = convert_scoring_value(key, value)
            if key in declared:
                options[key] = converted
            else:
                kw["thresholds" if key == "threshold" else key] = converted
        return cls(options=tuple(options.items()), **kw)

    @property
    def option_map(self) -> dict[str, Any]:
        """The flat options mapping the families read: every family option and ``max_tokens``."""
        return {**dict(self.options), "max_tokens": self.max_tokens}

    def __getattr__(self, name: str) -> Any:
        # family options read as attributes (settings.stemmer); guarded for unpickling
        options = self.__dict__.get("options", ())
        for key, value in options:
            if key == name:
                return value
        raise AttributeError(name)

    def specs(self) -> tuple[MetricSpec, ...]:
        """The requested metrics' specs, in output order."""
        return registry.specs(self.metrics, self.option_map)

    def input_columns(self) -> tuple[str, ...]:
        """Predictions columns the families read besides the texts, in family order.

        E.g. ``--language column:lang``; the engine carries them to the scorer and the
        examples (so a run can be grouped by them).
        """
        options = self.option_map
        out: list[str] = []
        for family, _ in registry.by_family(self.metrics):
            if hasattr(family, "input_columns"):
                out += [c for c in family.input_columns(options) if c not in out]
        return tuple(out)

    def signature_fields(self) -> dict[str, str]:
        """The families' signature fields (see :func:`pipeline.signature.build_signature`)."""
        return registry.signature_fields(self.metrics, self.option_map)

    def to_dict(self) -> dict[str, Any]:
        """Plain YAML/JSON values keyed as in the config file."""
        omitted = {o.key: o.default for o in registry.options() if o.omit_default}
        return {"metrics": list(self.metrics), **{p.key: None for p in registry.presets()},
                **{k: v for k, v in self.options if k not in omitted or v != omitted[k]},
                "max_tokens": self.max_tokens, "on_long_text": self.on_long_text,
                "threshold": [str(t) for t in self.thresholds]}


# ROUGE-1.5.5's options that every metric scored as the script does reads: key -> its flag.
_ROUGE155_FLAGS = {"stopwords": "-s", "limit_words": "-l", "limit_bytes": "-b", "alpha": "-p"}
# XL-Sum's tokenizer options, read by the rouge family's metrics (rouge1 ... rougeLsum).


def unread_options(metrics: Sequence[str],
                   options: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The options set to another value than their default that no metric of ``metrics`` reads.

    Only a value that differs from the option's default counts (a config file or a manifest
    may list every key at its default). ``stopwords``, ``limit_words``, ``limit_bytes`` and
    ``alpha`` are read by the metrics scored as ROUGE-1.5.5 does (a ROUGE-1.5.5 metric such
    as ``rougeWsum`` or ``rougeS4``, or ROUGE under tokenizer ``rouge155``); ``wlcs_weight``
    by ``rougeWsum`` alone (ROUGE-W's weight); ``xlsum_rougelsum`` by ``rougeLsum`` alone;
    every other option by the families that declare it or list it in their ``reads``
    (:func:`pipeline.metrics.registry.readers`): e.g. ``stemmer`` by the ROUGE and
    ROUGE-1.5.5 metrics, ``bleu_tokenize`` by BLEU.

    Args:
        metrics: metric names (known to the registry).
        options: the family options by key (absent keys are at their default).

    Returns:
        ``(key, message, hint)`` per unread option, in registry order.

    """
    defaults = {o.key: o.default for o in registry.options()}
    families = {registry.family_of(m).name for m in metrics}
    as_script = "rouge155" in families or (
        "rouge" in families and options.get("tokenizer") == "rouge155")
    out = []
    for key, flag in _ROUGE155_FLAGS.items():
        value = options.get(key, defaults[key])
        if value != defaults[key] and not as_script:
            out.append((key, f"{key} {value!r} is ROUGE-1.5.5's {flag}: it needs tokenizer "
                             "rouge155 or a ROUGE-1.5.5 metric (rougeWsum, rougeS4...)",
                        f"add --tokenizer rouge155, or drop --{key.replace('_', '-')}"))
    weight = options.get("wlcs_weight", defaults["wlcs_weight"])
    if weight != defaults["wlcs_weight"] and "rougeWsum" not in metrics:
        out.append(("wlcs_weight", f"wlcs_weight {weight!r} is ROUGE-W's weight (the "
                                   "script's -w): only rougeWsum reads it",
                    "add rougeWsum to --metrics, or drop --wlcs-weight"))
    if options.get("xlsum_rougelsum") and "rouge" in families and "rougeLsum" not in metrics:
        out.append(("xlsum_rougelsum", "xlsum_rougelsum is read by rougeLsum alone, which "
                                       "is not requested",
                    "add rougeLsum to --metrics, or drop --xlsum-rougelsum"))
    ruled = {*_ROUGE155_FLAGS, "wlcs_weight"}  # by the rules above
    for option in registry.options():  # any other option no requested family reads
        key, value = option.key, options.get(option.key, option.default)
        readers = registry.readers(key)
        if key in ruled or value == option.default or families & {f.name for f in readers}:
            continue
        shown = key if isinstance(value, bool) else f"{key} {value!r}"
        who = " or ".join(f"the {f.name} metrics ({_span(f.names)})" for f in readers)
        out.append((key, f"{shown} is read by {who} alone, and none is requested",
                    f"add one of them to --metrics, or drop --{key.replace('_', '-')}"))
    return out


def _span(names: Sequence[str]) -> str:
    """``a ... z`` for a family's listed metric names, or the name when there is one."""
    return names[0] if len(names) == 1 else f"{names[0]} ... {names[-1]}"


def convert_scoring_value(key: str, value: Any) -> Any:
    """One scoring setting's value converted and checked on its own (no combinations).

    Args:
        key: a key of :func:`scoring_keys` (``thresholds`` stands for ``threshold``), or a
            preset's key (its text checked as a string).
        value: its YAML, flag or Python value.

    Returns:
        The value in its settings type (``threshold``: a tuple of :class:`Threshold`).

    Raises:
        ConfigError: an unknown key (with "did you mean") or an invalid value, named by key.
    """
    declared = {o.key: o for o in registry.options()}
    if any(key == p.key for p in registry.presets()):
        return as_str(key, value)
    if key == "metrics":
        return as_names(key, value)
    if key == "max_tokens":
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(f"max_tokens must be a whole number >= 1, not {value!r}")
        return as_opt_int(key, value)
    if key in ("threshold", "thresholds"):
        return as_thresholds("threshold", value)
    if key == "on_long_text":
        return as_choice(key, value, ON_LONG_TEXT)
    if key in declared:
        return as_option(declared[key], value)
    raise ConfigError(f"unknown scoring setting {key!r}", hint=did_you_mean(key, scoring_keys()))


def scoring_keys() -> tuple[str, ...]:
    """Every key of :class:`ScoringSettings`: :data:`SCORING_KEYS` and the family options."""
    return SCORING_KEYS + tuple(o.key for o in registry.options())


@dataclass(frozen=True)
class ScoredBatch:
    """The result of :meth:`Scorer.score_batch`.

    Attributes:
        table: one row per example: ``n_references`` (int32), then per metric the columns
            of its spec (:meth:`Scorer.output_schema`): its measures (float64), its
            statistics and, when the spec has one, ``{metric}_reference_index`` (int32; -1
            when the rule pools references or there is none).
        truncated: bool, shape (N,): True where the prediction or a reference had more than
            ``max_tokens`` tokens and was cut (None when no limit was set).
        counts: the families' data-note counts for the batch, by key (see
            :class:`pipeline.metrics.base.DataNote`; a key no family counted is absent).
    """

    table: pa.Table
    truncated: np.ndarray | None = None
    counts: Mapping[str, int] = field(default_factory=dict)


class Scorer:
    """Scores batches of predictions against lists of references, every family in one pass.

    Build one per worker: names and options are checked here, once.

    Args:
        settings: the scoring settings; or give them by key instead (``values``, as
            :meth:`ScoringSettings.from_values`), e.g. ``Scorer(metrics=("rouge1",),
            stemmer="porter")``.
        values: settings by key, when ``settings`` is not given.

    Raises:
        ConfigError: unknown metric, option or value.

    """

    def __init__(self, settings: ScoringSettings | None = None, /, **values: Any) -> None:
        if settings is not None and values:
            raise TypeError("give either a ScoringSettings or settings by key, not both")
        self.settings = settings if settings is not None \
            else ScoringSettings.from_values(**values)
        self.specs = self.settings.specs()
        self._families = registry.by_family(self.settings.metrics)
        self._schema = _output_schema(self.specs)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metric names, in output order."""
        return self.settings.metrics

    def output_schema(self) -> pa.Schema:
        """Schema of :attr:`ScoredBatch.table`: ``n_references``, then each spec's columns."""
        return self._schema

    def score_batch(
        self,
        predictions: Sequence[str | None] | pa.Array,
        references: Sequence[Sequence[str | None] | None] | pa.Array,
        *,
        columns: Mapping[str, Sequence[Any] | pa.Array] | None = None,
    ) -> ScoredBatch:
        """Score N predictions, each against its list of references.

        Args:
            predictions: N texts (a list or an Arrow string array); None scores as empty.
            references: N lists of reference texts (a list of lists or an Arrow
                list<string> array); an empty or null list scores 0 (reference index -1).
            columns: further predictions columns by name, N values each, for families
                that read one (``input_columns``, e.g. ROUGE's ``--language column:COL``).

        Returns:
            A :class:`ScoredBatch` with N rows in input order. Families warn about their
            data (a :class:`~pipeline.metrics.base.DataWarning`, e.g. ROUGE's
            ``ZeroTokenWarning``) once per batch.

        Raises:
            ValueError: predictions and references differ in length.
            TypeError: a bare string where a list of texts belongs (it would otherwise be
                scored character by character).

        """
        if isinstance(predictions, str):
            raise TypeError("predictions must be a list of texts, not a str")
        arrow = isinstance(predictions, (pa.Array, pa.ChunkedArray)) \
            and isinstance(references, (pa.Array, pa.ChunkedArray))
        lists: tuple[list[str | None], list[list[str | None]]] | None = None
        if arrow:
            n = len(predictions)
            lengths = pc.list_value_length(references)
            n_references = to_numpy(pc.fill_null(lengths, scalar(0, lengths.type)), np.int32)
        else:
            lists = (text_list(predictions), reference_lists(references))
            n = len(lists[0])
            n_references = np.fromiter((len(r) for r in lists[1]), dtype=np.int32,
                                       count=len(lists[1]))
        if len(n_references) != n:
            raise ValueError(f"{n} predictions but {len(n_references)} reference lists")
        out_columns: dict[str, np.ndarray] = {"n_references": n_references}
        truncated: np.ndarray | None = None
        counts: dict[str, int] = {}
        options = self.settings.option_map
        for family, metrics in self._families:
            wanted = family.input_columns(options) if hasattr(family, "input_columns") else ()
            if wanted:
                given = {c: _values(columns, c) for c in wanted}
                if lists is None:
                    lists = (text_list(predictions), reference_lists(references))
                out = cast(Any, family).score(lists[0], lists[1], metrics, options,
                                              columns=given)
            elif arrow and getattr(family, "reads_arrow", False):
                out = family.score(predictions, cast(Any, references), metrics, options)
            else:
                if lists is None:  # converted once for every family that reads lists
                    lists = (text_list(predictions), reference_lists(references))
                out = family.score(lists[0], lists[1], metrics, options)
            out_columns.update(out.columns)
            if out.truncated is not None:
                truncated = out.truncated if truncated is None else truncated | out.truncated
            for k, v in out.counts.items():
                counts[k] = counts.get(k, 0) + v
        table = pa.Table.from_arrays(
            [from_numpy(out_columns[f.name], f.type) for f in self._schema],
            schema=self._schema)
        return ScoredBatch(table, truncated, counts)


def _values(columns: Mapping[str, Sequence[Any] | pa.Array] | None, name: str) -> list[Any]:
    """A further predictions column as a Python list (see :meth:`Scorer.score_batch`).

    Raises:
        ConfigError: the column was not given.
    """
    if columns is None or name not in columns:
        raise ConfigError(f"the scoring options read the predictions column {name!r}, "
                          "which was not given", hint=f"add a {name!r} column")
    values = columns[name]
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values.to_pylist()
    return list(values)


def _output_schema(specs: Sequence[MetricSpec]) -> pa.Schema:
    fields = [pa.field("n_references", pa.int32())]
    for s in specs:
        fields += [pa.field(c, pa.float64()) for c in s.measure_columns]
        fields += [pa.field(f"{s.name}_{x}", pa.type_for_alias(t)) for x, t in s.statistics]
        if s.has_reference_index:
            fields.append(pa.field(f"{s.name}_reference_index", pa.int32()))
    return pa.schema(fields)


METRICS = registry.names()

__all__ = ["DEFAULT_METRICS", "METRICS", "ON_LONG_TEXT", "SCORING_KEYS", "DataWarning",
           "ScoredBatch", "Scorer", "ScoringSettings", "Threshold", "as_thresholds",
           "convert_scoring_value", "scoring_keys", "unread_options"]
