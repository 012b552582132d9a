"""Settings of an ``overlap score`` run: one frozen object, from defaults, a YAML file and flags.

Precedence: a flag given on the command line beats the YAML file (``--config``), which beats
the defaults below. Keys of the YAML file are the long flag names with ``_`` for ``-``
(``case_sensitive`` for ``--case-sensitive``); ``configs/default.yaml`` lists every key with
its default. Unknown keys are rejected with a "did you mean" hint; each value is checked and
converted field by field (never ``ScoreConfig(**yaml)``), so a wrong value names its key.

Inputs, the output directory, ``--run-id`` and ``--overwrite`` are per run and not settings.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from pipeline.errors import ConfigError, did_you_mean
from pipeline.scoring import DEFAULT_METRICS, MEASURES, Scorer
from pipeline.signature import Signature, build_signature

ENGINES = ("auto", "ray", "local")
DEFAULT_SEED = 12345
# What to do with ids present on one side only, empty reference lists and over-long texts.
ON_MISSING = ("error", "skip", "zero")
ON_EMPTY_REFERENCES = ("error", "skip")
ON_LONG_TEXT = ("truncate", "error")
DEFAULT_MAX_TOKENS = 100_000


@dataclass(frozen=True)
class Threshold:
    """A pass/fail gate on one per-example measure: an example passes when ``value >= at``.

    Attributes:
        metric: a metric name of the run, e.g. ``rougeL``.
        measure: ``precision``, ``recall`` or ``fmeasure``.
        at: the threshold, in [0, 1].

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
        """Parse ``METRIC.MEASURE=VALUE`` (e.g. ``rougeL.fmeasure=0.5``).

        Raises:
            ConfigError: malformed text, unknown measure or a value outside [0, 1].

        """
        match = re.fullmatch(r"\s*([A-Za-z0-9]+)\.([A-Za-z0-9_]+)\s*=\s*([^\s]+)\s*", text)
        if not match:
            raise ConfigError(f"threshold {text!r} is not METRIC.MEASURE=VALUE",
                              hint="e.g. rougeL.fmeasure=0.5")
        metric, measure, value = match.groups()
        if measure not in MEASURES:
            raise ConfigError(f"threshold {text!r}: unknown measure {measure!r}; choose one of "
                              f"{', '.join(MEASURES)}", hint=did_you_mean(measure, MEASURES))
        try:
            at = float(value)
        except ValueError:
            raise ConfigError(f"threshold {text!r}: {value!r} is not a number") from None
        if not 0.0 <= at <= 1.0:
            raise ConfigError(f"threshold {text!r}: the value must be in [0, 1]")
        return cls(metric, measure, at)


@dataclass(frozen=True)
class ScoreConfig:
    """Every setting of a scoring run (see ``configs/default.yaml`` for the documented file).

    Attributes:
        id_column: example id column, in predictions and references (string or integer).
        prediction_column: prediction text column (string).
        reference_column: the references column; None looks for ``references``
            (list<string>, one list per example) and then ``reference`` (string, one row per
            reference). With ``--references`` it is a column of that table, otherwise of the
            predictions table (which then needs a list column).
        metrics: metric names (rouge1..rouge9, rougeL, rougeLsum), in output order.
        tokenizer: a name in ``pipeline.tokenizers.TOKENIZERS``.
        stemmer: ``none`` or ``porter``.
        case_sensitive: keep case when tokenizing.
        multi_reference: ``max``, ``mean``, ``pooled`` or ``best-recall``.
        sentence_split: how rougeLsum finds sentences: ``newline`` (rouge-score) or
            ``punctuation`` (signature field ``split:punct``).
        group_by: predictions columns to aggregate by (also copied to the examples).
        keep_columns: further predictions columns copied to the examples.
        keep_text: copy the prediction text into the examples (column ``prediction``).
        bootstrap: bootstrap resamples for the confidence intervals, >= 0 (0: no interval).
        confidence: two-sided confidence level, in (0, 1).
        seed: seed of the bootstrap's ``numpy.random.default_rng``.
        thresholds: pass/fail gates; one ``passed_...`` column and pass-rate rows each.
        on_missing: ids present on one side only: ``error`` (the run fails naming them),
            ``skip`` (predictions without references and references without predictions are
            left out and counted) or ``zero`` (a reference id without a prediction is scored
            as an empty prediction, so 0; predictions without references are left out and
            counted, as with ``skip``).
        on_empty_references: examples whose reference list is null or empty, or holds a
            null reference: ``error`` or ``skip`` (left out and counted).
        max_tokens: a text (prediction or reference) with more tokens than this is cut to
            its first ``max_tokens`` tokens (signature field ``maxtok:N``): a guard against
            pathological inputs, >= 1.
        on_long_text: ``truncate`` (cut, flag the example in the ``truncated`` column and
            count it) or ``error`` (the run fails naming the examples).
        engine: ``auto`` (in-process for small inputs, else Ray; always Ray with an
            address: see :func:`pipeline.engine.run.choose_engine`), ``ray`` (local
            instance or a cluster) or ``local`` (in-process, no Ray).
        address: Ray cluster address; None means ``RAY_ADDRESS`` if set, else a local Ray.
        num_cpus: CPUs of a local Ray instance; None means every CPU of this machine.
        partition_rows: predictions rows per work partition (the number of partitions is
            ``ceil(prediction rows / partition_rows)``; it fixes the output file count).
        ship_code: on a cluster, upload this package to the workers (Ray runtime_env
            ``py_modules``) so they run the driver's version.
        runtime_env: extra Ray ``runtime_env`` for cluster runs (e.g. ``pip``), or None.

    Raises:
        ConfigError: any invalid value (named by its key).

    """

    id_column: str = "id"
    prediction_column: str = "prediction"
    reference_column: str | None = None
    metrics: tuple[str, ...] = DEFAULT_METRICS
    tokenizer: str = "rouge-score"
    stemmer: str = "none"
    case_sensitive: bool = False
    multi_reference: str = "max"
    sentence_split: str = "newline"
    group_by: tuple[str, ...] = ()
    keep_columns: tuple[str, ...] = ()
    keep_text: bool = False
    bootstrap: int = 1000
    confidence: float = 0.95
    seed: int = DEFAULT_SEED
    thresholds: tuple[Threshold, ...] = ()
    on_missing: str = "error"
    on_empty_references: str = "error"
    max_tokens: int = DEFAULT_MAX_TOKENS
    on_long_text: str = "truncate"
    engine: str = "auto"
    address: str | None = None
    num_cpus: int | None = None
    partition_rows: int = 50_000
    ship_code: bool = True
    runtime_env: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        # Validates metric, tokenizer, stemmer and rule names with the scorer's own registry.
        self.scorer()
        for key in ("id_column", "prediction_column", "reference_column"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(f"{key}: expected a column name, got {value!r}")
        for key in ("group_by", "keep_columns"):
            names = getattr(self, key)
            if len(set(names)) != len(names):
                raise ConfigError(f"{key}: a column is listed twice in {', '.join(names)}")
        if self.bootstrap < 0:
            raise ConfigError(f"bootstrap: expected a count >= 0, got {self.bootstrap}")
        if not 0.0 < self.confidence < 1.0:
            raise ConfigError(f"confidence: expected a level in (0, 1), got {self.confidence}",
                              hint="e.g. 0.95")
        if self.seed < 0:
            raise ConfigError(f"seed: expected an integer >= 0, got {self.seed}")
        seen: set[str] = set()
        for t in self.thresholds:
            if t.metric not in self.metrics:
                raise ConfigError(f"threshold {t}: metric {t.metric!r} is not among the run's "
                                  f"metrics ({', '.join(self.metrics)})",
                                  hint=did_you_mean(t.metric, self.metrics))
            if t.column in seen:
                raise ConfigError(f"threshold {t}: {t.metric}.{t.measure} has two thresholds")
            seen.add(t.column)
        for key, choices in (("on_missing", ON_MISSING),
                             ("on_empty_references", ON_EMPTY_REFERENCES),
                             ("on_long_text", ON_LONG_TEXT)):
            value = getattr(self, key)
            if value not in choices:
                raise ConfigError(f"{key}: unknown value {value!r}; choose one of "
                                  f"{', '.join(choices)}", hint=did_you_mean(value, choices))
        if self.engine not in ENGINES:
            raise ConfigError(f"engine: unknown engine {self.engine!r}; choose one of "
                              f"{', '.join(ENGINES)}", hint=did_you_mean(self.engine, ENGINES))
        if self.num_cpus is not None and self.num_cpus < 1:
            raise ConfigError(f"num_cpus: expected >= 1, got {self.num_cpus}")
        if self.partition_rows < 1:
            raise ConfigError(f"partition_rows: expected >= 1, got {self.partition_rows}")

    def scorer(self) -> Scorer:
        """Build a :class:`pipeline.scoring.Scorer` with this run's scoring settings.

        Raises:
            ConfigError: unknown metric, tokenizer, stemmer or rule.

        """
        return Scorer(metrics=self.metrics, tokenizer=self.tokenizer, stemmer=self.stemmer,
                      case_sensitive=self.case_sensitive, multi_reference=self.multi_reference,
                      sentence_split=self.sentence_split, max_tokens=self.max_tokens)

    def signature(self, *, n_references: int | str) -> Signature:
        """Return the run's signature (see :mod:`pipeline.signature`).

        Args:
            n_references: references per example, or ``"var"`` when it varies.

        """
        return build_signature(metrics=self.metrics, tokenizer=self.tokenizer,
                               stemmer=self.stemmer, case_sensitive=self.case_sensitive,
                               multi_reference=self.multi_reference, n_references=n_references,
                               n_bootstrap=self.bootstrap, confidence=self.confidence,
                               seed=self.seed, extra=self.scorer().signature_extra())

    def resolved_address(self) -> str | None:
        """Return the Ray address: ``address``, else ``RAY_ADDRESS``, else None (local)."""
        return self.address or os.environ.get("RAY_ADDRESS") or None

    def to_dict(self) -> dict[str, Any]:
        """Return the settings as plain YAML/JSON values, keyed as in the config file."""
        out = asdict(self)
        out["metrics"] = list(self.metrics)
        out["group_by"] = list(self.group_by)
        out["keep_columns"] = list(self.keep_columns)
        out["threshold"] = [str(t) for t in self.thresholds]
        del out["thresholds"]
        out["runtime_env"] = dict(self.runtime_env) if self.runtime_env else None
        return out


# --- parsing of file and flag values -----------------------------------------------------

def _as_str(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key}: expected a string, got {value!r}")
    return value


def _as_opt_str(key: str, value: Any) -> str | None:
    return None if value is None else _as_str(key, value)


def _as_names(key: str, value: Any) -> tuple[str, ...]:
    """Read a list of names from a YAML list or a comma-separated string."""
    if value is None:
        return ()
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value]
    else:
        raise ConfigError(f"{key}: expected a list of names or a comma-separated string, "
                          f"got {value!r}")
    if any(not v for v in items):
        raise ConfigError(f"{key}: empty name in {value!r}")
    return tuple(items)


def _as_bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    return value


def _as_int(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    return value


def _as_opt_int(key: str, value: Any) -> int | None:
    return None if value is None else _as_int(key, value)


def _as_float(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        raise ConfigError(f"{key}: expected a number, got {value!r}")
    return float(value)


def _as_thresholds(key: str, value: Any) -> tuple[Threshold, ...]:
    if value is None:
        return ()
    if isinstance(value, Mapping):
        items = []
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(f"{key}: {k}: expected a number, got {v!r}")
            items.append(f"{k}={v}")
        return tuple(Threshold.parse(t) for t in items)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key}: expected a list of METRIC.MEASURE=VALUE strings, got "
                          f"{value!r}", hint="e.g. [rougeL.fmeasure=0.5]")
    return tuple(Threshold.parse(v) for v in value)


def _as_mapping(key: str, value: Any) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}: expected a mapping, got {value!r}")
    return dict(value)


# File key -> (ScoreConfig field, converter). The keys are the long flag names.
_KEYS: dict[str, tuple[str, Callable[[str, Any], Any]]] = {
    "id_column": ("id_column", _as_str),
    "prediction_column": ("prediction_column", _as_str),
    "reference_column": ("reference_column", _as_opt_str),
    "metrics": ("metrics", _as_names),
    "tokenizer": ("tokenizer", _as_str),
    "stemmer": ("stemmer", _as_str),
    "case_sensitive": ("case_sensitive", _as_bool),
    "multi_reference": ("multi_reference", _as_str),
    "sentence_split": ("sentence_split", _as_str),
    "group_by": ("group_by", _as_names),
    "keep_columns": ("keep_columns", _as_names),
    "keep_text": ("keep_text", _as_bool),
    "bootstrap": ("bootstrap", _as_int),
    "confidence": ("confidence", _as_float),
    "seed": ("seed", _as_int),
    "threshold": ("thresholds", _as_thresholds),
    "on_missing": ("on_missing", _as_str),
    "on_empty_references": ("on_empty_references", _as_str),
    "max_tokens": ("max_tokens", _as_int),
    "on_long_text": ("on_long_text", _as_str),
    "engine": ("engine", _as_str),
    "address": ("address", _as_opt_str),
    "num_cpus": ("num_cpus", _as_opt_int),
    "partition_rows": ("partition_rows", _as_int),
    "ship_code": ("ship_code", _as_bool),
    "runtime_env": ("runtime_env", _as_mapping),
}
CONFIG_KEYS = tuple(_KEYS)
assert {f for f, _ in _KEYS.values()} == {f.name for f in fields(ScoreConfig)}


def load_config_file(path: str) -> dict[str, Any]:
    """Read a YAML config file (safely: plain data only) into ``{key: value}``.

    Args:
        path: a local YAML file whose top level is a mapping of config keys.

    Raises:
        ConfigError: unreadable file, invalid YAML, not a mapping, or an unknown key.

    """
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        line = f" line {where.line + 1}" if where is not None else ""
        raise ConfigError(f"config file {path}{line}: invalid YAML "
                          f"({getattr(e, 'problem', None) or e})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a mapping of settings at the top "
                          f"level, got {type(data).__name__}")
    _check_keys(data, where=f"config file {path}")
    return data


def _check_keys(values: Mapping[str, Any], *, where: str) -> None:
    for key in values:
        if key not in _KEYS:
            hint = did_you_mean(str(key).replace("-", "_"), CONFIG_KEYS)
            raise ConfigError(f"{where}: unknown setting {key!r}", hint=hint)


def resolve_config(*layers: Mapping[str, Any] | None) -> ScoreConfig:
    """Build a :class:`ScoreConfig` from layers of ``{key: value}``, later layers winning.

    Typical use: ``resolve_config(load_config_file(path), flags)``. None values are ignored
    in every layer (an absent flag never overrides the file; ``null`` in YAML is the
    default).

    Args:
        layers: mappings keyed by config keys (``CONFIG_KEYS``), values as in YAML (lists or
            comma-separated strings for lists).

    Raises:
        ConfigError: unknown key or invalid value.

    """
    merged: dict[str, Any] = {}
    for layer in layers:
        if not layer:
            continue
        _check_keys(layer, where="settings")
        merged.update({k: v for k, v in layer.items() if v is not None})
    kwargs = {}
    for key, value in merged.items():
        field_name, convert = _KEYS[key]
        kwargs[field_name] = convert(key, value)
    return ScoreConfig(**kwargs)


__all__ = ["CONFIG_KEYS", "DEFAULT_MAX_TOKENS", "DEFAULT_SEED", "ENGINES", "ON_EMPTY_REFERENCES",
           "ON_LONG_TEXT", "ON_MISSING", "ScoreConfig", "Threshold", "load_config_file",
           "resolve_config"]
