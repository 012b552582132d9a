"""Library entry points: composition only, no rules of their own."""

from __future__ import annotations

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
from pipeline.scoring import DEFAULT_METRICS, Scorer

if TYPE_CHECKING:  # pandas is only needed for the annotation; importing it costs ~0.6 s
    import pandas as pd  # in every process (the CLI and each Ray worker import this module)


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
        TypeError: a bare string as ``predictions``.

    """
    if isinstance(predictions, str):
        raise TypeError("predictions must be a list of texts, not a str")
    scorer = Scorer(metrics=tuple(metrics), max_tokens=max_tokens, **options)
    refs = [[r] if isinstance(r, str) else list(r) for r in references]
    scored = scorer.score_batch(list(predictions), refs)
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
            ``seed`` out of range.
        InputError: no prediction, or ``ids`` of another length than ``predictions``, or
            null ids.
        ValueError: predictions and references differ in length.
        TypeError: a bare string as ``predictions`` or ``ids``.

    """
    from pipeline.aggregate import aggregate, metric_aggregates
    from pipeline.errors import InputError

    if isinstance(ids, str):
        raise TypeError("ids must be a list of ids, not a str")
    if isinstance(predictions, str):
        raise TypeError("predictions must be a list of texts, not a str")
    settings = ScoreConfig(scoring=ScoringSettings.from_values(metrics=tuple(metrics),
                                                               max_tokens=max_tokens,
                                                               **options),
                           bootstrap=n_bootstrap, confidence=confidence, seed=seed)
    refs = [[r] if isinstance(r, str) else list(r) for r in references]
    table = Scorer(settings.scoring).score_batch(list(predictions), refs).table
    id_column = None
    if ids is not None:
        if len(ids) != table.num_rows:
            raise InputError(f"ids: {len(ids)} ids for {table.num_rows} predictions")
        id_column = "__id__"
        table = table.append_column(id_column, pa.array(list(ids)))
        if table.column(id_column).null_count:
            raise InputError(f"ids: {table.column(id_column).null_count} null ids")
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
    ``output/manifest.json``, then ``output/_SUCCESS`` (docs/scoring.md lists every column).

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
            an output that is the current directory or above it.
        InputError: missing, unreadable or empty files, missing columns, bad types, ids
            without references (or the reverse) or empty references unless the config
            skips them, duplicate ids, texts over ``max_tokens`` with
            ``on_long_text="error"``, no example left to score.
        OutputExistsError: a complete output exists and ``overwrite`` is False; the output
            holds anything else than a complete overlap output; another run holds the
            output's lock; a staged file of another run.
        ExecutionError: Ray or the storage failed.

    """
    from pipeline.engine import make_plan
    from pipeline.engine.resume import run_key
    from pipeline.engine.session import score_on_engine
    from pipeline.io.manifest import write_run
    from pipeline.io.write import OutputDir, check_apart

    cfg = config or ScoreConfig()
    requested = check_run_id(run_id) if run_id is not None else None
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    check_apart(output, {"predictions": predictions, "references": references})
    plan = make_plan(predictions, references, cfg)
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
                             config=cfg.to_dict(), run_id=run_id, signature=signature,
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
    history: str | None = None,
    history_window: int | None = None,
    reference_run: str | None = None,
    engine: str = "auto",
    address: str | None = None,
    num_cpus: int | None = None,
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
        history: a nightly ROOT to learn bands and chart drift from.
        history_window: nights of history used.
        reference_run: a run pinning the drift chart's reference level.
        engine: ``auto`` (a Ray cluster when an address is set or Ray is initialized in this
            process, else in-process), ``local`` (in-process, on every CPU) or ``ray`` (a
            local Ray instance, or the cluster at ``address``), as ``overlap score``.
        address: a Ray cluster address (None: ``RAY_ADDRESS`` if set).
        num_cpus: worker processes in-process, or CPUs of a local Ray (None: every CPU).

    Returns:
        The :class:`pipeline.compare.RunComparison`.

    Raises:
        ConfigError: bad settings.
        InputError: incomplete or unreadable runs or history.
        ExecutionError: the output cannot be written.
        SignatureMismatchError: runs scored differently for a compared measure.
        ExecutionError: the engine failed (Ray could not start, a lost worker).

    """
    import functools

    from pipeline.compare import compare_runs
    from pipeline.engine.compare import compare_on_engine
    from pipeline.engine.run import choose_engine, make_runner

    settings = ScoreConfig(engine=engine, address=address, num_cpus=num_cpus)
    where, _ = choose_engine(settings)
    given: dict[str, Any] = {
        "band": band, "confidence": confidence, "n_bootstrap": n_bootstrap, "seed": seed,
        "top": top, "max_missing": max_missing, "adjust": adjust,
        "history_window": history_window}
    runner = make_runner(settings, where)
    try:
        result = compare_runs(baseline_dir, candidate_dir, measures=measures, bands=bands,
                              allow_signature_mismatch=allow_signature_mismatch,
                              history=history, reference_run=reference_run,
                              engine=functools.partial(compare_on_engine, runner=runner),
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
    plot: bool = True,
    log: Callable[[str], None] = lambda _: None,
) -> NightlyRun:
    """One night of the nightly loop: score, publish, compare with history, report.

    1. Score ``predictions`` into ``ROOT/run_date=DATE/run_id=ID`` (a finished run of the
       same date and id is reused; an interrupted one resumes).
    2. With ``publish_options``, publish it (:func:`publish`, ``run_date`` set); a failure
       stops the night.
    3. The baseline: ``baseline``, else the newest complete run under ROOT dated on or before
       tonight, other than tonight's, with a measure in common with tonight's (newer runs
       without one are passed over, in one log line;
       :func:`pipeline.compare.history.comparable_baseline`). No run at all: the night ends
       with 0; runs but none comparable: exit 2 naming the newest and ``--baseline``.
    4. Compare (:func:`compare` with ``history=ROOT``) into
       ``ROOT/compare/run_date=DATE/run_id=ID/`` (``compare.json``, ``compare.parquet``,
       and ``delta.png`` unless ``plot`` is False; a plot that fails is only logged).
    5. With ``write_report``, write ``report.html`` there (:func:`report`, reading that
       ``compare.json``); a failure is logged, the comparison stands.

    ROOT is a path or URI taken literally (spaces, newlines, globs, a leading ``-``).

    Args:
        root: the nightly ROOT.
        predictions: tonight's predictions (file, directory or glob).
        references: a separate references table, or None.
        run_date: ``YYYY-MM-DD`` (default: today in UTC).
        run_id: tonight's run id (default: :func:`new_run_id`).
        config: scoring settings (default: :class:`ScoreConfig` defaults).
        baseline: a run to compare with instead of the last complete one.
        compare_options: keyword options of :func:`compare` (``measures``, ``band``,
            ``bands``, ``adjust``...), never ``output`` or ``history``.
        publish_options: keyword options of :func:`publish` (``delta``, ``iceberg``...), or
            None: not published.
        write_report: also write the HTML report.
        plot: also draw ``delta.png``.
        log: called with each progress line (the CLI prints them on stderr).

    Returns:
        A :class:`NightlyRun`; errors of a step are returned in it, never raised.

    """
    run_date = run_date or datetime.now(timezone.utc).strftime("%Y-%m-%d")
    try:
        parse_run_date(run_date)
    except ConfigError as err:
        return NightlyRun(err.exit_code, "", error=err)
    try:
        run_id = check_run_id(run_id or new_run_id())
    except ConfigError:
        error = ConfigError(f"RUN_ID must be 1-128 letters, digits, '.', '_' or '-' starting "
                            f"with a letter or digit, got {run_id!r}")
        return NightlyRun(error.exit_code, "", error=error)
    from pipeline.compare.history import comparable_baseline
    from pipeline.io.runs import filesystem

    base = root.rstrip("/") or root
    run_dir = f"{base}/run_date={run_date}/run_id={run_id}"
    compare_dir = f"{base}/compare/run_date={run_date}/run_id={run_id}"
    again = f"run again with RUN_DATE={run_date} RUN_ID={run_id}"
    try:
        fs, path = filesystem(base)
        is_file = fs.get_file_info(path).type.name == "File"
    except (PipelineError, OSError):
        is_file = False
    if is_file:
        not_dir = InputError(f"ROOT {root} is not a directory",
                             hint="name a directory (new or holding earlier nights)")
        return NightlyRun(not_dir.exit_code, "", error=not_dir)
    try:
        fs, path = filesystem(run_dir)
        done = fs.get_file_info(f"{path}/_SUCCESS").type.name == "File"
    except (PipelineError, OSError):
        done = False
    if done:
        log(f"reusing the finished run {run_dir}")
    else:
        log(f"scoring into {run_dir}")
        try:
            score(predictions, references=references, output=run_dir, config=config,
                  run_id=run_id)
        except PipelineError as error:
            resume = f"; to resume, {again}" if _staging_left(run_dir) else ""
            log(f"overlap score failed (exit {error.exit_code}): {error}; no comparison"
                + resume)
            return NightlyRun(error.exit_code, run_dir, error=error)
    if publish_options is not None:
        log(f"publishing {run_dir}")
        try:
            publish(run_dir, run_date=run_date, **publish_options)
        except PipelineError as error:
            log(f"overlap publish failed (exit {error.exit_code}): {error}; run it again to "
                "complete")
            return NightlyRun(error.exit_code, run_dir, error=error)
    if baseline is None:
        found, skipped = comparable_baseline(
            base, run_date=run_date, candidate=run_dir,
            measures=(compare_options or {}).get("measures"))
        baseline = None if found is None else found.path
        if skipped and found is not None:
            log(f"passing over {len(skipped)} newer "
                f"{'run' if len(skipped) == 1 else 'runs'} with no measure in common with "
                f"tonight's: {', '.join(r.path for r in skipped)}")
        elif skipped:
            none = InputError(f"no earlier run under {root} has a measure in common with "
                              f"tonight's (the last one: {skipped[0].path})",
                              hint="compare with a run of your choice with --baseline "
                                   "RUN_DIR (env BASELINE), or choose the measures with "
                                   "COMPARE_ARGS=\"--metrics ...\"")
            log(str(none))
            return NightlyRun(none.exit_code, run_dir, error=none)
    if baseline is None:
        log(f"no earlier successful run under {root}; nothing to compare with")
        return NightlyRun(0, run_dir)
    log(f"comparing {run_dir} with {baseline}")
    try:
        result = compare(baseline, run_dir, output=compare_dir, history=base,
                         **(compare_options or {}))
    except PipelineError as error:
        log(f"overlap compare failed (exit {error.exit_code}): {error}; to redo it, {again}")
        return NightlyRun(error.exit_code, run_dir, compare_dir, baseline, error=error)
    if plot:
        try:
            from pipeline.plots import plot_deltas

            fs, path = filesystem(compare_dir)
            if fs.type_name == "local":
                plot_deltas(result.comparison, f"{path}/delta.png")
        except Exception as error:  # noqa: BLE001 - a picture must not change the verdict
            log(f"warning: the plot was not drawn: {error}")
    if write_report:
        try:
            report(run_dir, output=f"{compare_dir}/report.html", baseline=baseline,
                   comparison=f"{compare_dir}/compare.json")
        except PipelineError as error:
            log(f"overlap report failed: {error}; the comparison stands")
    code = 1 if result.alarm else 0
    log("ALARM: read " + f"{compare_dir}/compare.json and the examples that moved" if code
        else "no alarm")
    return NightlyRun(code, run_dir, compare_dir, baseline, result)


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

    Composition of :func:`pipeline.warehouse.common.load_run` and the format modules
    :mod:`pipeline.warehouse.delta` and :mod:`pipeline.warehouse.iceberg`; see there for
    the columns, partitioning, idempotency and schema evolution. Everything is checked
    before anything is written (the run against its manifest, the namespace, the run's
    column types for each format, the catalog, and each existing table's columns,
    partitioning and run ids); then Delta tables are written first, then Iceberg; a crash
    between two commits is repaired by publishing again (each table checks for the run
    before writing).

    Args:
        run_dir: a complete ``overlap score`` output (with ``_SUCCESS``), path or URI.
        delta: the directory or URI holding the Delta tables (``ROOT/examples``,
            ``ROOT/aggregates``); None: no Delta.
        iceberg: an Iceberg catalog URI or configured name (see
            :func:`pipeline.warehouse.iceberg.load_catalog`); None: no Iceberg.
        namespace: the Iceberg namespace (required with ``iceberg``).
        warehouse: the Iceberg warehouse location (SQL catalogs).
        labels: ``KEY=VALUE`` strings, one string column each (e.g. ``model=m7``).
        run_date: the partition, ``YYYY-MM-DD``; default: the run's start date in UTC.

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
        ExecutionError: the package of a format missing; catalog or storage failures.

    """
    from pipeline.warehouse.common import load_run

    if delta is None and iceberg is None:
        raise ConfigError("nothing to publish to: give --delta ROOT and/or --iceberg "
                          "CATALOG_URI --namespace NS")
    if iceberg is not None:
        from pipeline.warehouse.iceberg import parse_namespace

        parse_namespace(namespace)
    run = load_run(run_dir, labels=labels, run_date=run_date)
    # Everything is checked before anything is written: the run's types for each format,
    # the catalog, and each existing table (columns, partitioning, the run id).
    formats = {fmt: run.for_format(fmt) for fmt, target in (("delta", delta),
                                                             ("iceberg", iceberg)) if target}
    catalog = None
    if delta is not None:
        from pipeline.warehouse.delta import check_delta

        check_delta(formats["delta"], delta)
    if iceberg is not None:
        from pipeline.warehouse.iceberg import check_iceberg, load_catalog

        catalog = load_catalog(iceberg, warehouse=warehouse)
        check_iceberg(formats["iceberg"], catalog, namespace=str(namespace))
    published: list[Any] = []
    if delta is not None:
        from pipeline.warehouse.delta import publish_delta

        published += publish_delta(formats["delta"], delta)
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
        prediction: the prediction text.
        references: one or more reference texts.
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

    """
    from pipeline.explanation import explain as explain_texts
    from pipeline.explanation import run_settings
    from pipeline.metrics import registry

    settings: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
    if metrics is not None:
        settings["metrics"] = tuple(metrics)
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
    from pipeline.report.texts import read_texts, typed_ids

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
    if metrics is None and any(p.key in settings for p in registry.presets()):
        # a preset given (e.g. ROUGE-1.5.5's flags) sets the metrics
        merged.pop("metrics", None)
    return explain_texts(text, refs, **merged)


def report(run_dir: str, *, output: str, baseline: str | None = None, top: int = 10,
           comparison: str | None = None,
           compare_options: dict[str, Any] | None = None,
           agreement: str | None = None) -> str:
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
        agreement: an ``agreement.json`` of :func:`agree`: its section in the report.

    Returns:
        The output path as given.

    Raises:
        ConfigError: ``top`` < 0.
        InputError: an incomplete or unreadable run.
        SignatureMismatchError: runs scored with different settings.
        OutputExistsError: the output is a directory, a symlink, or a file that is not a
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
                                         if v is not None}, agreement=agreement)
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
            duplicated ids; non-numeric or infinite values; lists of different lengths.
        OutputExistsError: the outputs exist (without ``overwrite``) or are not ours.
        ExecutionError: the outputs cannot be written.

    """
    from pipeline import __version__
    from pipeline.agree.analysis import AgreeSettings, analyse
    from pipeline.agree.tables import join_scores, result_document, rows_table
    from pipeline.io.agreement import check_output, read_table, write_outputs

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
                         group_by=tuple(group_by))
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
