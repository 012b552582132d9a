"""Settings of an ``overlap score`` run: one frozen object, from defaults, a YAML file and flags.

Precedence: a flag given on the command line beats the YAML file (``--config``), which beats
the defaults below. Keys of the YAML file are the long flag names with ``_`` for ``-``
(``case_sensitive`` for ``--case-sensitive``); ``configs/default.yaml`` lists every key with
its default. Unknown keys are rejected with a "did you mean" hint; each value is checked and
converted field by field (never ``ScoreConfig(**yaml)``), so a wrong value names its key.

Inputs, the output directory, ``--run-id`` and ``--overwrite`` are per run and not settings.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from pipeline.config_checks import (
    MAX_BOOTSTRAP,
    MAX_BOOTSTRAP_WORK,
    as_bool,
    as_choice,
    as_float,
    as_int,
    as_mapping,
    as_names,
    as_opt_int,
    as_opt_str,
    as_str,
    check_resamples,
    check_resampling_work,
    work_limit_note,
)
from pipeline.errors import ConfigError, did_you_mean
from pipeline.metrics import registry
from pipeline.scoring import (
    ON_LONG_TEXT,
    ScoringSettings,
    Threshold,
    convert_scoring_value,
    scoring_keys,
)
from pipeline.signature import Signature, build_signature

ENGINES = ("auto", "ray", "local")
# The most CPUs (local Ray) or worker processes (in-process) one machine's run may ask for.
MAX_NUM_CPUS = 4096
DEFAULT_SEED = 12345
# What to do with ids present on one side only, empty reference lists and over-long texts.
ON_MISSING = ("error", "skip", "zero")
ON_EMPTY_REFERENCES = ("error", "skip")
DEFAULT_MAX_TOKENS = 100_000
DEFAULT_BOOTSTRAP = 1000


def _choice(choices: tuple[str, ...]) -> Callable[[str, Any], str]:
    return lambda key, value: as_choice(key, value, choices)


def _storage(key: str, value: Any) -> dict[str, Any] | None:
    from pipeline.io.storage import from_mapping

    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}: expected a mapping (endpoint, region, profile, path_style, "
                          "allow_http)")
    from_mapping(value, where=key)  # checked now, applied by the commands
    return dict(value)


# Settings of a run besides scoring (ScoringSettings converts those): key -> converter.
_RUN_KEYS: dict[str, Callable[[str, Any], Any]] = {
    "id_column": as_str,
    "prediction_column": as_str,
    "reference_column": as_opt_str,
    "group_by": as_names,
    "keep_columns": as_names,
    "keep_text": as_bool,
    "bootstrap": as_int,
    "confidence": as_float,
    "seed": as_int,
    "on_missing": _choice(ON_MISSING),
    "on_empty_references": _choice(ON_EMPTY_REFERENCES),
    "engine": _choice(ENGINES),
    "address": as_opt_str,
    "num_cpus": as_opt_int,
    "partition_rows": as_int,
    "ship_code": as_bool,
    "runtime_env": as_mapping,
    "allow_local_paths": as_bool,
    "scratch": as_opt_str,
    "storage": _storage,
}


@dataclass(frozen=True, init=False)
class ScoreConfig:
    """Every setting of a scoring run (see ``configs/default.yaml`` for the documented file).

    Built from settings by key, ``ScoreConfig(metrics=("rouge1", "bleu"), stemmer="porter",
    engine="local")``: every value is converted and checked field by field (YAML values are
    accepted: lists or comma-separated strings for lists), so a wrong value names its key
    and an unknown key gets a "did you mean" hint. The scoring settings (metrics, every
    family's options such as ``stemmer`` or ``bleu_tokenize``, ``max_tokens``,
    ``threshold``, ``on_long_text``) form :attr:`scoring`, and read as attributes too
    (``config.metrics``, ``config.stemmer``, ``config.thresholds``).

    Attributes:
        id_column: example id column, in predictions and references (string or integer).
        prediction_column: prediction text column (string).
        reference_column: the references column; None looks for ``references``
            (list<string>, one list per example) and then ``reference`` (string, one row per
            reference). With ``--references`` it is a column of that table, otherwise of the
            predictions table (which then needs a list column).
        scoring: the scoring settings (:class:`pipeline.scoring.ScoringSettings`);
            ``max_tokens`` defaults to 100,000 here (a text with more tokens is cut to its
            first ``max_tokens`` tokens, signature field ``maxtok:N``).
        group_by: predictions columns to aggregate by (also copied to the examples).
        keep_columns: further predictions columns copied to the examples.
        keep_text: copy the prediction text into the examples (column ``prediction``).
        bootstrap: bootstrap resamples for the confidence intervals, 0 to
            :data:`MAX_BOOTSTRAP` (0: no interval); beyond the default, also at most
            :data:`MAX_BOOTSTRAP_WORK` over the rows (:meth:`check_bootstrap_work`).
        confidence: two-sided confidence level, in (0, 1).
        seed: seed of the bootstrap's ``numpy.random.default_rng``.
        on_missing: ids present on one side only: ``error`` (the run fails naming them),
            ``skip`` (predictions without references and references without predictions are
            left out and counted) or ``zero`` (a reference id without a prediction is scored
            as an empty prediction, so 0; predictions without references are left out and
            counted, as with ``skip``).
        on_empty_references: examples whose reference list is null or empty, or holds a
            null reference: ``error`` or ``skip`` (left out and counted).
        engine: ``auto`` (in-process at any size; Ray with an address or when Ray is
            already initialized: see :func:`pipeline.engine.run.choose_engine`), ``ray``
            (local instance or a cluster) or ``local`` (in-process, no Ray).
        address: Ray cluster address; None means ``RAY_ADDRESS`` if set, else a local Ray.
        num_cpus: CPUs of a local Ray instance, or worker processes of the in-process
            engine (1: one task at a time), at most :data:`MAX_NUM_CPUS`; None means every
            CPU this process may use.
        partition_rows: predictions rows per work partition (the number of partitions is
            ``ceil(prediction rows / partition_rows)``; it fixes the output file count).
        ship_code: on a cluster, upload this package to the workers (Ray runtime_env
            ``py_modules``) so they run the driver's version.
        runtime_env: extra Ray ``runtime_env`` for cluster runs (e.g. ``pip``), or None.
        allow_local_paths: with a cluster address, accept local paths (inputs, output,
            scratch): for a single-host cluster or a disk mounted at one path on every node.
        scratch: where a comparison of ``overlap nightly`` keeps its temporary files on a
            cluster (a directory every node reads; None: beside the comparison's output).
        storage: object-storage settings (:mod:`pipeline.io.storage`: endpoint, region,
            profile, path_style, allow_http), or None; never written into a manifest
            (:meth:`to_dict` gives None) and not part of equality.

    Raises:
        ConfigError: an unknown key or any invalid value (named by its key).

    """

    id_column: str = "id"
    prediction_column: str = "prediction"
    reference_column: str | None = None
    scoring: ScoringSettings = field(default_factory=ScoringSettings)
    group_by: tuple[str, ...] = ()
    keep_columns: tuple[str, ...] = ()
    keep_text: bool = False
    bootstrap: int = DEFAULT_BOOTSTRAP
    confidence: float = 0.95
    seed: int = DEFAULT_SEED
    on_missing: str = "error"
    on_empty_references: str = "error"
    engine: str = "auto"
    address: str | None = None
    num_cpus: int | None = None
    partition_rows: int = 50_000
    ship_code: bool = True
    runtime_env: Mapping[str, Any] | None = None
    allow_local_paths: bool = False
    scratch: str | None = None
    storage: Mapping[str, Any] | None = field(default=None, compare=False)

    def __init__(self, **values: Any) -> None:
        given = values.pop("scoring", None)  # as dataclasses.replace passes it
        _check_keys(values, where="settings")
        scoring = {k: v for k, v in values.items() if k not in _RUN_KEYS}
        if given is not None:
            if not isinstance(given, ScoringSettings) or scoring:
                raise TypeError("scoring: a ScoringSettings, and then no scoring key besides")
            object.__setattr__(self, "scoring", given)
        else:
            scoring.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
            object.__setattr__(self, "scoring", ScoringSettings.from_values(**scoring))
        for f in fields(self):
            if f.name == "scoring":
                continue
            value = values.get(f.name, f.default)
            object.__setattr__(self, f.name, _RUN_KEYS[f.name](f.name, value)
                               if f.name in values else value)
        self._check()

    def __getattr__(self, name: str) -> Any:
        # scoring settings read as attributes: config.metrics, config.stemmer...
        scoring = self.__dict__.get("scoring")
        if scoring is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(scoring, name)

    def _check(self) -> None:
        for key in ("id_column", "prediction_column", "reference_column"):
            value = getattr(self, key)
            if value is not None and not value:
                raise ConfigError(f"{key}: expected a column name, got {value!r}")
        for key in ("group_by", "keep_columns"):
            names = getattr(self, key)
            if len(set(names)) != len(names):
                raise ConfigError(f"{key}: a column is listed twice in {', '.join(names)}")
        if self.bootstrap < 0:
            raise ConfigError(f"bootstrap: expected a count >= 0, got {self.bootstrap}")
        if self.bootstrap:
            from pipeline.aggregate import bootstrap_bytes
            from pipeline.machine import check_fits

            check_fits("bootstrap", self.bootstrap, bytes_each=bootstrap_bytes(
                self.scoring.specs(), self.scoring.thresholds), at_most=MAX_BOOTSTRAP,
                hint=work_limit_note(DEFAULT_BOOTSTRAP))
            check_resamples("bootstrap", self.bootstrap, default=DEFAULT_BOOTSTRAP,
                            maximum=MAX_BOOTSTRAP)
        if not 0.0 < self.confidence < 1.0:
            raise ConfigError(f"confidence: expected a level in (0, 1), got {self.confidence}",
                              hint="e.g. 0.95")
        if self.seed < 0:
            raise ConfigError(f"seed: expected an integer >= 0, got {self.seed}")
        if self.num_cpus is not None and not 1 <= self.num_cpus <= MAX_NUM_CPUS:
            raise ConfigError(f"num_cpus: expected 1 to {MAX_NUM_CPUS:,} (CPUs of this "
                              f"machine), got {self.num_cpus}")
        if self.partition_rows < 1:
            raise ConfigError(f"partition_rows: expected >= 1, got {self.partition_rows}")

    def check_bootstrap_work(self, n_rows: int) -> None:
        """Refuse a bootstrap whose work on ``n_rows`` examples is beyond the limit.

        The work is ``n_rows * bootstrap`` weighted draws (each resample weighs every
        example once); refused when it exceeds :data:`MAX_BOOTSTRAP_WORK` and ``bootstrap``
        exceeds the default :data:`DEFAULT_BOOTSTRAP` (the default is taken at any size).
        Checked once the inputs' row counts are known, before any work or any file.

        Args:
            n_rows: the examples (prediction rows) the bootstrap runs over, >= 0.

        Raises:
            ConfigError: names the resamples, the rows, the draws and the largest
                ``bootstrap`` within the limit at this size.

        """
        check_resampling_work("bootstrap", self.bootstrap, n_rows, default=DEFAULT_BOOTSTRAP,
                              limit=MAX_BOOTSTRAP_WORK)

    def signature(self, *, n_references: int | str) -> Signature:
        """Return the run's signature (see :mod:`pipeline.signature`).

        Args:
            n_references: references per example, or ``"var"`` when it varies.

        """
        return build_signature(metrics=self.scoring.metrics, n_references=n_references,
                               n_bootstrap=self.bootstrap, confidence=self.confidence,
                               seed=self.seed, **self.scoring.option_map)

    def resolved_address(self) -> str | None:
        """Return the Ray address: ``address``, else ``RAY_ADDRESS``, else None (local)."""
        return self.address or os.environ.get("RAY_ADDRESS") or None

    def to_dict(self) -> dict[str, Any]:
        """Return the settings as plain YAML/JSON values, keyed as in the config file.

        The keys are :data:`CONFIG_KEYS`, in that order (less the family options declared
        ``omit_default`` that are at their default); ``resolve_config(to_dict())`` rebuilds
        an equal config.
        """
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "scoring"}
        values.update(self.scoring.to_dict())
        out = {key: values[key] for key in CONFIG_KEYS if key in values}
        for key in ("group_by", "keep_columns"):
            out[key] = list(out[key])
        out["runtime_env"] = dict(self.runtime_env) if self.runtime_env else None
        out["storage"] = None  # endpoints and profiles stay out of manifests
        return out


# Keys about where a run executes, not what it computes: left out of the manifest's "config"
# (see :func:`manifest_config`): a storage endpoint or a profile is nobody's business there.
ENVIRONMENT_KEYS = ("allow_local_paths", "scratch", "storage")


def manifest_config(config: ScoreConfig) -> dict[str, Any]:
    """Return the settings as a manifest records them.

    :meth:`ScoreConfig.to_dict` without :data:`ENVIRONMENT_KEYS` (results do not depend on
    them).
    """
    return {k: v for k, v in config.to_dict().items() if k not in ENVIRONMENT_KEYS}


# Every key of the config file (and, but ENVIRONMENT_KEYS, of the manifest's "config"), in
# to_dict order.
CONFIG_KEYS = ("id_column", "prediction_column", "reference_column", "metrics",
               *(p.key for p in registry.presets()),
               *(o.key for o in registry.options()),
               "group_by", "keep_columns", "keep_text", "bootstrap", "confidence", "seed",
               "on_missing", "on_empty_references", "max_tokens", "on_long_text",
               "engine", "address", "num_cpus", "partition_rows", "ship_code", "runtime_env",
               "allow_local_paths", "scratch", "storage", "threshold")
assert set(CONFIG_KEYS) == set(_RUN_KEYS) | set(scoring_keys())


def load_config_file(path: str) -> dict[str, Any]:
    """Read a YAML config file (safely: plain data only) into ``{key: value}``.

    The file must be UTF-8, at most ``MAX_CONFIG_BYTES`` (1 MiB) long, give each key once
    (YAML would keep the last of two silently), and be free of YAML
    aliases (``*name``): an alias repeats a node without its size showing in the file, so
    a few lines of nested aliases ("billion laughs") expand to gigabytes.

    Args:
        path: a local YAML file whose top level is a mapping of config keys.

    Raises:
        ConfigError: unreadable, too large or not UTF-8; invalid YAML, an alias or a key
            given twice; not a mapping; an unknown key or an invalid value (each value is
            checked on its own here, combinations when the settings are built).

    """
    import yaml

    class _NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, f"alias *{event.anchor} (aliases are not accepted in config "
                    "files: write the value out)", event.start_mark)
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, str) and key in seen:  # YAML would keep the last silently
                    raise yaml.constructor.ConstructorError(
                        None, None, f"setting {key!r} is given twice", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES:,} bytes",
                          hint="a settings file is a few lines")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {e.start}: "
                          f"{raw[e.start:e.start + 1]!r})") from None
    try:
        data = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader
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
    for key, value in data.items():  # each value on its own: the error names the file
        if value is None:
            continue
        try:
            if key in _RUN_KEYS:
                _RUN_KEYS[key](key, value)
            else:
                convert_scoring_value(key, value)
        except ConfigError as e:
            raise ConfigError(f"config file {path}: {e.message}", hint=e.hint) from None
    return data


# Config files larger than this are refused (a settings file is a few hundred bytes).
MAX_CONFIG_BYTES = 1 << 20


def _check_keys(values: Mapping[str, Any], *, where: str) -> None:
    for key in values:
        if key not in CONFIG_KEYS and key != "thresholds":
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
    return ScoreConfig(**merged)


__all__ = ["CONFIG_KEYS", "DEFAULT_BOOTSTRAP", "DEFAULT_MAX_TOKENS", "DEFAULT_SEED", "ENGINES",
           "ENVIRONMENT_KEYS", "MAX_BOOTSTRAP", "MAX_BOOTSTRAP_WORK", "manifest_config",
           "ON_EMPTY_REFERENCES",
           "ON_LONG_TEXT", "ON_MISSING", "ScoreConfig", "Threshold", "load_config_file",
           "resolve_config"]
