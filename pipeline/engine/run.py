"""The order of work of a scoring run, written once for every engine.

split (every unit read once, hash-partitioned by id) -> check (every partition: join,
problems, reference counts; the joined partition stays in the engine's store) -> the
signature is fixed -> score (every partition: score the joined table, write
``examples/part-*.parquet`` into the staging directory). The driver only ever holds handles,
counts and file names: no text passes through it.

A resumed run (see :mod:`pipeline.engine.resume`) skips the check stage when its results were
saved, and scores only the partitions without a completion marker; when every partition is
done, no input is read at all.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from pipeline.config import ScoreConfig
from pipeline.engine.base import Runner
from pipeline.engine.faults import faults_from_env
from pipeline.engine.plan import Plan, Unit
from pipeline.engine.resume import completion_name, read_checks, read_completions, write_checks
from pipeline.engine.tasks import (
    PartitionCheck,
    PartitionResult,
    PartitionTask,
    Problems,
    ScoringSettings,
    check_partition,
    read_unit,
    score_joined,
    score_partition,
    split_unit,
)
from pipeline.errors import InputError
from pipeline.io.files import Location
from pipeline.io.read import read_columns
from pipeline.io.write import EXAMPLES_DIR, OutputDir
from pipeline.signature import Signature

if TYPE_CHECKING:  # the aggregate (and its compiled bootstrap) is imported when it runs
    from pipeline.aggregate import MapChunks

# progress(stage, done, total): stage is "check" or "score"; done/total count partitions.
Progress = Callable[[str, int, int], None]
# The bootstrap runs in threads of the driver unless the Ray cluster has more CPUs than the
# driver's machine and it has at least this many resample draws (examples x resamples x
# levels): the compiled kernel draws about 10^9 weights a second per core (1M examples x
# 1,000 resamples x 12 measures: 1.4 s on this project's 2-core machine), so below that
# shipping the matrix to workers costs more than it saves. Same result either way.
DISTRIBUTE_MIN_DRAWS = 2_000_000_000


# The most prediction rows the engine ``auto`` scores in-process; above it, a local Ray. The
# in-process engine forks a score worker per CPU, so it is faster than a local Ray on the same
# cores at every size measured (2 CPUs: 1M rows 8.4 s against 15.7 s, 2M rows 17.7 s against
# 25.2 s), but it holds every partition's text in this process (peak 1.6 GB at 1M rows and
# 3.0 GB at 2M of ~670 bytes a row), where Ray's object store is capped and spills to disk.
AUTO_LOCAL_MAX_ROWS = 2_000_000


@dataclass
class Execution:
    """What the engine did.

    Attributes:
        signature: the run's signature (references per example now known).
        n_references: references per example, or ``"var"``.
        checks: one per partition, in partition order.
        parts: one per partition, in partition order.
        seconds: wall seconds per stage (``read_check``, ``score``).
        task_seconds: seconds spent inside tasks per stage, summed over tasks (this
            attempt's tasks only).
        stages: per stage (``check``, ``score``), ``partitions_run`` by this attempt and
            ``partitions_reused`` from an interrupted run's staging directory.
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
    spec = plan.spec
    n = plan.n_partitions
    t0 = time.perf_counter()
    faults = faults_from_env()
    done = read_completions(output, plan, PartitionResult)
    checks_saved = read_checks(output, PartitionCheck, n)
    checked_before = checks_saved is not None
    todo = [b for b in range(n) if b not in done]

    def split(unit: Unit) -> list[Any]:
        if n == 1:
            return [runner.submit(read_unit, spec, unit)]
        return runner.submit(split_unit, spec, unit, n, num_returns=n)

    # Handles of the pieces of each partition still to check or score; dropped once the
    # partition is written, so the object store can free them.
    pieces: list[list[Any] | None] = [None] * n
    n_pred = len(plan.prediction_units)
    if not checked_before or todo:
        pred_pieces = [split(u) for u in plan.prediction_units]
        ref_pieces = [split(u) for u in plan.reference_units]
        for b in todo if checked_before else range(n):
            pieces[b] = [p[b] for p in pred_pieces] + [r[b] for r in ref_pieces]
        del pred_pieces, ref_pieces

    def release(i: int) -> None:
        pieces[todo[i]] = joined[todo[i]] = None

    # Each partition's joined table, from its check: scored without joining again.
    joined: list[Any | None] = [None] * n
    if checks_saved is None:
        submitted = [runner.submit(check_partition, spec, b, n_pred, *(pieces[b] or []),
                                   num_returns=2) for b in range(n)]

        def checked(b: int) -> None:  # its pieces are in the joined table now
            joined[b], pieces[b] = submitted[b][1], None

        checks: list[PartitionCheck] = _collect(
            runner, [h[0] for h in submitted], "check", progress, on_done=checked)
        del submitted
        problems = Problems()
        for c in checks:
            problems.merge(c.problems)
        err = problems.error()
        if err is not None:
            raise err
    else:
        checks = checks_saved
    skipped = Problems()
    for c in checks:
        skipped.merge(c.skipped)
    with_examples = [c for c in checks if c.n_examples]
    if not with_examples:
        why = skipped.error()
        raise InputError("no example left to score" + (f": {why.message}" if why else ""))
    if not checked_before:
        write_checks(output, checks)
    lo = min(c.min_references for c in with_examples)
    hi = max(c.max_references for c in with_examples)
    n_refs: int | str = lo if lo == hi else "var"
    signature = config.signature(n_references=n_refs)
    t1 = time.perf_counter()

    settings = scoring_settings(config)
    examples = output.staged(EXAMPLES_DIR)
    tasks = [PartitionTask(
        index=b, part_uri=examples.child(plan.part_name(b)).uri,
        marker_uri=output.control(completion_name(plan.part_name(b))).uri, run_id=run_id,
        signature=str(signature), n_prediction_pieces=n_pred, faults=faults) for b in todo]

    def score_progress(stage: str, k: int, _: int) -> None:
        if progress is not None:
            progress(stage, n - len(todo) + k, n)

    scored: list[PartitionResult] = _collect(runner, [
        runner.submit(score_joined, spec, settings, t, joined[t.index])
        if joined[t.index] is not None
        else runner.submit(score_partition, spec, settings, t, *(pieces[t.index] or []))
        for t in tasks], "score", score_progress, on_done=release)
    done.update((p.index, p) for p in scored)
    parts = [done[b] for b in range(n)]
    too_long = Problems()
    for p in parts:
        too_long.merge(p.problems)
    err = too_long.error()
    if err is not None:
        raise InputError(f"{err.message} ({config.max_tokens} tokens)", hint=err.hint)
    t2 = time.perf_counter()
    return Execution(
        signature=signature, n_references=n_refs, checks=checks, parts=parts,
        seconds={"read_check": t1 - t0, "score": t2 - t1},
        task_seconds={"check": 0.0 if checked_before else sum(c.seconds for c in checks),
                      "score": sum(p.seconds for p in scored)},
        stages={"check": {"partitions_run": 0 if checked_before else n,
                          "partitions_reused": n if checked_before else 0},
                "score": {"partitions_run": len(todo), "partitions_reused": n - len(todo)}},
        skipped=skipped)


def chunk_mapper(runner: Runner) -> MapChunks:
    """Run bootstrap chunks as tasks on ``runner`` (large arrays are stored once)."""

    def map_chunks(fn: Callable[..., Any], args_list: list[tuple[Any, ...]]) -> list[Any]:
        stored: dict[int, Any] = {}

        def ref(arg: Any) -> Any:
            if isinstance(arg, np.ndarray) and arg.nbytes > 1 << 20:
                if id(arg) not in stored:
                    stored[id(arg)] = runner.put(arg)
                return stored[id(arg)]
            return arg

        handles = [runner.submit(fn, *[ref(a) for a in args]) for args in args_list]
        return _collect(runner, handles, "aggregate", None)

    return map_chunks


def aggregate_examples(config: ScoreConfig, runner: Runner, example_files: list[Location], *,
                       n_examples: int) -> pa.Table:
    """Read the examples' numeric (and group) columns and aggregate them.

    Text is never read. The bootstrap is spread over ``runner``'s workers when it is large
    (see :func:`spreads_bootstrap`); the result does not depend on where it ran.

    Args:
        config: the run's settings.
        runner: where bootstrap chunks may run.
        example_files: the examples files written by the score stage.
        n_examples: their rows in all (to decide where the bootstrap runs).

    Raises:
        InputError: no example.

    """
    from pipeline.aggregate import aggregate

    # No sort needed: each example's resampling weights are keyed by the hash of its id and
    # the weighted sums are exact (see pipeline.stats), so the intervals do not depend on
    # the row order (partition_rows, engine, order of the input files).
    draws = n_examples * config.bootstrap * (2 if config.group_by else 1)
    distribute = spreads_bootstrap(runner, draws)
    return aggregate(lambda columns: read_columns(example_files, columns),
                     metrics=config.metrics, group_by=config.group_by,
                     thresholds=config.thresholds, n_bootstrap=config.bootstrap,
                     confidence=config.confidence, seed=config.seed,
                     map_chunks=chunk_mapper(runner) if distribute else None,
                     id_column=config.id_column, options=config.to_dict())


def spreads_bootstrap(runner: Runner, draws: int) -> bool:
    """Whether the bootstrap runs as tasks on ``runner`` rather than in the driver's threads.

    Only on a Ray cluster with more CPUs than the driver's machine, and for at least
    :data:`DISTRIBUTE_MIN_DRAWS` draws; a local Ray shares the driver's cores.
    """
    if runner.name == "local" or draws < DISTRIBUTE_MIN_DRAWS:
        return False
    return int(runner.describe().get("num_cpus") or 0) > (os.cpu_count() or 1)


def choose_engine(config: ScoreConfig, plan: Plan) -> tuple[str, str]:
    """Decide where a run goes: ``("local" or "ray", why)``.

    ``auto`` runs on Ray when a cluster address is given (``--address``, ``RAY_ADDRESS``),
    when Ray is already initialized in this process (a notebook, a test session: nothing to
    start) or when the input has more than :data:`AUTO_LOCAL_MAX_ROWS` prediction rows, and
    in-process (on every CPU) otherwise: up to that size the in-process engine is faster on
    one machine and its memory stays a few GB.
    """
    if config.engine != "auto":
        return config.engine, f"--engine {config.engine}"
    if config.resolved_address():
        return "ray", "auto: a Ray cluster address is set"
    ray = sys.modules.get("ray")  # never imported just to ask
    if ray is not None and ray.is_initialized():
        return "ray", "auto: Ray is already initialized in this process"
    rows = plan.prediction_rows
    if rows > AUTO_LOCAL_MAX_ROWS:
        return "ray", f"auto: {rows:,} prediction rows > {AUTO_LOCAL_MAX_ROWS:,}"
    return "local", f"auto: {rows:,} prediction rows <= {AUTO_LOCAL_MAX_ROWS:,}"


def make_runner(config: ScoreConfig, engine: str | None = None) -> Runner:
    """Start a runner: in-process, a local Ray, or a Ray cluster.

    Args:
        config: the run's settings.
        engine: ``local`` or ``ray`` (from :func:`choose_engine`); None: ``config.engine``,
            with ``auto`` taken as ``ray``.

    Raises:
        ExecutionError: Ray could not start or the cluster could not be reached.

    """
    if (engine or config.engine) == "local":
        from pipeline.engine.local import LocalRunner

        return LocalRunner(processes=config.num_cpus)
    from pipeline.engine.ray_runner import RayRunner, package_runtime_env

    address = config.resolved_address()
    runtime_env = None
    if address:
        runtime_env = (package_runtime_env(config.runtime_env) if config.ship_code
                       else config.runtime_env)
    return RayRunner(address=address, num_cpus=config.num_cpus, runtime_env=runtime_env)
