"""A scoring run on an engine, from start to stop: choose, start, execute, aggregate, stop.

:func:`score_on_engine` is the engine's half of :func:`pipeline.api.score` (the other half
being the run directory and its manifest): it owns the runner's lifecycle, so that a failed
or interrupted run never leaves an engine running, and it times each stage.
"""

from __future__ import annotations

import atexit
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from pipeline.config import ScoreConfig
from pipeline.engine.plan import Plan
from pipeline.engine.run import (
    Execution,
    Progress,
    aggregate_examples,
    choose_engine,
    execute,
    make_runner,
)
from pipeline.engine.tasks import SKIP_REASONS, PartitionResult
from pipeline.io.write import EXAMPLES_DIR, OutputDir
from pipeline.metrics.registry import data_notes


@dataclass(frozen=True)
class Scored:
    """What a run's engine produced.

    Attributes:
        execution: what the engine did (signature, partitions, stages, skipped examples).
        parts: the partitions that wrote an examples file, in partition order.
        aggregate: the aggregate table (see :func:`pipeline.aggregate.aggregate`).
        engine: the engine's description (kind, CPUs, why it was chosen, spilled bytes).
        counts: the manifest's ``counts`` (rows read, examples scored, skipped by reason,
            data notes summed over partitions, partitions and units).

    """

    execution: Execution
    parts: list[PartitionResult]
    aggregate: pa.Table
    engine: dict[str, Any]
    counts: dict[str, Any]


def score_on_engine(plan: Plan, config: ScoreConfig, output: OutputDir, *, run_id: str,
                    seconds: dict[str, float], progress: Progress | None = None,
                    defer_stop: bool = False) -> Scored:
    """Run ``plan`` on the engine ``config`` asks for and aggregate its examples files.

    Args:
        plan: the run's plan (:func:`pipeline.engine.plan.make_plan`).
        config: the run's settings.
        output: the run directory being staged (examples files go there).
        run_id: the run's id (written into every file).
        seconds: wall seconds per stage, filled in (``engine_start``, the execution's
            stages, ``aggregate``, ``engine_stop``).
        progress: called as ``progress(stage, done, total)`` after each partition.
        defer_stop: stop a local Ray instance when the process exits rather than before
            returning (``seconds`` then has no ``engine_stop``).

    Returns:
        A :class:`Scored`.

    Raises:
        InputError: bad input found by the check or score stage.
        ExecutionError: the engine could not start or failed.

    """
    t = time.perf_counter()
    chosen, reason = choose_engine(config, plan)
    runner = make_runner(config, chosen, prediction_rows=plan.prediction_rows)
    seconds["engine_start"] = time.perf_counter() - t
    try:
        engine = {**runner.describe(), "requested": config.engine, "reason": reason}
        ran = execute(plan, config, runner, output, run_id=run_id, progress=progress)
        seconds.update(ran.seconds)
        t = time.perf_counter()
        parts = [p for p in ran.parts if p.name is not None]
        agg = aggregate_examples(config, runner,
                                 [output.staged(f"{EXAMPLES_DIR}/{p.name}") for p in parts],
                                 n_examples=sum(p.num_rows for p in parts),
                                 group_parts=sum(p.n_groups for p in parts))
        seconds["aggregate"] = time.perf_counter() - t
        engine.update(runner.store_stats())  # spilled bytes (Ray), before it stops
    except BaseException:
        runner.close()  # now: an interrupted or failed run leaves nothing running
        raise
    if defer_stop:
        atexit.register(runner.close)
    else:
        t = time.perf_counter()
        runner.close()
        seconds["engine_stop"] = time.perf_counter() - t
    return Scored(execution=ran, parts=parts, aggregate=agg, engine=engine,
                  counts=_counts(plan, ran, parts))


def _unnamed_languages(ran: Execution) -> dict[str, int]:
    """Rows per ``column:COL`` language that is not a named language, summed over parts."""
    from pipeline.metrics.rouge.languages import UNNAMED_PREFIX

    out: dict[str, int] = {}
    for part in ran.parts:
        for key, n in part.counts.items():
            if key.startswith(UNNAMED_PREFIX):
                name = key[len(UNNAMED_PREFIX):]
                out[name] = out.get(name, 0) + n
    return dict(sorted(out.items()))


def _counts(plan: Plan, ran: Execution, parts: list[PartitionResult]) -> dict[str, Any]:
    unnamed = _unnamed_languages(ran)
    return {
        "prediction_rows": plan.prediction_rows,
        "reference_rows": plan.reference_rows,
        "examples_scored": sum(p.num_rows for p in parts),
        "skipped": {k: ran.skipped.counts.get(k, 0) for k in SKIP_REASONS},
        "skipped_ids": {k: ran.skipped.samples[k] for k in SKIP_REASONS
                        if ran.skipped.counts.get(k)},
        "missing_predictions_scored_zero": sum(p.n_missing_predictions for p in ran.parts),
        "truncated_examples": sum(p.n_truncated for p in ran.parts),
        "null_predictions": sum(p.n_null_predictions for p in ran.parts),
        **{note.key: total for note in data_notes()
           if (total := sum(p.counts.get(note.key, 0) for p in ran.parts))
           or not note.omit_zero},
        # only when there are some: earlier runs' manifests stay byte for byte
        **({"unnamed_languages": unnamed} if unnamed else {}),
        "n_references": ran.n_references,
        "partitions": plan.n_partitions,
        "prediction_units": len(plan.prediction_units),
        "reference_units": len(plan.reference_units),
    }


__all__ = ["Scored", "score_on_engine"]
