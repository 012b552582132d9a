"""The plan of a run: which row-group ranges are read, and into how many partitions.

A *unit* is a range of consecutive row groups of one input file, at most ``partition_rows``
rows unless one row group is larger. Units are read and hash-partitioned by id; a
*partition* gathers every row of its ids from both sides and is scored and written as
``examples/part-{index}.parquet``. Everything here depends only on the inputs' footers and
the settings, never on the cluster, so the output files are the same wherever a run runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.config import ScoreConfig
from pipeline.errors import InputError
from pipeline.io.files import list_parquet_files
from pipeline.io.read import InputFile, read_footers
from pipeline.io.schema import InputSpec, resolve_inputs


@dataclass(frozen=True)
class Unit:
    """A range of row groups of one file, read by one task.

    Attributes:
        side: ``predictions`` or ``references``.
        index: position among the side's units (file order, then row-group order).
        uri: the file.
        row_groups: row group indices, ascending.
        num_rows: rows in those row groups.
        size_bytes: the file's size when planned (checked when the rows are read).
        mtime_ns: the file's modification time when planned, None when the storage has none.

    """

    side: str
    index: int
    uri: str
    row_groups: tuple[int, ...]
    num_rows: int
    size_bytes: int | None = None
    mtime_ns: int | None = None


@dataclass(frozen=True)
class Plan:
    """Everything the engine needs to run, decided on the driver from footers alone.

    Attributes:
        spec: resolved columns and reference layout.
        prediction_files: footers of the predictions files, sorted by path.
        reference_files: footers of the references files (empty for the inline layout).
        prediction_units: units of the predictions.
        reference_units: units of the references.
        n_partitions: ``ceil(prediction rows / partition_rows)``, at least 1.

    """

    spec: InputSpec
    prediction_files: tuple[InputFile, ...]
    reference_files: tuple[InputFile, ...]
    prediction_units: tuple[Unit, ...]
    reference_units: tuple[Unit, ...]
    n_partitions: int

    @property
    def prediction_rows(self) -> int:
        """Rows over all predictions files."""
        return sum(f.num_rows for f in self.prediction_files)

    @property
    def reference_rows(self) -> int:
        """Rows over all references files."""
        return sum(f.num_rows for f in self.reference_files)

    def part_name(self, index: int) -> str:
        """File name of partition ``index``'s examples, e.g. ``part-00003.parquet``."""
        width = max(5, len(str(self.n_partitions - 1)))
        return f"part-{index:0{width}d}.parquet"


def make_units(files: Sequence[InputFile], *, side: str, max_rows: int) -> tuple[Unit, ...]:
    """Cut files into units of consecutive row groups of at most ``max_rows`` rows.

    A row group larger than ``max_rows`` is a unit of its own; empty files give no unit.
    """
    units: list[Unit] = []
    for f in files:
        groups: list[int] = []
        rows = 0
        for g, n in enumerate(f.row_group_rows):
            if groups and rows + n > max_rows:
                units.append(Unit(side, len(units), f.uri, tuple(groups), rows,
                                  f.size_bytes, f.mtime_ns))
                groups, rows = [], 0
            groups.append(g)
            rows += n
        if rows:
            units.append(Unit(side, len(units), f.uri, tuple(groups), rows, f.size_bytes,
                              f.mtime_ns))
    return tuple(units)


def make_plan(predictions: str, references: str | None, config: ScoreConfig) -> Plan:
    """Locate the inputs, read their footers, check their columns and cut the work.

    Args:
        predictions: a Parquet file, a directory of shards or a glob (path or URI).
        references: the same for a separate references table, or None when the references
            are a list column of the predictions table.
        config: the run's settings.

    Raises:
        InputError: missing or unreadable files, missing or mistyped columns, no rows.
        ConfigError: a ride-along column named like an output column.

    """
    pred_files = tuple(read_footers(list_parquet_files(predictions, what="predictions"),
                                    what="predictions"))
    ref_files: tuple[InputFile, ...] = ()
    if references is not None:
        ref_files = tuple(read_footers(list_parquet_files(references, what="references"),
                                       what="references"))
    written = {t.column for t in config.thresholds}
    for metric in config.scoring.specs():
        written.update((*metric.measure_columns, *metric.statistic_columns,
                        f"{metric.name}_reference_index"))
        written.update(name for name, _ in metric.breakdown_fields)  # aggregate.parquet's
    spec = resolve_inputs(config, pred_files, ref_files if references is not None else None,
                          written_columns=written)
    pred_rows = sum(f.num_rows for f in pred_files)
    if pred_rows == 0:
        raise InputError(f"predictions: {predictions} holds no rows "
                         f"({len(pred_files)} file(s))")
    if references is not None and sum(f.num_rows for f in ref_files) == 0:
        raise InputError(f"references: {references} holds no rows ({len(ref_files)} file(s))")
    return Plan(
        spec=spec,
        prediction_files=pred_files,
        reference_files=ref_files,
        prediction_units=make_units(pred_files, side="predictions",
                                    max_rows=config.partition_rows),
        reference_units=make_units(ref_files, side="references",
                                   max_rows=config.partition_rows),
        n_partitions=max(1, math.ceil(pred_rows / config.partition_rows)),
    )
