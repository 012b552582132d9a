"""Library entry points: composition only, no rules of their own."""

from __future__ import annotations

import inspect
import re
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from pipeline.aggregate import MetricAggregate
from pipeline.config import DEFAULT_SEED, ScoreConfig, ScoringSettings
from pipeline.config_checks import parse_run_date
from pipeline.errors import ConfigError, ExecutionError, InputError, PipelineError
from pipeline.metrics.base import as_list, check_texts, text_list
from pipeline.metrics.base import reference_lists as base_reference_lists
from pipeline.scoring import DEFAULT_METRICS, Scorer

if TYPE_CHECKING:  # pandas is only needed for the annotation; importing it costs ~0.6 s
    import pandas as pd  # in every process (the CLI and each Ray worker import this module)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def reference_lists(references: Any) -> list[list[str | None]]:
    """The ``references`` argument of :func:`score_texts` / :func:`score_corpus`, checked.

    One item per prediction: a reference text (one reference) or a list of reference texts
    (then :func:`pipeline.metrics.base.reference_lists` checks them, as the scorer does). A
    bare string as the whole argument is refused rather than guessed: it would be read as
    one reference per character (``score_texts(["a", "b"], "ab")``); one prediction with
    one reference is ``["..."]`` or ``[["..."]]``.

    Returns:
        One list of reference texts per example.

    Raises:
        TypeError: a bare str or a dict as ``references``; an item (or an item's
            reference) that is not a text: a dict, a number, None as a whole item (names
            its position and type).

    """
    items = as_list(references, name="references",
                    what="reference lists (one per prediction: a text or a list of texts)")
    for i, item in enumerate(items):
        if item is None:
            raise TypeError(f"references[{i}] must be a reference text or a list of them, "
                            "got None")
    return base_reference_lists([[r] if isinstance(r, str) else r for r in items])


def _id_array(ids: Any, n: int) -> pa.Array:
    """``score_corpus``'s ``ids``, checked: N non-null ids, all strings or all int64.

    Raises:
        TypeError: a bare str or a dict.
        InputError: another count than N; null ids; an id neither a string nor an integer
            (a float, a bool); strings mixed with integers; an integer outside int64.

    """
    import numbers

    values = as_list(ids, name="ids", what="ids")
    if len(values) != n:
        raise InputError(f"ids: {len(values)} ids for {n} predictions")
    nulls = sum(v is None for v in values)
    if nulls:
        raise InputError(f"ids: {nulls} null ids")
    kinds: dict[str, int] = {}
    for i, v in enumerate(values):
        if isinstance(v, str):
            kinds.setdefault("str", i)
        elif isinstance(v, numbers.Integral) and not isinstance(v, bool):
            kinds.setdefault("int", i)
            if not -2**63 <= int(v) < 2**63:
                raise InputError(f"ids: ids[{i}] = {int(v)} does not fit int64 (integer ids "
                                 "are int64, as a run's id column)",
                                 hint="give such ids as strings")
        else:
            raise InputError(f"ids: ids[{i}] is a {type(v).__name__} ({_short(v)}); ids are "
                             "strings or integers")
    if len(kinds) > 1:
        a, b = sorted(kinds.values())
        raise InputError(f"ids: mixed types, ids[{a}] is {type(values[a]).__name__} "
                         f"{_short(values[a])} and ids[{b}] is {type(values[b]).__name__} "
                         f"{_short(values[b])}; ids are all strings or all integers")
    if "int" in kinds:
        return pa.array([int(v) for v in values], pa.int64())
    return pa.array(values, pa.string())


def score_texts(
    predictions: Sequence[str | None],
    references: Sequence[str | Sequence[str]],
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    max_tokens: int | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Score predictions against references in memory (for notebooks and small jobs).

    Defaults reproduce google-research rouge-score 0.1.2 (``RougeScorer`` without stemming;
    ``score_multi`` for several references) float for float.

    Args:
        predictions: N prediction texts.
        references: N items, each one reference text or a list of reference texts.
        metrics: metric names (``rouge1``..``rouge9``, ``rougeL``, ``rougeLsum`` and the
            other families', see ``pipeline.metrics.registry.names()``).
        max_tokens: cut texts longer than this many tokens (None: no limit, as rouge-score).
        options: family options by their config-file key, e.g. ``stemmer="porter"``,
            ``tokenizer="unicode"``, ``multi_reference="pooled"`` (``configs/default.yaml``
            lists every key).

    Returns:
        A DataFrame with N rows in input order and the columns of
        :attr:`pipeline.scoring.ScoredBatch.table`, plus a bool ``truncated`` column when
        ``max_tokens`` is set.

    Raises:
        ConfigError: unknown metric, option or value.
        ValueError: predictions and references differ in length.
        TypeError: a bare string as ``predictions`` or ``references`` (never split into
            characters), a dict (never taken as its keys), or an item that is not a text
            (see :func:`pipeline.metrics.base.text_list`, :func:`reference_lists`).

    """
    texts = text_list(predictions)
    refs = reference_lists(references)
    scorer = Scorer(metrics=tuple(metrics), max_tokens=max_tokens, **options)
    scored = scorer.score_batch(texts, refs)
    frame = scored.table.to_pandas()
    if scored.truncated is not None:
        frame["truncated"] = scored.truncated
    return frame


@dataclass(frozen=True)
class CorpusScores(Mapping[str, MetricAggregate]):
    """The result of :func:`score_corpus`: per metric its aggregate, by name.

    A mapping ``metric -> MetricAggregate`` (``result["bleu"].score.value`` is corpus BLEU,
    ``result["rouge1"].score.value`` the mean ROUGE-1 F-measure), as HF evaluate's
    ``compute()`` returns a dict by metric and sacrebleu's ``corpus_score`` a score object.

    Attributes:
        metrics: by metric name, in the order asked (see
            :class:`pipeline.aggregate.MetricAggregate`).
        table: the long-format aggregate table, as ``overlap score`` writes
            ``aggregate.parquet`` (one ``all`` row per metric, measure and statistic).
        signature: the signature string (settings, references per example, bootstrap).
        n_examples: examples scored.

    """

    metrics: dict[str, MetricAggregate]
    table: pa.Table
    signature: str
    n_examples: int

    def __getitem__(self, metric: str) -> MetricAggregate:
        """The aggregate of ``metric``."""
        return self.metrics[metric]

    def __iter__(self) -> Iterator[str]:
        """The metric names, in order."""
        return iter(self.metrics)

    def __len__(self) -> int:
        """The number of metrics."""
        return len(self.metrics)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``signature``, ``n_examples`` and per metric its ``to_dict()``."""
        return {"signature": self.signature, "n_examples": self.n_examples,
                **{m: a.to_dict() for m, a in self.metrics.items()}}


def score_corpus(
    predictions: Sequence[str | None],
    references: Sequence[str | Sequence[str]],
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    ids: Sequence[str | int] | None = None,
    max_tokens: int | None = None,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    **options: Any,
) -> CorpusScores:
    """Score predictions in memory and aggregate them: per metric one score with its interval.

    What HF evaluate's ``compute()`` and sacrebleu's ``corpus_score`` return: for ROUGE,
    token F1 and the other mean metrics, the mean of each measure; for BLEU and chrF the
    corpus score from statistics summed over the examples (corpus BLEU is not the mean of
    sentence BLEU; that mean is in ``means``), with BLEU's breakdown (n-gram precisions,
    brevity penalty, length ratio, lengths) as sacrebleu's ``BLEUScore`` has it. Every
    value has a Poisson-bootstrap percentile interval. The per-example scores are
    :func:`score_texts`'s and the aggregate is computed by :func:`pipeline.aggregate.aggregate`,
    the code ``overlap score`` runs: with the same ``ids``, seed and settings the table is
    the run's ``aggregate.parquet``, value for value.

    Args:
        predictions: N prediction texts, N >= 1.
        references: N items, each one reference text or a list of reference texts.
        metrics: metric names (see :func:`score_texts`).
        ids: N example ids (strings or integers), which key each example's bootstrap
            weights as a run's id column does; None: the position 0..N-1 keys them.
        max_tokens: cut texts longer than this many tokens (None: no limit).
        n_bootstrap: bootstrap resamples, >= 0 (0: no interval).
        confidence: interval level, in (0, 1).
        seed: the bootstrap's seed, >= 0.
        options: family options by their config-file key (see :func:`score_texts`).

    Returns:
        A :class:`CorpusScores` mapping each metric to its aggregate.

    Raises:
        ConfigError: unknown metric, option or value; ``n_bootstrap``, ``confidence`` or
            ``seed`` out of range (``n_bootstrap`` beyond the memory, beyond
            :data:`~pipeline.config.MAX_BOOTSTRAP`, or over N beyond
            :data:`~pipeline.config.MAX_BOOTSTRAP_WORK`).
        InputError: no prediction; ``ids`` of another length than ``predictions``, null,
            neither strings nor integers, strings mixed with integers, or integers outside
            int64.
        ValueError: predictions and references differ in length.
        TypeError: a bare string or a dict as ``predictions``, ``references`` or ``ids``,
            or an item that is not a text (as :func:`score_texts`).

    """
    from pipeline.aggregate import aggregate, metric_aggregates

    texts = text_list(predictions)
    refs = reference_lists(references)
    id_values = _id_array(ids, len(texts)) if ids is not None else None
    # the settings are checked (n_bootstrap against the machine's memory too) before any
    # text is scored
    settings = ScoreConfig(scoring=ScoringSettings.from_values(metrics=tuple(metrics),
                                                               max_tokens=max_tokens,
                                                               **options),
                           bootstrap=n_bootstrap, confidence=confidence, seed=seed)
    settings.check_bootstrap_work(len(texts))
    table = Scorer(settings.scoring).score_batch(texts, refs).table
    id_column = None
    if id_values is not None:
        id_column = "__id__"
        table = table.append_column(id_column, id_values)
    counts = set(table.column("n_references").to_pylist())
    n_references: int | str = counts.pop() if len(counts) == 1 else "var"
    specs = settings.scoring.specs()
    agg = aggregate(table, metrics=specs, n_bootstrap=n_bootstrap, confidence=confidence,
                    seed=seed, id_column=id_column)
    return CorpusScores(metric_aggregates(agg, specs), agg,
                        str(settings.signature(n_references=n_references)), table.num_rows)


@dataclass(frozen=True)
class ScoreRun:
    """The result of :func:`score`.

    Attributes:
        output: the run directory as given.
        run_id: the run's id.
        signature: the run's signature string.
        aggregate: the aggregate table (as written to ``aggregate.parquet``).
        manifest: the manifest (as written to ``manifest.json``).

    """

    output: str
    run_id: str
    signature: str
    aggregate: pa.Table
    manifest: dict[str, Any]

    @property
    def n_examples(self) -> int:
        """Examples scored."""
        return int(self.manifest["counts"]["examples_scored"])


def score(
    predictions: str,
    *,
    output: str,
    references: str | None = None,
    config: ScoreConfig | None = None,
    run_id: str | None = None,
    overwrite: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    defer_engine_stop: bool = False,
) -> ScoreRun:
    """Score Parquet predictions against references and write a run directory.

    Composition of :mod:`pipeline.engine` (plan, split/check/score on the chosen engine),
    :mod:`pipeline.aggregate` and :mod:`pipeline.io` (staging, atomic publish). Output:
    ``output/examples/part-*.parquet``, ``output/aggregate.parquet``,
    ``output/manifest.json``, then ``output/_SUCCESS`` (docs/outputs.md lists every column).

    Work goes to a staging directory beside ``output`` (named after the inputs and settings)
    and is moved into place when complete. When a run is interrupted (killed driver,
    infrastructure failure), its staging directory stays; running the same call again
    resumes it under the same run id: only partitions without a completion marker are
    scored (``manifest["stages"]`` counts what was run and reused).

    Args:
        predictions: a Parquet file, a directory of shards or a glob (path or URI).
        output: the run directory to create (path or URI).
        references: a separate references table (file, directory or glob), or None when
            the predictions table has a list<string> references column.
        config: the settings (default: :class:`~pipeline.config.ScoreConfig` defaults).
        run_id: the run's id (letters, digits, ``.``, ``_``, ``-``); default: the run id of
            an interrupted run of the same work, else UTC time and a random suffix.
        overwrite: replace a complete existing output.
        progress: called as ``progress(stage, done, total)`` after each partition of the
            ``check`` and ``score`` stages.
        defer_engine_stop: stop a local Ray instance started for the run when the process
            exits rather than before returning (the CLI prints the result first; Ray's
            shutdown takes 1-2 s). ``manifest["seconds"]`` then has no ``engine_stop``.

    Returns:
        A :class:`ScoreRun`.

    Raises:
        ConfigError: invalid settings or run id; an output inside an input or the reverse;
            an output that is the current directory or above it; a bootstrap whose work
            over the prediction rows is beyond the limit
            (:meth:`~pipeline.config.ScoreConfig.check_bootstrap_work`).
        MissingExtraError: the Ray engine chosen and Ray not installed (a ConfigError:
            exit 2), checked before anything is staged.
        InputError: missing, unreadable or empty files, missing columns, bad types, ids
            without references (or the reverse) or empty references unless the config
            skips them, duplicate ids, texts over ``max_tokens`` with
            ``on_long_text="error"``, no example left to score.
        OutputExistsError: a complete output exists and ``overwrite`` is False; the output
            holds anything else than a complete overlap output; the output is a symbolic
            link, or inside a complete run's directory (both refused before any work);
            another run holds the output's lock; a staged file of another run.
        ExecutionError: Ray or the storage failed.

    """
    from pipeline.config import manifest_config
    from pipeline.engine import make_plan
    from pipeline.engine.resume import run_key
    from pipeline.engine.run import choose_engine
    from pipeline.engine.session import score_on_engine
    from pipeline.io.manifest import write_run
    from pipeline.io.write import OutputDir, check_apart, check_output_place

    cfg = config or ScoreConfig()
    _use_storage(cfg)
    requested = check_run_id(run_id) if run_id is not None else None
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    check_apart(output, {"predictions": predictions, "references": references})
    check_output_place(output, may_be_run=True)
    _check_cluster_paths(cfg, {"--output": output, "PREDICTIONS": predictions,
                               "--references": references})
    plan = make_plan(predictions, references, cfg)
    cfg.check_bootstrap_work(plan.prediction_rows)  # bounded before anything is staged
    if choose_engine(cfg, plan)[0] == "ray":  # a missing extra: exit 2, nothing staged
        from pipeline.engine.ray_runner import require_ray

        require_ray()
    # An interrupted run of the same work (same inputs and settings) is resumed under its
    # run id, unless another run id is asked for.
    out = OutputDir(output, overwrite=overwrite, key=run_key(plan, cfg))
    run_id = requested or out.resumable_run_id() or new_run_id()
    resumed = out.prepare(run_id=run_id)
    seconds = {"plan": time.perf_counter() - t0}
    try:
        scored = score_on_engine(plan, cfg, out, run_id=run_id, seconds=seconds,
                                 progress=progress, defer_stop=defer_engine_stop)
        signature = str(scored.execution.signature)
        manifest = write_run(out, plan=plan, predictions=predictions, references=references,
                             config=manifest_config(cfg), run_id=run_id, signature=signature,
                             started=started, resumed=resumed, aggregate=scored.aggregate,
                             parts=scored.parts, engine=scored.engine, counts=scored.counts,
                             stages=scored.execution.stages,
                             task_seconds=scored.execution.task_seconds, seconds=seconds, t0=t0)
        out.publish(run_id=run_id)
    except PipelineError as e:
        # Bad input or settings: nothing worth keeping. Anything else (infrastructure
        # failure, interrupt, a bug) keeps the staging directory for a rerun to resume,
        # unless no partition was finished (e.g. the engine never started).
        if not isinstance(e, ExecutionError) or (not resumed and not out.has_progress()):
            out.abort()
        raise
    finally:
        out.release()
    return ScoreRun(output=out.final.uri, run_id=run_id, signature=signature,
                    aggregate=scored.aggregate, manifest=manifest)


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def new_run_id() -> str:
    """Make a fresh run id: UTC time to the second and 6 random hex digits."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` if it is safe in file names and paths.

    Safe: 1-128 letters, digits, ``.``, ``_`` or ``-``, the first a letter or digit.

    Raises:
        ConfigError: any other run id.

    """
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise ConfigError(f"run id {run_id!r}: use 1-128 letters, digits, '.', '_' or '-', "
                          "starting with a letter or digit")
    return run_id


def _use_storage(cfg: ScoreConfig) -> None:
    """Put the config's ``storage:`` section into force (:func:`pipeline.io.storage.apply`).

    Raises:
        ConfigError: a bad setting (also one of the ``OVERLAP_S3_*`` variables).

    """
    from pipeline.io import storage

    if cfg.storage:
        storage.apply(storage.from_mapping(cfg.storage))
    storage.current()  # a bad OVERLAP_S3_* variable fails here, before anything starts


def _check_cluster_paths(cfg: ScoreConfig, paths: dict[str, str | None]) -> None:
    """Refuse local paths for a cluster and check that this process can drive it.

    :func:`pipeline.io.files.check_shared`, then
    :func:`pipeline.engine.ray_runner.check_driver`.

    Raises:
        ConfigError: a local path with a cluster address, without ``allow_local_paths``.
        ExecutionError: the cluster cannot be reached or driven from here (one line).

    """
    from pipeline.engine.run import choose_engine
    from pipeline.io.files import check_shared

    address = cfg.resolved_address()
    if address and choose_engine(cfg)[0] == "ray":
        check_shared(paths, address=address, allow_local_paths=cfg.allow_local_paths)
        from pipeline.engine.ray_runner import check_driver, check_reachable

        check_reachable(address)  # before any lock or staging is made: fail in seconds
        check_driver(address)


def compare(
    baseline_dir: str,
    candidate_dir: str,
    *,
    output: str | None = None,
    measures: Sequence[str] | None = None,
    band: float | None = None,
    bands: dict[str, float] | None = None,
    confidence: float | None = None,
    n_bootstrap: int | None = None,
    seed: int | None = None,
    top: int | None = None,
    allow_signature_mismatch: bool = False,
    max_missing: float | None = None,
    adjust: str | None = None,
    history: str | Any | None = None,
    history_window: int | None = None,
    reference_run: str | None = None,
    engine: str = "auto",
    address: str | None = None,
    num_cpus: int | None = None,
    scratch: str | None = None,
    allow_local_paths: bool = False,
) -> Any:
    """Compare two runs and write ``compare.parquet`` and ``compare.json`` when asked.

    Composition of :func:`pipeline.compare.compare_runs` (see there for every option; None
    takes its default) on the engine (:func:`pipeline.engine.compare.compare_on_engine`:
    the runs are paired partition by partition and only sums reach this process) and
    :func:`pipeline.io.runs.write_comparison` (atomic writes).

    Args:
        baseline_dir: the baseline run (path or URI).
        candidate_dir: the candidate run.
        output: a directory to write the two files into (None: nothing written).
        measures: ``METRIC.MEASURE`` names (None: the primary measures).
        band: the bands' floor as a fraction of each measure's full scale.
        bands: floors in each measure's own units, by measure.
        confidence: interval level; alarms need an adjusted p below ``1 - confidence``.
        n_bootstrap: resamples.
        seed: resampling seed.
        top: moved examples to list.
        allow_signature_mismatch: compare runs scored differently.
        max_missing: tolerated fraction of a group's baseline examples missing.
        adjust: ``holm``, ``bh`` or ``none``.
        history: a nightly ROOT to learn bands and chart drift from, or a
            :class:`pipeline.compare.history.History` already read.
        history_window: nights of history used.
        reference_run: a run pinning the drift chart's reference level.
        engine: ``auto`` (a Ray cluster when an address is set or Ray is initialized in this
            process, else in-process), ``local`` (in-process, on every CPU) or ``ray`` (a
            local Ray instance, or the cluster at ``address``), as ``overlap score``.
        address: a Ray cluster address (None: ``RAY_ADDRESS`` if set).
        num_cpus: worker processes in-process, or CPUs of a local Ray (None: every CPU).
        scratch: a directory every worker reads for the comparison's temporary files (the
            exchange and the first pass's), deleted at the end. None: on a cluster, a hidden
            directory beside ``output`` (or beside the candidate run without one), on the
            same storage; in-process or on a local Ray, this machine's temporary directory.
        allow_local_paths: on a cluster, accept local paths (runs, output, scratch), for a
            single-host cluster; refused otherwise (exit 2) before anything starts.

    Returns:
        The :class:`pipeline.compare.RunComparison`.

    Raises:
        ConfigError: bad settings.
        InputError: incomplete or unreadable runs or history.
        OutputExistsError: ``output`` is in the way (a file, a symbolic link, a score run's
            directory or one inside it, comparison files compare did not write), refused
            before any work.
        ExecutionError: the output cannot be written.
        SignatureMismatchError: runs scored differently for a compared measure.
        ExecutionError: the engine failed (Ray could not start, a lost worker).

    """
    import functools

    from pipeline.compare import compare_runs
    from pipeline.engine.compare import compare_on_engine, scratch_base
    from pipeline.engine.run import choose_engine, make_runner

    settings = ScoreConfig(engine=engine, address=address, num_cpus=num_cpus,
                           allow_local_paths=allow_local_paths)
    _use_storage(settings)
    where, _ = choose_engine(settings)
    cluster = where == "ray" and settings.resolved_address() is not None
    if cluster:  # (the default scratch is beside the output or the candidate: checked)
        _check_cluster_paths(settings, {"BASELINE_DIR": baseline_dir,
                                        "CANDIDATE_DIR": candidate_dir,
                                        # a History already read needs no reading here
                                        "--history": history if isinstance(history, str)
                                        else None,
                                        "--output": output, "--scratch": scratch})
        scratch = scratch or scratch_base(output, candidate_dir)
    if output is not None:  # refused before any work, as write_comparison would refuse it
        # (after the cluster's checks: a local path or an unreachable address is told first,
        # before the output's storage is asked anything)
        from pipeline.io.runs import check_comparison_output

        check_comparison_output(output)
    given: dict[str, Any] = {
        "band": band, "confidence": confidence, "n_bootstrap": n_bootstrap, "seed": seed,
        "top": top, "max_missing": max_missing, "adjust": adjust,
        "history_window": history_window}
    runner = make_runner(settings, where)
    try:
        result = compare_runs(baseline_dir, candidate_dir, measures=measures, bands=bands,
                              allow_signature_mismatch=allow_signature_mismatch,
                              history=history, reference_run=reference_run,
                              engine=functools.partial(compare_on_engine, runner=runner,
                                                       scratch=scratch),
                              **{k: v for k, v in given.items() if v is not None})
    finally:
        runner.close()
    if output is not None:
        from pipeline.io.runs import write_comparison

        write_comparison(output, result.to_arrow(), result.to_document())
    return result


@dataclass(frozen=True)
class NightlyRun:
    """The result of :func:`nightly`.

    Attributes:
        exit_code: 0 no alarm (or a first night with nothing to compare with), 1 alarm, else
            the failing step's code (2 bad usage or input, 3 output held, 4 execution).
        run_dir: tonight's run directory.
        compare_dir: where the comparison was written (None: no comparison).
        baseline: the baseline run directory (None: none found).
        comparison: the :class:`pipeline.compare.RunComparison` (None: no comparison).
        error: the error that stopped the night (None: none).

    """

    exit_code: int
    run_dir: str
    compare_dir: str | None = None
    baseline: str | None = None
    comparison: Any = None
    error: PipelineError | None = None


def _staging_left(run_dir: str) -> bool:
    """Tell whether a failed score left a staging directory beside ``run_dir`` to resume."""
    import posixpath

    import pyarrow.fs as pafs

    from pipeline.io.runs import filesystem

    try:
        fs, path = filesystem(run_dir)
        head, name = posixpath.split(path.rstrip("/"))
        entries = fs.get_file_info(pafs.FileSelector(head, allow_not_found=True))
    except (PipelineError, OSError):
        return False
    return any(e.base_name.startswith(f".{name}.overlap-staging") for e in entries)


# What the nightly scores with unless told otherwise (SCORE_ARGS, a config file, ``config``):
# a prediction missing tonight is left out and counted, so that compare's ``missing`` alarm
# (exit 1, the night compared) reports it, not a failed score (exit 2, no comparison).
NIGHTLY_SCORE_DEFAULTS: dict[str, Any] = {"on_missing": "skip"}


def check_nightly_compare_options(compare_options: Mapping[str, Any] | None,
                                  config: ScoreConfig) -> None:
    """Check the nightly's compare options before tonight's run is scored.

    Compare's own checks of every option (:func:`pipeline.compare.comparison.check_options`),
    then what tonight's settings already tell: each measure asked for (``measures``, and
    the names in ``bands``) must be one tonight's run will have, and a ``reference_run``
    must be a complete run (its aggregate verified) scored as tonight's run for the metrics
    both have (unless ``allow_signature_mismatch``).

    Args:
        compare_options: keyword options of :func:`compare` (None values take defaults).
        config: tonight's scoring settings.

    Raises:
        ConfigError: an option out of range, or a measure tonight's run will not have.
        InputError: the reference run is not a complete, readable run.
        SignatureMismatchError: the reference run was scored differently.

    """
    from pipeline.compare.comparison import check_options
    from pipeline.compare.history import check_reference
    from pipeline.compare.measures import measures_of

    options = {k: v for k, v in (compare_options or {}).items() if v is not None}
    # the nightly always compares with --history ROOT (a reference run is then allowed)
    checked = inspect.signature(check_options).parameters  # the statistics' options
    check_options(history="ROOT", **{k: v for k, v in options.items()
                                     if k in checked and k != "history"})
    have = measures_of(config.scoring.specs())
    measures = list(options.get("measures") or ())
    for name in [*measures, *options.get("bands", {})]:
        if name not in have:
            raise ConfigError(f"measure {name!r}: tonight's run will not have it",
                              hint=f"it will have {', '.join(have)}")
    unwanted = [name for name in options.get("bands", {}) if measures and name not in measures]
    if unwanted:
        raise ConfigError(f"--band given for {', '.join(unwanted)}, which is not compared",
                          hint=f"the compared measures are {', '.join(measures)}")
    reference = options.get("reference_run")
    if reference is not None:
        from pipeline.io.runs import read_aggregate

        metrics = tuple(dict.fromkeys(m.split(".")[0] for m in measures)) \
            or config.scoring.metrics
        check_reference(read_aggregate(str(reference)),
                        signature=config.signature(n_references=1), config=config.to_dict(),
                        metrics=metrics,
                        allow_mismatch=bool(options.get("allow_signature_mismatch")))


def _interrupted_run_id(date_dir: str, predictions: str, references: str | None,
                        config: ScoreConfig) -> str | None:
    """The run id of an interrupted run of tonight's work under ``ROOT/run_date=DATE``.

    A nightly without ``RUN_ID`` draws a fresh id, so its run directory (and the staging
    beside it) would differ on every attempt: this finds the staging directory of the same
    work (:func:`pipeline.engine.resume.run_key`: same inputs and settings) left by an
    attempt that did not finish, so that running the same command again resumes it.

    Returns:
        The run id, or None (nothing to resume, or the inputs cannot be planned: the score
        says why).

    """
    import pyarrow.fs as pafs

    from pipeline.io.runs import filesystem

    try:
        fs, path = filesystem(date_dir)
        entries = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except (PipelineError, OSError):
        return None
    staged = [e.base_name for e in entries if e.type == pafs.FileType.Directory
              and e.base_name.startswith(".run_id=") and ".overlap-staging-" in e.base_name]
    if not staged:
        return None
    from pipeline.engine import make_plan
    from pipeline.engine.resume import run_key
    from pipeline.io.write import OutputDir

    try:
        key = run_key(make_plan(predictions, references, config), config)
    except PipelineError:
        return None
    for name in sorted(staged):
        head, _, tail = name.partition(".overlap-staging-")
        run_id = head.removeprefix(".run_id=")
        if tail != key or not _RUN_ID.fullmatch(run_id):
            continue
        try:
            out = OutputDir(f"{date_dir}/run_id={run_id}", overwrite=False, key=key)
            if not out.is_complete() and out.resumable_run_id() == run_id:
                return run_id  # one still running holds its lock: the score says so (exit 3)
        except (PipelineError, OSError):
            continue
    return None


def draw_delta_plot(comparison: Any, uri: str) -> None:
    """Draw :func:`pipeline.plots.plot_deltas` to a local path, or to a URI (object storage).

    For a URI the PNG is drawn in a local temporary directory and copied to ``uri`` through
    an atomic write (matplotlib writes local files only).

    Raises:
        InputError, OutputExistsError: as :func:`pipeline.plots.plot_deltas`.
        ExecutionError: the storage refused the upload.

    """
    import shutil
    import tempfile

    from pipeline.io.files import locate
    from pipeline.io.write import write_bytes
    from pipeline.plots import plot_deltas

    if locate(uri).fs.type_name == "local":
        plot_deltas(comparison, locate(uri).path)
        return
    here = tempfile.mkdtemp(prefix="overlap-plot-")
    try:
        local = f"{here}/delta.png"
        plot_deltas(comparison, local)
        with open(local, "rb") as fh:
            write_bytes(fh.read(), locate(uri))
    finally:
        shutil.rmtree(here, ignore_errors=True)


def _day_before(run_date: str) -> str:
    """``YYYY-MM-DD`` of the day before ``run_date`` (a valid ``YYYY-MM-DD``)."""
    from datetime import date, timedelta

    return (date.fromisoformat(run_date) - timedelta(days=1)).isoformat()


def _earlier_nights(root: str, run_dir: str, *, run_date: str, window: int | None) -> Any:
    """The history of a night: the nights of ROOT before ``run_date``, never tonight's.

    :func:`pipeline.compare.history.read_history` keeps the newest run of every date on or
    before the candidate's; a retried night (a second run of tonight's date) would learn
    its bands and drift from its own first attempt. Tonight's date is left out here.

    Args:
        root: the nightly ROOT.
        run_dir: tonight's complete run.
        run_date: tonight's ``YYYY-MM-DD``.
        window: nights of history (None: the compare default).

    Returns:
        A :class:`pipeline.compare.history.History` of at most ``window`` earlier dates.

    Raises:
        InputError: tonight's run or ROOT cannot be read.
        ConfigError: ``window`` < 1.

    """
    from pipeline.compare.bands import DEFAULT_HISTORY_WINDOW
    from pipeline.compare.history import History, read_history
    from pipeline.io.runs import open_run

    window = DEFAULT_HISTORY_WINDOW if window is None else window
    if window < 1:
        raise ConfigError(f"history_window must be >= 1, got {window}")
    past = read_history(root, candidate=open_run(run_dir), window=window + 1)
    nights = tuple(n for n in past.nights if n.run_date < run_date)[-window:]
    return History(past.source, nights, window, past.notes)


class _NightEnded(Exception):
    """A step of :func:`nightly` ended the night early; ``run`` is what it returns."""

    def __init__(self, run: NightlyRun) -> None:
        super().__init__(run.exit_code)
        self.run = run


@dataclass(frozen=True)
class _Night:
    """Where tonight's run and comparison go: ``ROOT/[compare/]run_date=DATE/run_id=ID``."""

    root: str  # as given (for messages)
    base: str  # ROOT without a trailing slash
    run_date: str
    run_id: str
    resuming: bool  # run_id is that of an interrupted attempt of the same work

    @property
    def run_dir(self) -> str:
        return f"{self.base}/run_date={self.run_date}/run_id={self.run_id}"

    @property
    def compare_dir(self) -> str:
        return f"{self.base}/compare/run_date={self.run_date}/run_id={self.run_id}"

    @property
    def again(self) -> str:
        return f"run again with RUN_DATE={self.run_date} RUN_ID={self.run_id}"


def _check_night(run_date: str, run_id: str | None, config: ScoreConfig,
                 compare_options: dict[str, Any] | None, baseline: str | None) -> None:
    """Step 0 of :func:`nightly`: check what can be checked before anything is written.

    Raises:
        _NightEnded: a bad run date, run id, compare option or baseline (exit 2 or 3).

    """
    try:
        parse_run_date(run_date)
    except ConfigError as err:
        raise _NightEnded(NightlyRun(err.exit_code, "", error=err)) from None
    try:
        if run_id is not None:
            check_run_id(run_id)
    except ConfigError:
        error = ConfigError(f"RUN_ID must be 1-128 letters, digits, '.', '_' or '-' starting "
                            f"with a letter or digit, got {run_id!r}")
        raise _NightEnded(NightlyRun(error.exit_code, "", error=error)) from None
    try:
        check_nightly_compare_options(compare_options, config)
    except PipelineError as err:
        bad = type(err)(f"compare options: {err.message}", hint=err.hint)
        raise _NightEnded(NightlyRun(bad.exit_code, "", error=bad)) from None
    from pipeline.io.runs import read_aggregate

    if baseline is not None:
        try:  # a baseline that is no complete run fails now, not after tonight's score
            read_aggregate(baseline)
        except PipelineError as err:
            bad = type(err)(f"BASELINE: {err.message}", hint=err.hint)
            raise _NightEnded(NightlyRun(bad.exit_code, "", error=bad)) from None


def _check_publish_target(publish_options: dict[str, Any] | None) -> None:
    """Refuse, before tonight's score, a publish target that can never work.

    Raises:
        _NightEnded: ``iceberg`` is a plain path, or ``iceberg`` without ``namespace``
            (exit 2).

    """
    iceberg = (publish_options or {}).get("iceberg")
    if iceberg is None:
        return
    from pipeline.warehouse.iceberg import check_catalog_argument, parse_namespace

    try:
        check_catalog_argument(iceberg)
        parse_namespace((publish_options or {}).get("namespace"))
    except PipelineError as err:
        bad = type(err)(f"PUBLISH_ARGS: {err.message}", hint=err.hint)
        raise _NightEnded(NightlyRun(bad.exit_code, "", error=bad)) from None


def _place_night(root: str, run_date: str, run_id: str | None, predictions: str,
                 references: str | None, config: ScoreConfig) -> _Night:
    """Tonight's run id (given, that of an interrupted attempt, or new) and directories.

    Raises:
        _NightEnded: ROOT is a file (exit 2).

    """
    from pipeline.io.runs import filesystem

    base = root.rstrip("/") or root
    resuming = None if run_id is not None else _interrupted_run_id(
        f"{base}/run_date={run_date}", predictions, references, config)
    night = _Night(root, base, run_date, run_id or resuming or new_run_id(), bool(resuming))
    try:
        fs, path = filesystem(base)
        is_file = fs.get_file_info(path).type.name == "File"
    except (PipelineError, OSError):
        is_file = False
    if is_file:
        not_dir = InputError(f"ROOT {root} is not a directory",
                             hint="name a directory (new or holding earlier nights)")
        raise _NightEnded(NightlyRun(not_dir.exit_code, "", error=not_dir))
    return night


def _score_night(night: _Night, predictions: str, references: str | None,
                 config: ScoreConfig, log: Callable[[str], None]) -> None:
    """Step 1 of :func:`nightly`: score tonight's run, or reuse it when it is finished.

    The ``scoring into`` line is logged once the score is under way, so bad input gives
    one line (the error); directories the night created (ROOT, its ``run_date=``
    directory) are removed again by the score when it fails and leaves them empty
    (:meth:`pipeline.io.write.OutputDir.release`).

    Raises:
        _NightEnded: the score failed (its exit code; no comparison).
        KeyboardInterrupt: re-raised after a line on how to resume.

    """
    from pipeline.io.runs import filesystem

    run_dir = night.run_dir
    try:
        fs, path = filesystem(run_dir)
        done = fs.get_file_info(f"{path}/_SUCCESS").type.name == "File"
    except (PipelineError, OSError):
        done = False
    if done:
        log(f"reusing the finished run {run_dir}")
        return
    started = [f"resuming the interrupted run {run_dir}" if night.resuming else
               f"scoring into {run_dir}"]

    def said_started(stage: str = "score", *_: int) -> None:
        # said once the score is under way (its inputs passed the check stage), so that
        # bad input gives the error line alone
        if stage == "score" and started:
            log(started.pop())

    try:
        score(predictions, references=references, output=run_dir, config=config,
              run_id=night.run_id, progress=said_started)
    except KeyboardInterrupt as interrupt:
        said_started()
        # the CLI says it in its one line about the interrupt (exit 130 or 143)
        interrupt.resume_hint = (  # type: ignore[attr-defined]
            f"while scoring {run_dir}; to resume, {night.again}")
        raise
    except PipelineError as error:
        resume = f"; to resume, {night.again}" if _staging_left(run_dir) else ""
        log(f"overlap score failed (exit {error.exit_code}): {error}; no comparison"
            + resume)
        raise _NightEnded(NightlyRun(error.exit_code, run_dir, error=error)) from None
    said_started()


def _publish_run(night: _Night, publish_options: dict[str, Any],
                 log: Callable[[str], None]) -> None:
    """Step 2 of :func:`nightly`: publish tonight's run.

    Raises:
        _NightEnded: the publish failed (its exit code; no comparison).

    """
    log(f"publishing {night.run_dir}")
    try:
        publish(night.run_dir, run_date=night.run_date, **publish_options)
    except PipelineError as error:
        log(f"overlap publish failed (exit {error.exit_code}): {error}; run it again to "
            "complete")
        raise _NightEnded(NightlyRun(error.exit_code, night.run_dir, error=error)) from None


def _previous_night(night: _Night, compare_options: dict[str, Any] | None,
                    log: Callable[[str], None]) -> str | None:
    """Step 3 of :func:`nightly`: the newest comparable run dated before tonight.

    One night per date: other runs of tonight's date are attempts of this night (a retry,
    with or without RUN_ID), never its baseline: the previous night is. Newer runs with no
    measure in common with tonight's, or scored otherwise for the compared measures (their
    signatures differ, as compare would refuse them; kept with
    ``--allow-signature-mismatch``), are passed over, one log line each.

    Returns:
        Its run directory, or None: no earlier run under ROOT (a first night).

    Raises:
        _NightEnded: earlier runs, none with a measure in common with tonight's or every one
            scored otherwise (exit 2; tonight's run is kept).

    """
    from pipeline.compare.history import comparable_baseline

    options = compare_options or {}
    found, skipped = comparable_baseline(
        night.base, run_date=_day_before(night.run_date), candidate=night.run_dir,
        measures=options.get("measures"),
        allow_signature_mismatch=bool(options.get("allow_signature_mismatch")))
    if found is None and skipped and all(p.reason == "measures" for p in skipped):
        none = InputError(f"no earlier run under {night.root} has a measure in common with "
                          f"tonight's (the last one: {skipped[0].path})",
                          hint="compare with a run of your choice with --baseline "
                               "RUN_DIR (env BASELINE), or choose the measures with "
                               "COMPARE_ARGS=\"--metrics ...\"")
        log(str(none))
        raise _NightEnded(NightlyRun(none.exit_code, night.run_dir, error=none))
    for passed in skipped:
        why = ("it has no measure in common with tonight's" if passed.reason == "measures"
               else f"it was scored otherwise ({passed.detail}; its value vs tonight's)")
        log(f"passing over {passed.path} as the baseline: {why}")
    if found is None and skipped:
        # Tonight's settings differ from every earlier night's: the night is scored and kept
        # (later nights scored alike compare with it) but nothing checked it for a change,
        # which an unattended loop must not report as a pass.
        changed = InputError(
            f"no earlier run under {night.root} was scored as tonight's, so nothing checked "
            f"tonight's run for a change (the newest: {skipped[0].path}); tonight's run is "
            "kept and later nights scored alike compare with it",
            hint="compare anyway with COMPARE_ARGS=\"--allow-signature-mismatch\", or with "
                 "a run of your choice with --baseline RUN_DIR (env BASELINE)")
        log(str(changed))
        raise _NightEnded(NightlyRun(changed.exit_code, night.run_dir, error=changed))
    return None if found is None else found.path


def _compare_night(night: _Night, baseline: str, config: ScoreConfig,
                   compare_options: dict[str, Any] | None,
                   log: Callable[[str], None]) -> Any:
    """Step 4 of :func:`nightly`: compare with the baseline and ROOT's earlier nights.

    The config file's cluster keys (``scratch``, ``allow_local_paths``) apply unless the
    compare options say otherwise.

    Raises:
        _NightEnded: the compare failed (its exit code).

    """
    log(f"comparing {night.run_dir} with {baseline}")
    try:
        options = dict(compare_options or {})
        if config.scratch and not options.get("scratch"):
            options["scratch"] = config.scratch
        if config.allow_local_paths:
            options.setdefault("allow_local_paths", True)
        history = _earlier_nights(night.base, night.run_dir, run_date=night.run_date,
                                  window=options.pop("history_window", None))
        return compare(baseline, night.run_dir, output=night.compare_dir, history=history,
                       **options)
    except PipelineError as error:
        log(f"overlap compare failed (exit {error.exit_code}): {error}; to redo it, "
            f"{night.again}")
        raise _NightEnded(NightlyRun(error.exit_code, night.run_dir, night.compare_dir,
                                     baseline, error=error)) from None


def _draw_night(night: _Night, baseline: str, result: Any, *, plot: bool | None,
                write_report: bool, log: Callable[[str], None]) -> None:
    """Step 5 of :func:`nightly`: ``delta.png`` and ``report.html``; failures only logged.

    ``plot`` None (not asked for either way): drawn when matplotlib is installed, skipped
    without a word when it is not (the ``plots`` extra is optional, and a night is no place
    for a warning nobody asked for).
    """
    if plot is None:
        import importlib.util

        plot = importlib.util.find_spec("matplotlib") is not None
    if plot:
        try:
            # on object storage: drawn here, then uploaded beside compare.json
            draw_delta_plot(result.comparison, f"{night.compare_dir}/delta.png")
        except Exception as error:  # noqa: BLE001 - a picture must not change the verdict
            log(f"warning: the plot was not drawn: {error}")
    if write_report:
        try:
            report(night.run_dir, output=f"{night.compare_dir}/report.html",
                   baseline=baseline, comparison=f"{night.compare_dir}/compare.json")
        except PipelineError as error:
            log(f"overlap report failed: {error}; the comparison stands")


def _publish_comparison(night: _Night, baseline: str, result: Any,
                        publish_options: dict[str, Any], log: Callable[[str], None]) -> None:
    """Publish tonight's comparison (table ``comparisons``).

    Raises:
        _NightEnded: the publish failed (its exit code; the verdict is logged).

    """
    code = 1 if result.alarm else 0
    log(f"publishing {night.compare_dir}")
    try:
        publish(night.compare_dir, run_date=night.run_date, **publish_options)
    except PipelineError as error:
        log(f"overlap publish of the comparison failed (exit {error.exit_code}): {error}; "
            f"the comparison says {'ALARM' if code else 'no alarm'}; to complete, "
            f"{night.again}")
        raise _NightEnded(NightlyRun(error.exit_code, night.run_dir, night.compare_dir,
                                     baseline, result, error=error)) from None


def nightly(
    root: str,
    predictions: str,
    references: str | None = None,
    *,
    run_date: str | None = None,
    run_id: str | None = None,
    config: ScoreConfig | None = None,
    baseline: str | None = None,
    compare_options: dict[str, Any] | None = None,
    publish_options: dict[str, Any] | None = None,
    write_report: bool = False,
    plot: bool | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> NightlyRun:
    """One night of the nightly loop: score, publish, compare with history, report.

    0. Check ``compare_options`` (:func:`check_nightly_compare_options`) and that
       ``baseline`` is a complete run: a bad one stops the night before anything is
       written.
    1. Score ``predictions`` into ``ROOT/run_date=DATE/run_id=ID`` (a finished run of the
       same date and id is reused; an interrupted one resumes, also without ``run_id``: the
       interrupted attempt of the same inputs and settings that date is found by its
       staging directory). Missing predictions are left out and counted
       (:data:`NIGHTLY_SCORE_DEFAULTS`, unless ``config`` says otherwise), so compare's
       ``missing`` alarm reports them.
    2. With ``publish_options``, publish it (:func:`publish`, ``run_date`` set); a failure
       stops the night. After step 4, the comparison is published too (table
       ``comparisons``); a failure returns its exit code (the verdict is logged).
    3. The baseline: ``baseline``, else the newest complete run under ROOT dated before
       tonight (a date is one night: other runs of tonight's date are attempts of this
       night, a retry with or without ``run_id``), with a measure in common with tonight's
       and scored as tonight's for the compared measures (newer runs without one, or
       scored otherwise, are passed over, one log line each saying why;
       :func:`pipeline.compare.history.comparable_baseline`). No run at all: the night
       ends with 0 (a first night); runs but none with a measure in common, or every one
       scored otherwise: exit 2 naming the newest and ``--baseline`` (tonight's run is kept,
       so the nights after it compare with it).
    4. Compare (:func:`compare` with the history of ROOT's earlier dates, never tonight's
       other attempts) into
       ``ROOT/compare/run_date=DATE/run_id=ID/`` (``compare.json``, ``compare.parquet``,
       and ``delta.png``: with ``plot`` None when matplotlib is installed, with True
       always, with False never; a plot that fails is only logged, and a missing
       matplotlib only when ``plot`` is True).
    5. With ``write_report``, write ``report.html`` there (:func:`report`, reading that
       ``compare.json``); a failure is logged, the comparison stands.

    ROOT is a path or URI taken literally (spaces, newlines, globs, a leading ``-``).

    Args:
        root: the nightly ROOT.
        predictions: tonight's predictions (file, directory or glob).
        references: a separate references table, or None.
        run_date: ``YYYY-MM-DD`` (default: today in UTC).
        run_id: tonight's run id (default: that of an interrupted attempt of the same work
            that date, else :func:`new_run_id`).
        config: scoring settings (default: :class:`ScoreConfig` with
            :data:`NIGHTLY_SCORE_DEFAULTS`).
        baseline: a run to compare with instead of the last complete one.
        compare_options: keyword options of :func:`compare` (``measures``, ``band``,
            ``bands``, ``adjust``...), never ``output`` or ``history``.
        publish_options: keyword options of :func:`publish` (``delta``, ``iceberg``...), or
            None: not published.
        write_report: also write the HTML report.
        plot: draw ``delta.png``: None (default) when matplotlib (extra ``plots``) is
            installed; True: always, a failure logged as a warning; False: never.
        log: called with each progress line (the CLI prints them on stderr).

    Returns:
        A :class:`NightlyRun`; errors of a step are returned in it, never raised.

    Raises:
        KeyboardInterrupt: Ctrl-C or SIGTERM while scoring; its ``resume_hint`` reads
            ``while scoring ROOT/run_date=D/run_id=ID; to resume, run again with
            RUN_DATE=D RUN_ID=ID``.

    """
    run_date = run_date or datetime.now(timezone.utc).strftime("%Y-%m-%d")
    config = config or ScoreConfig(**NIGHTLY_SCORE_DEFAULTS)
    try:
        _check_night(run_date, run_id, config, compare_options, baseline)
        _check_publish_target(publish_options)
        night = _place_night(root, run_date, run_id, predictions, references, config)
        _score_night(night, predictions, references, config, log)
        if publish_options is not None:
            _publish_run(night, publish_options, log)
        if baseline is None:
            baseline = _previous_night(night, compare_options, log)
        if baseline is None:
            log(f"no earlier successful run under {root}; nothing to compare with")
            return NightlyRun(0, night.run_dir)
        result = _compare_night(night, baseline, config, compare_options, log)
        _draw_night(night, baseline, result, plot=plot, write_report=write_report, log=log)
        if publish_options is not None:
            _publish_comparison(night, baseline, result, publish_options, log)
    except _NightEnded as ended:
        return ended.run
    code = 1 if result.alarm else 0
    log("ALARM: read " + f"{night.compare_dir}/compare.json and the examples that moved"
        if code else "no alarm")
    return NightlyRun(code, night.run_dir, night.compare_dir, baseline, result)


def publish(
    run_dir: str,
    *,
    delta: str | None = None,
    iceberg: str | None = None,
    namespace: str | None = None,
    warehouse: str | None = None,
    labels: Sequence[str] = (),
    run_date: str | None = None,
) -> list[Any]:
    """Append a complete run to Delta Lake and/or Iceberg tables ``examples`` and ``aggregates``.

    A comparison output (``compare.json`` and ``compare.parquet``: ``overlap compare
    --output``, a nightly's ``ROOT/compare/run_date=D/run_id=ID``) is appended to the table
    ``comparisons`` instead (:mod:`pipeline.warehouse.comparisons`), idempotent per
    comparison.

    Composition of :func:`pipeline.warehouse.common.load_run` and the format modules
    :mod:`pipeline.warehouse.delta` and :mod:`pipeline.warehouse.iceberg`; see there for
    the columns, partitioning, idempotency and schema evolution. Everything is checked
    before anything is written (the run against its manifest, the namespace, the run's
    column types for each format, the catalog, and each existing table's columns,
    partitioning and run ids); then Delta tables are written first, then Iceberg; a crash
    between two commits is repaired by publishing again (each table checks for the run
    before writing).

    Args:
        run_dir: a complete ``overlap score`` output (with ``_SUCCESS``), or a comparison
            output, path or URI.
        delta: the directory or URI holding the Delta tables (``ROOT/examples``,
            ``ROOT/aggregates``); None: no Delta.
        iceberg: an Iceberg catalog URI or configured name (see
            :func:`pipeline.warehouse.iceberg.load_catalog`); None: no Iceberg.
        namespace: the Iceberg namespace (required with ``iceberg``).
        warehouse: the Iceberg warehouse location (SQL catalogs).
        labels: ``KEY=VALUE`` strings, one string column each (e.g. ``model=m7``).
        run_date: the partition, ``YYYY-MM-DD``; default: the run's start date in UTC (a
            comparison's: its ``run_date=`` directory, else its candidate's date).

    Returns:
        A list of :class:`pipeline.warehouse.common.PublishedTable`, one per table written or
        found already holding the run.

    Raises:
        ConfigError: neither target, ``iceberg`` without ``namespace`` or with a bad one,
            bad labels or date, a SQLite file that is not a catalog.
        InputError: not a complete run (no ``_SUCCESS``), a run that does not match its
            manifest (:func:`pipeline.io.runs.open_run`), unreadable run files, a column
            type a format cannot hold.
        SchemaChangeError: a column whose type differs from the table's (an InputError).
        RunConflictError: a table holds the run id with other rows (an InputError).
        MissingExtraError: the package of a format is not installed (a ConfigError: exit 2).
        OutputExistsError: ``delta`` is (or is inside) a complete score run's directory.
        ExecutionError: catalog or storage failures.

    """
    from pipeline.warehouse.common import load_run
    from pipeline.warehouse.comparisons import is_comparison, load_comparison

    if delta is None and iceberg is None:
        raise ConfigError("nothing to publish to: give --delta ROOT and/or --iceberg "
                          "CATALOG_URI --namespace NS")
    if iceberg is not None:
        from pipeline.warehouse.iceberg import parse_namespace

        parse_namespace(namespace)
    if delta is not None:  # never tables inside a score run's directory
        from pipeline.io.write import check_output_place

        check_output_place(delta, may_be_link=True)
    if is_comparison(run_dir):
        run = load_comparison(run_dir, labels=labels, run_date=run_date)
    else:
        run = load_run(run_dir, labels=labels, run_date=run_date)
    # Everything is checked before anything is written: the run's types for each format,
    # the catalog, and each existing table (columns, partitioning, the run id).
    from pipeline.io.storage import deltalake_options

    # the storage settings, for deltalake (object storage only)
    storage_options = (deltalake_options() or None) if delta and "://" in delta \
        and not delta.startswith("file://") else None
    formats = {fmt: run.for_format(fmt) for fmt, target in (("delta", delta),
                                                             ("iceberg", iceberg)) if target}
    catalog = None
    if delta is not None:
        from pipeline.warehouse.delta import check_delta

        check_delta(formats["delta"], delta, storage_options=storage_options)
    if iceberg is not None:
        from pipeline.warehouse.iceberg import check_iceberg, load_catalog

        catalog = load_catalog(iceberg, warehouse=warehouse)
        check_iceberg(formats["iceberg"], catalog, namespace=str(namespace))
    published: list[Any] = []
    if delta is not None:
        from pipeline.warehouse.delta import publish_delta

        published += publish_delta(formats["delta"], delta, storage_options=storage_options)
    if iceberg is not None:
        from pipeline.warehouse.iceberg import publish_iceberg

        published += publish_iceberg(formats["iceberg"], catalog, namespace=str(namespace))
    return published


def explain(
    prediction: str | None = None,
    references: Sequence[str | None] | None = None,
    *,
    run_dir: str | None = None,
    example_id: Any = None,
    metrics: Sequence[str] | None = None,
    **options: Any,
) -> Any:
    """Explain one example's scores: per metric the matched units and the winning reference.

    Either texts (``prediction`` and ``references``) with scoring settings (defaults as
    :class:`pipeline.Scorer`), or a run's example (``run_dir`` and ``example_id``): its
    texts (prediction from the run when kept with ``--keep-text``, else from the run's
    inputs; references from the inputs) with the run's metrics and settings (its manifest's
    ``config``), which given ones override. Every family explains its own metrics (see
    :func:`pipeline.explanation.explain`).

    Args:
        prediction: the prediction text (``""`` for an empty one).
        references: one or more reference texts; a bare string is the one reference (one
            example is explained, so it cannot mean one reference per character).
        run_dir: a complete ``overlap score`` output.
        example_id: the example's id in the run.
        metrics: metrics to explain (default: the run's, else the ``rouge155`` flags', else
            :data:`pipeline.scoring.DEFAULT_METRICS`).
        options: scoring settings by their config-file key, as :func:`score_texts` takes
            them (``stemmer="porter"``, ``bleu_tokenize="intl"``, ``rouge155="-n 2 -m"``,
            ``max_tokens``...); None values are ignored.

    Returns:
        A :class:`pipeline.explanation.Explanation` (``.to_document()`` is the JSON form).

    Raises:
        ConfigError: texts and a run both given or neither; texts without a prediction
            (None; an empty prediction is ``""``) or without a reference; bad settings.
        InputError: an incomplete run, an id not in the run, texts that cannot be read.
        TypeError: a prediction that is not a str (a number, a list), references that are
            a dict or hold anything but texts.

    """
    from pipeline.explanation import explain as explain_texts
    from pipeline.explanation import run_settings, without_unread
    from pipeline.metrics import registry

    settings: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
    if metrics is not None:
        settings["metrics"] = tuple(metrics)
    if prediction is not None and not isinstance(prediction, str):
        raise TypeError(f"prediction must be a str (one text), got {type(prediction).__name__} "
                        f"{_short(prediction)}")
    if isinstance(references, str):
        references = [references]
    elif references is not None:
        references = as_list(references, name="references", what="reference texts")
        check_texts(references, name="references")
    if run_dir is None:
        if example_id is not None or references is None or prediction is None:
            raise ConfigError("explain needs a prediction and references, or a run "
                              "directory and an example id",
                              hint="give --prediction TEXT with --reference TEXT; an empty "
                              "prediction is --prediction ''")
        return explain_texts(prediction, list(references), **settings)
    if prediction is not None or references is not None or example_id is None:
        raise ConfigError("explain takes either texts or a run directory with an example id")
    from pipeline.errors import InputError
    from pipeline.io.runs import open_run
    from pipeline.report.texts import example_languages, read_texts, typed_ids

    run = open_run(run_dir)
    key = typed_ids(run, [example_id])[0]
    texts = read_texts(run, [key])
    if key not in texts:
        raise InputError(f"{run_dir}: no example with {run.id_column} {example_id!r} in the "
                         "run's inputs")
    text, refs = texts[key]
    if text is None:
        raise InputError(f"{run_dir}: the prediction of {run.id_column} {example_id!r} cannot "
                         "be read (the run did not keep texts and its inputs changed)")
    merged = {**run_settings(run.config), **settings}
    languages = None if "language" in settings else example_languages(run, [key])
    if languages is not None:  # --language column:COL: the row's own language
        if not languages.get(key):
            raise InputError(f"{run_dir}: {run.id_column} {example_id!r} has no language in "
                             f"the run's column {run.config['language']!r}")
        merged["language"] = languages[key]
    if metrics is None and any(p.key in settings for p in registry.presets()):
        # a preset given (e.g. ROUGE-1.5.5's flags) sets the metrics
        merged.pop("metrics", None)
    # the run's options that the explained metrics (or this row's language) do not read
    return explain_texts(text, refs, **without_unread(merged, keep=tuple(settings)))


def report(run_dir: str, *, output: str, baseline: str | None = None, top: int = 10,
           comparison: str | None = None,
           compare_options: dict[str, Any] | None = None,
           trend_groups: str = "alarmed", agreement: str | None = None) -> str:
    """Write a self-contained HTML report of a run, compared with a baseline when given.

    Composition of :func:`pipeline.report.build.build_report` (the content: signature,
    counts, notes, means with intervals and histograms per metric and measure; with a
    baseline the ``compare`` table with alarms, the per-example deltas and the examples that
    moved most with matched words marked) and an atomic write (a temporary name, then a
    rename).

    Args:
        run_dir: a complete ``overlap score`` output (path or URI).
        output: the HTML file to write (path or URI); an existing file is replaced only when
            it is a report written by ``overlap report`` (see
            :func:`pipeline.io.write.write_report_file`).
        baseline: a complete baseline run (None: the comparison's, or no comparison).
        top: moved examples to show, >= 0.
        comparison: a ``compare.json`` of this run: its verdict, alarms and rows are shown,
            and its settings used for the rest (the two never disagree).
        compare_options: without ``comparison``, options of :func:`compare` (``measures``,
            ``band``, ``bands``, ``confidence``, ``adjust``, ``history``...).
        trend_groups: with a history, the groups whose nightly trend is drawn beside the
            overall one: ``alarmed`` (those that alarmed tonight) or ``all``.
        agreement: an ``agreement.json`` of :func:`agree`: its section in the report.

    Returns:
        The output path as given.

    Raises:
        ConfigError: ``top`` < 0, an unknown ``trend_groups``.
        InputError: an incomplete or unreadable run.
        SignatureMismatchError: runs scored with different settings.
        OutputExistsError: the output is a directory, a symbolic link, or a file that is not a
            report written by ``overlap report`` (nothing written).
        ExecutionError: the output cannot be written.

    """
    from pipeline.io.files import locate
    from pipeline.io.write import check_report_output, write_report_file
    from pipeline.report.build import build_report

    if top < 0:
        raise ConfigError(f"top must be >= 0, got {top}")
    check_report_output(locate(output), output=output)
    text = build_report(run_dir, baseline=baseline, top=top, comparison=comparison,
                        compare_options={k: v for k, v in (compare_options or {}).items()
                                         if v is not None}, trend_groups=trend_groups,
                        agreement=agreement)
    write_report_file(text, locate(output), output=output)
    return output


# --- overlap agree (issue 27): agreement of metrics with human judgments -------------------

@dataclass(frozen=True)
class AgreeResult:
    """The result of :func:`agree`.

    Attributes:
        document: the ``agreement.json`` document (``rows``, ``tests``, ``ceiling``,
            ``scatter``, ``verdict``, ``notes``, ``signature``, ``settings``, ``inputs``).
        signature: the settings' signature string.
        output: the folder written (None when no output was asked).

    """

    document: dict[str, Any]
    signature: str
    output: str | None


def agree(scores: str, *, judgments: str, humans: Sequence[str] | None = None,
          measures: Sequence[str] | None = None, system_column: str = "system",
          input_column: str | None = None, id_column: str | None = None,
          group_by: Sequence[str] = (), preferences: str | None = None,
          output: str | None = None, overwrite: bool = False,
          **settings: Any) -> AgreeResult:
    """Agreement of a run's measures (or a table's scores) with human judgments.

    Composition of :func:`pipeline.agree.tables.join_scores` (the scores and the judgments
    joined by id, with the checks of bad input), :func:`pipeline.agree.analysis.analyse`
    (coefficients, bootstrap intervals, permutation tests, clusters, the raters' ceiling,
    groups) and :func:`pipeline.io.agreement.write_outputs`.

    Args:
        scores: a complete ``overlap score`` run, or a Parquet / CSV / JSON Lines table of
            scores keyed by id.
        judgments: a table of human judgments keyed by id (numbers, or lists of raters'
            numbers), with the system and input columns.
        humans: judgment columns (default: every numeric or list column of the judgments
            that is not an id, system, input or group column).
        measures: score columns as a run names them (``rouge1.fmeasure``; a bare metric
            name means its ``fmeasure`` or ``score``), or a table's columns (default: a
            run's ``*.fmeasure`` and ``*.score`` columns, a table's numeric columns).
        system_column: what a system is.
        input_column: what an input is (default ``input``, else ``document``; none: one row
            per system, the system level only).
        id_column: the id column (default: the run's, else ``id``).
        group_by: columns whose values make subsets with their own rows and tests.
        preferences: a table of pairwise preferences (``id_a``, ``id_b``, ``choice`` a / b /
            tie per rater, or counts ``n_a``, ``n_b``, ``n_tie``): each measure's agreement
            with the raters' majority (:mod:`pipeline.agree.preferences`).
        output: a folder for ``agreement.parquet`` and ``agreement.json`` (None: nothing
            written).
        overwrite: replace outputs ``overlap agree`` wrote before.
        settings: fields of :class:`pipeline.agree.analysis.AgreeSettings` (``levels``,
            ``coefficients``, ``resampling``, ``n_resamples``, ``confidence``,
            ``permutation``, ``n_permutations``, ``adjust``, ``epsilon`` (a number, or
            ``"auto"`` for tie calibration), ``seed``); None values are ignored.

    Returns:
        :class:`AgreeResult`.

    Raises:
        ConfigError: an unknown setting or a value out of range.
        InputError: unreadable inputs; missing columns; judged ids absent from the scores;
            duplicated ids; non-numeric or infinite values (a judgment column of text in a
            Parquet or JSON Lines file, even text of numbers); lists of different lengths.
        OutputExistsError: the outputs exist (without ``overwrite``) or are not ours.
        ExecutionError: the outputs cannot be written.

    """
    from pipeline import __version__
    from pipeline.agree.analysis import AgreeSettings, analyse
    from pipeline.agree.tables import join_scores, result_document, rows_table
    from pipeline.io.agreement import check_output, read_table, write_outputs
    from pipeline.io.files import locate
    from pipeline.io.read import input_format

    fields = AgreeSettings.__dataclass_fields__
    unknown = [k for k in settings if k not in fields]
    if unknown:
        raise ConfigError(f"unknown agree setting {unknown[0]!r}",
                          hint=f"choose among {', '.join(fields)}")
    given: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                             for k, v in settings.items() if v is not None}
    if given.get("epsilon") == "auto":
        given["epsilon"] = None  # tie calibration
    config = AgreeSettings(**given)
    config.check()
    out_loc = check_output(output, overwrite=overwrite) if output is not None else None
    run = None
    if _is_run(scores):
        from pipeline.io.runs import open_run, read_examples

        run = open_run(scores)
        score_table = read_examples(run, columns=list(run.schema.names)).reset_index(drop=True)
    else:
        score_table = read_table(scores, what="scores").to_pandas()
    judged = read_table(judgments, what="judgments").to_pandas()
    joined = join_scores(score_table, judged, run_float_columns=run.float_columns if run
                         else None, scores_name=scores, judgments_name=judgments,
                         humans=humans, measures=measures, system_column=system_column,
                         input_column=input_column,
                         id_column=id_column or (run.id_column if run else "id"),
                         group_by=tuple(group_by),
                         judgments_as_text=input_format(locate(judgments).path) == "csv")
    result = analyse(joined.frame, id_column=joined.id_column,
                     system_column=joined.system_column, input_column=joined.input_column,
                     measures=joined.measures, humans=joined.humans,
                     group_by=tuple(group_by), settings=config)
    result.notes[:0] = joined.notes
    signature = config.signature(__version__)
    document = result_document(result, settings=config, signature=signature,
                               inputs={"scores": scores, "judgments": judgments,
                                       "run_signature": str(run.signature) if run else None,
                                       "id_column": joined.id_column,
                                       "system_column": joined.system_column,
                                       "input_column": joined.input_column,
                                       "n_judged": int(len(joined.frame))},
                               version=__version__)
    if preferences is not None:
        document["preferences"] = _agree_preferences(preferences, joined, config)
    if out_loc is not None:
        write_outputs(out_loc, rows_table(result.rows), document, signature=signature)
    return AgreeResult(document=document, signature=signature, output=output)


def _agree_preferences(path: str, joined: Any, config: Any) -> list[dict[str, Any]]:
    """Each measure's agreement with the raters' pairwise preferences in ``path``."""
    import math

    from pipeline.agree.preferences import preference_agreement, read_counts
    from pipeline.io.agreement import read_table

    counts = read_counts(read_table(path, what="preferences").to_pandas(), name=path)
    counts = type(counts)(counts.id_a.astype(str), counts.id_b.astype(str), counts.votes)
    frame = joined.scores
    ids = frame[joined.id_column].astype(str).tolist()
    out = []
    for measure in joined.measures:
        scores = dict(zip(ids, frame[measure].astype(float).tolist(), strict=True))
        entry = preference_agreement(counts, scores, epsilon=config.epsilon or 0.0,
                                     n_resamples=config.n_resamples,
                                     confidence=config.confidence, seed=config.seed)
        out.append({"measure": measure, **{k: None if isinstance(v, float) and math.isnan(v)
                                           else v for k, v in entry.items()}})
    return out


def _is_run(path: str) -> bool:
    """True when ``path`` is a folder holding an ``overlap score`` manifest."""
    from pipeline.io.files import locate

    loc = locate(path)
    try:
        info = loc.fs.get_file_info([loc.path, loc.child("manifest.json").path])
    except OSError:
        return False
    import pyarrow.fs as pafs

    return (info[0].type == pafs.FileType.Directory
            and info[1].type == pafs.FileType.File)
