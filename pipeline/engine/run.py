"""The order of work of a scoring run, written once for every engine.

split (every unit read once, its rows split by partition (hash of the id) into the unit's
exchange file in the staging directory) -> check (every partition: join the ids and
reference counts, never the text; problems stop the run here) -> the signature is fixed ->
score (every partition: read its rows from the exchange files, join, score, write
``examples/part-*.parquet``) -> the exchange files are deleted. Every task holds at most one
unit or one partition and returns counts and file names: no text passes through the driver
or an engine's object store, and no stage holds more partitions' text than it has tasks
running.

A resumed run (see :mod:`pipeline.engine.resume`) reuses the exchange files already written,
skips the check stage when its results were saved, and scores only the partitions without a
completion marker; when every partition is done, no input is read at all.
"""

from __future__ import annotations

import sys
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from pipeline.config import ScoreConfig
from pipeline.engine.base import Runner
from pipeline.engine.faults import Faults, faults_from_env
from pipeline.engine.plan import Plan
from pipeline.engine.resume import (
    completion_name,
    from_record,
    read_checks,
    read_completions,
    write_checks,
)
from pipeline.engine.tasks import (
    PartitionCheck,
    PartitionResult,
    PartitionTask,
    Problems,
    ScoringSettings,
    UnitScored,
    aggregate_resamples,
    aggregate_sums,
    check_ids,
    check_partition,
    exchange_unit,
    gather_partition,
    score_partition,
    score_unit,
    unit_names,
    warm_scorer,
)
from pipeline.errors import InputError
from pipeline.io.exchange import EXCHANGE_DIR, Exchange, exchange_name
from pipeline.io.files import Location
from pipeline.io.read import read_columns
from pipeline.io.write import EXAMPLES_DIR, OutputDir, read_json
from pipeline.signature import Signature

# Above this many (file, group) pairs, the aggregate reads the examples' values into the
# driver rather than summing file by file (see aggregate_examples): each pair costs a few
# ms of per-file work (exact partial sums of 12 columns, a resampling call, adding its
# sums): 100,000 rows in 2,000 groups of 8 files took 61 s file by file against 27 s at
# once (load 7-10), while the driver's copy of the values is about 110 bytes a row.
MAX_GROUP_PARTS = 20_000

# Below this many prediction rows an in-process run (num_cpus not set) forks no workers:
# its tasks take less time than forking and warming workers. The units stage on 2 cores,
# in turn, median (load 1.8-2.0, of which about 1 is the run itself): 5,000 rows 0.069 s in
# one process against 0.100 s in two forked workers, 20,000 rows 0.163 against 0.213 s,
# 50,000 rows 0.360 against 0.430 s (the workers' tasks took 2.2x the CPU time). The
# threshold stays well below those sizes: on an idle machine two workers should win sooner.
FORK_MIN_ROWS = 10_000

# progress(stage, done, total): stage is "check" or "score"; done/total count partitions.
Progress = Callable[[str, int, int], None]




@dataclass
class Execution:
    """What the engine did.

    Attributes:
        signature: the run's signature (references per example now known).
        n_references: references per example, or ``"var"``.
        checks: one per partition, in partition order.
        parts: one per partition, in partition order.
        seconds: wall seconds per stage (``read_check``, ``score``; ``split``, the part of
            ``read_check`` spent writing the exchange files).
        task_seconds: seconds spent inside tasks per stage, summed over tasks (this
            attempt's tasks only).
        stages: per stage (``split``: ``units_run``/``units_reused``; ``check``, ``score``:
            ``partitions_run`` by this attempt and ``partitions_reused`` from an interrupted
            run's staging directory).
        skipped: examples left out by ``on_missing``/``on_empty_references``, by reason.

    """

    signature: Signature
    n_references: int | str
    checks: list[PartitionCheck]
    parts: list[PartitionResult]
    seconds: dict[str, float] = field(default_factory=dict)
    task_seconds: dict[str, float] = field(default_factory=dict)
    stages: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped: Problems = field(default_factory=Problems)


def scoring_settings(config: ScoreConfig) -> ScoringSettings:
    """Return the picklable scoring settings workers need (the config's scoring part)."""
    return config.scoring


def _collect(runner: Runner, handles: list[Any], stage: str, progress: Progress | None,
             on_done: Callable[[int], None] | None = None) -> list[Any]:
    results: list[Any] = [None] * len(handles)
    done = 0
    try:
        for i, result in runner.as_completed(handles):
            results[i] = result
            done += 1
            if on_done is not None:
                on_done(i)
            if progress is not None:
                progress(stage, done, len(handles))
    except BaseException:
        runner.cancel(handles)
        raise
    return results


def _present(output: OutputDir) -> set[str]:
    """Names of the exchange files already in the staging directory (an interrupted run's)."""
    loc = output.control(EXCHANGE_DIR)
    try:
        entries = loc.fs.get_file_info(pafs.FileSelector(loc.path, allow_not_found=True))
    except OSError:
        return set()
    return {f"{EXCHANGE_DIR}/{e.base_name}" for e in entries if e.type == pafs.FileType.File}


def _drop_exchange(output: OutputDir) -> None:
    """Delete the exchange files (every partition is scored; best effort)."""
    loc = output.control(EXCHANGE_DIR)
    if not output.holds_lock():  # fenced: the exchange may be another run's now
        return
    try:
        if loc.fs.get_file_info(loc.path).type != pafs.FileType.NotFound:
            loc.fs.delete_dir(loc.path)
    except OSError:
        pass


def execute(plan: Plan, config: ScoreConfig, runner: Runner, output: OutputDir, *,
            run_id: str, progress: Progress | None = None) -> Execution:
    """Run split, check and score on ``runner``, writing examples into ``output``'s staging.

    Work recorded as done in the staging directory (an interrupted run of the same work) is
    not redone: see :mod:`pipeline.engine.resume`.

    Args:
        plan: from :func:`pipeline.engine.plan.make_plan`.
        config: the run's settings.
        runner: a :class:`~pipeline.engine.base.Runner` (local or Ray).
        output: the prepared output directory.
        run_id: the run's id (``run_id`` column, file metadata).
        progress: called after each partition of the check and score stages.

    Raises:
        InputError: problems found while joining (every partition checked first: counts are
            complete and at most 5 ids per problem are named).
        ConfigError: invalid injected faults (``OVERLAP_FAULTS``).
        ExecutionError: the engine failed.

    """
    n = plan.n_partitions
    t0 = time.perf_counter()
    faults = faults_from_env()
    done = read_completions(output, plan, PartitionResult)
    checks_saved = read_checks(output, PartitionCheck, n)
    todo = [b for b in range(n) if b not in done]
    exchange = Exchange(output.staging.uri, n, len(plan.prediction_units),
                        len(plan.reference_units))
    inline = plan.spec.layout == "inline"
    units: list[UnitScored] = []
    if inline:  # nothing to join: each unit read, checked and scored where it lies
        units, units_run = (_score_units(plan, config, runner, output, exchange)
                            if checks_saved is None or todo else ([], 0))
    else:
        units_run = (_split(plan, runner, output, exchange)
                     if checks_saved is None or todo else 0)
    t_split = time.perf_counter()
    if checks_saved is not None:
        checks = checks_saved
    elif inline:
        checks = _check_inline(plan, runner, exchange, units, progress)
    else:
        checks = _check(plan, runner, exchange, progress)
    skipped = Problems()
    for c in checks:
        skipped.merge(c.skipped)
    with_examples = [c for c in checks if c.n_examples]
    if not with_examples:
        why = skipped.error()
        raise InputError("no example left to score" + (f": {why.message}" if why else ""))
    if checks_saved is None:
        write_checks(output, checks)
    lo = min(c.min_references for c in with_examples)
    hi = max(c.max_references for c in with_examples)
    n_refs: int | str = lo if lo == hi else "var"
    signature = config.signature(n_references=n_refs)
    t1 = time.perf_counter()
    scored = _score(plan, config, runner, output, exchange, todo, run_id=run_id,
                    signature=str(signature), faults=faults, progress=progress, units=units)
    done.update((p.index, p) for p in scored)
    parts = [done[b] for b in range(n)]
    too_long = Problems()
    for p in parts:
        too_long.merge(p.problems)
    err = too_long.error()
    if err is not None:
        raise InputError(f"{err.message} ({config.max_tokens} tokens)", hint=err.hint)
    _drop_exchange(output)  # every partition is written: a rerun needs none of it
    t2 = time.perf_counter()
    checked_before = checks_saved is not None
    n_units = len(plan.prediction_units) + len(plan.reference_units)
    return Execution(
        signature=signature, n_references=n_refs, checks=checks, parts=parts,
        seconds={"read_check": t1 - t0, ("units" if inline else "split"): t_split - t0,
                 "score": t2 - t1},
        task_seconds={"check": 0.0 if checked_before else sum(c.seconds for c in checks),
                      "score": sum(p.seconds for p in scored),
                      **({"units": sum(u.seconds for u in units)} if inline else {})},
        stages={"split": {"units_run": units_run, "units_reused": n_units - units_run},
                "check": {"partitions_run": 0 if checked_before else n,
                          "partitions_reused": n if checked_before else 0},
                "score": {"partitions_run": len(todo), "partitions_reused": n - len(todo)}},
        skipped=skipped)


def _split(plan: Plan, runner: Runner, output: OutputDir, exchange: Exchange) -> int:
    """Split stage: each unit without its exchange file writes it; returns units run."""
    present = _present(output)
    missing = [u for u in (*plan.prediction_units, *plan.reference_units)
               if exchange_name(u.side, u.index) not in present]
    _collect(runner, [runner.submit(exchange_unit, plan.spec, u, exchange) for u in missing],
             "split", None)
    return len(missing)


def _check(plan: Plan, runner: Runner, exchange: Exchange,
           progress: Progress | None) -> list[PartitionCheck]:
    """Check stage: every partition's ids and reference counts; problems stop the run.

    Raises:
        InputError: the problems of every partition, counted in all (5 ids each at most).

    """
    checks: list[PartitionCheck] = _collect(
        runner, [runner.submit(check_partition, plan.spec, b, exchange)
                 for b in range(plan.n_partitions)], "check", progress)
    problems = Problems()
    for c in checks:
        problems.merge(c.problems)
    err = problems.error()
    if err is not None:
        raise err
    return checks


def _unit_record(output: OutputDir, index: int, n: int, present: set[str]
                 ) -> UnitScored | None:
    """A unit scored by an interrupted run (its record and files are there), or None."""
    ids_name, rows_name, record_name = unit_names(index)
    if ids_name not in present or record_name not in present:
        return None
    data = read_json(output.control(record_name))
    if not isinstance(data, dict) or data.get("index") != index:
        return None
    checks = [from_record(PartitionCheck, d) for d in data.get("checks") or []]
    parts = [from_record(PartitionResult, d) for d in data.get("parts") or []]
    if len(checks) != n or len(parts) != n or any(c is None for c in checks) \
            or any(p is None for p in parts):
        return None
    unit = UnitScored(index, typing.cast(list[PartitionCheck], checks),
                      typing.cast(list[PartitionResult], parts), 0.0)
    if rows_name not in present and not any(c.problems.counts for c in unit.checks):
        return None
    return unit


def _score_units(plan: Plan, config: ScoreConfig, runner: Runner, output: OutputDir,
                 exchange: Exchange) -> tuple[list[UnitScored], int]:
    """Unit stage (inline layout): every unit read, checked and scored, or reused.

    Returns:
        Every unit's result in unit order (reused ones with ``seconds`` 0), and the units run.

    """
    present = _present(output)
    n = plan.n_partitions
    units: dict[int, UnitScored] = {}
    for u in plan.prediction_units:
        record = _unit_record(output, u.index, n, present)
        if record is not None:
            units[u.index] = record
    missing = [u for u in plan.prediction_units if u.index not in units]
    settings = scoring_settings(config)
    if missing:
        # Built here once, before the local engine forks its workers: each then starts with
        # the scorer's modules imported and its kernels loaded (about 0.3 CPU-s a worker).
        warm_scorer(settings)
    ran = _collect(runner, [runner.submit(score_unit, plan.spec, settings, u, exchange)
                            for u in missing], "units", None)
    units.update((r.index, r) for r in ran)
    return [units[u.index] for u in plan.prediction_units], len(missing)


def _check_inline(plan: Plan, runner: Runner, exchange: Exchange, units: list[UnitScored],
                  progress: Progress | None) -> list[PartitionCheck]:
    """Check stage (inline layout): ids unique across units, plus the units' own checks.

    Each partition's task reads its ids only; the units' checks of the partition are added
    in unit order, so the problems are counted and named as :func:`_check` does.

    Raises:
        InputError: the problems of every partition, counted in all (5 ids each at most).

    """
    checks: list[PartitionCheck] = _collect(
        runner, [runner.submit(check_ids, plan.spec, b, exchange)
                 for b in range(plan.n_partitions)], "check", progress)
    problems = Problems()
    for check in checks:
        for unit in units:
            part = unit.checks[check.index]
            if part.n_examples:
                lo, hi = part.min_references, part.max_references
                if check.n_examples:
                    lo, hi = min(lo, check.min_references), max(hi, check.max_references)
                check.min_references, check.max_references = lo, hi
                check.n_examples += part.n_examples
            check.problems.merge(part.problems)
            check.skipped.merge(part.skipped)
        problems.merge(check.problems)
    err = problems.error()
    if err is not None:
        raise err
    return checks


def _unit_parts(units: list[UnitScored], index: int) -> PartitionResult:
    """The units' counts of partition ``index``, added up in unit order."""
    total = PartitionResult(index, None, 0, 0, 0, 0.0)
    for unit in units:
        part = unit.parts[index]
        total.num_rows += part.num_rows
        total.n_null_predictions += part.n_null_predictions
        total.n_truncated += part.n_truncated
        for key, value in part.counts.items():
            total.counts[key] = total.counts.get(key, 0) + value
        total.problems.merge(part.problems)
    return total


def _score(plan: Plan, config: ScoreConfig, runner: Runner, output: OutputDir,
           exchange: Exchange, todo: list[int], *, run_id: str, signature: str,
           faults: Faults | None, progress: Progress | None,
           units: list[UnitScored] | None = None) -> list[PartitionResult]:
    """Score stage: the partitions in ``todo`` scored and written, in ``todo`` order.

    With ``units`` (the inline layout, scored unit by unit), each partition's scored rows
    are gathered from the units' files and written (:func:`gather_partition`).
    """
    examples = output.staged(EXAMPLES_DIR)
    tasks = [PartitionTask(
        index=b, part_uri=examples.child(plan.part_name(b)).uri,
        marker_uri=output.control(completion_name(plan.part_name(b))).uri, run_id=run_id,
        signature=signature, exchange=exchange, faults=faults,
        group_by=tuple(config.group_by)) for b in todo]
    n, already = plan.n_partitions, plan.n_partitions - len(todo)

    def score_progress(stage: str, k: int, _: int) -> None:
        if progress is not None:
            progress(stage, already + k, n)

    if units:
        return _collect(runner, [runner.submit(gather_partition, t, _unit_parts(units, t.index))
                                 for t in tasks], "score", score_progress)
    settings = scoring_settings(config)
    return _collect(runner, [runner.submit(score_partition, plan.spec, settings, t)
                             for t in tasks], "score", score_progress)


def aggregate_examples(config: ScoreConfig, runner: Runner, example_files: list[Location], *,
                       n_examples: int, group_parts: int = 0) -> pa.Table:
    """Aggregate the examples files, from mergeable per-file sums computed on ``runner``.

    One task per file reads its numeric (and group and id) columns, never the text, and
    returns each scope's count, exact partial sums and largest values; a second task per
    file returns its share of each scope's bootstrap (resampled sums on the scope's exact
    grid, weights keyed by example id). The driver only adds them: it holds nothing per
    example (:func:`pipeline.aggregate.aggregate_parts`).

    With many small groups (more than :data:`MAX_GROUP_PARTS` groups counted file by file),
    the per-file work costs more per group than the rows it sums: the driver then reads the
    value, group and id columns (about ``8 * (values + 2)`` bytes a row) and aggregates them
    at once (:func:`pipeline.aggregate.aggregate`, resampled sums in blocks). The table is the
    same either way, bit for bit, whatever the engine, the partitioning or the file order.

    Args:
        config: the run's settings.
        runner: where the tasks run.
        example_files: the examples files written by the score stage (each with >= 1 row).
        n_examples: their rows in all (informational).
        group_parts: distinct groups of each file, summed over the files (0: unknown).

    Raises:
        InputError: no example.

    """
    from pipeline.aggregate import aggregate, aggregate_parts

    common: dict[str, Any] = {
        "metrics": config.metrics, "group_by": config.group_by,
        "thresholds": config.thresholds, "n_bootstrap": config.bootstrap,
        "confidence": config.confidence, "seed": config.seed, "id_column": config.id_column,
        "options": config.to_dict()}
    if group_parts > MAX_GROUP_PARTS:
        return aggregate(lambda columns: read_columns(example_files, columns), **common)

    def map_parts(fn: Callable[..., Any], args_list: list[tuple[Any, ...]]) -> list[Any]:
        return _collect(runner, [runner.submit(fn, *args) for args in args_list],
                        "aggregate", None)

    return aggregate_parts([f.uri for f in example_files], map_parts=map_parts,
                           sums_fn=aggregate_sums, resamples_fn=aggregate_resamples, **common)


def choose_engine(config: ScoreConfig, plan: Plan | None = None) -> tuple[str, str]:
    """Decide where a score (with its ``plan``) or a comparison runs: ``("local"|"ray", why)``.

    ``auto`` runs on Ray when a cluster address is given (``--address``, ``RAY_ADDRESS``) or
    when Ray is already initialized in this process (a notebook, a test session: nothing to
    start), and in-process (on every CPU) otherwise, at any size: on one machine it is faster
    than a local Ray (measured on 2 CPUs at 1M, 4M and 10M rows: no Ray to start, no results
    through an object store), and neither engine holds more than one partition per worker
    (the rows go through exchange files), so the row count does not decide.
    """
    if config.engine != "auto":
        return config.engine, f"--engine {config.engine}"
    if config.resolved_address():
        return "ray", "auto: a Ray cluster address is set"
    ray = sys.modules.get("ray")  # never imported just to ask
    if ray is not None and ray.is_initialized():
        return "ray", "auto: Ray is already initialized in this process"
    rows = "" if plan is None else f" ({plan.prediction_rows:,} prediction rows)"
    return "local", f"auto: one machine: in-process{rows}"


def make_runner(config: ScoreConfig, engine: str | None = None, *,
                prediction_rows: int | None = None) -> Runner:
    """Start a runner: in-process, a local Ray, or a Ray cluster.

    Args:
        config: the run's settings.
        engine: ``local`` or ``ray`` (from :func:`choose_engine`); None: ``config.engine``,
            with ``auto`` taken as ``ray``.
        prediction_rows: the run's prediction rows, when known: in-process, fewer than
            :data:`FORK_MIN_ROWS` of them run in this process alone unless ``num_cpus`` is
            set.

    Raises:
        ExecutionError: Ray could not start or the cluster could not be reached.

    """
    if (engine or config.engine) == "local":
        from pipeline.engine.local import LocalRunner

        small = prediction_rows is not None and prediction_rows < FORK_MIN_ROWS
        return LocalRunner(processes=config.num_cpus or (1 if small else None))
    from pipeline.engine.ray_runner import (
        RayRunner,
        job_runtime_env,
        package_runtime_env,
        runtime_env_within_job,
    )

    address = config.resolved_address()
    runtime_env = None
    if address:
        from pipeline.io.storage import worker_env

        runtime_env = (package_runtime_env(config.runtime_env) if config.ship_code
                       else dict(config.runtime_env or {})) or None
        storage_env = worker_env()  # the workers see the storage as the driver does
        if storage_env:
            runtime_env = dict(runtime_env or {})
            runtime_env["env_vars"] = {**storage_env, **dict(runtime_env.get("env_vars") or {})}
        # the driver of a submitted Ray job: only what the job's runtime_env does not set
        runtime_env = runtime_env_within_job(runtime_env, job_runtime_env())
    return RayRunner(address=address, num_cpus=config.num_cpus, runtime_env=runtime_env)
