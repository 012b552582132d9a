"""The texts of some examples of a finished run: predictions and references.

Predictions come from the run's ``prediction`` column when it was scored with
``--keep-text``, else from the prediction inputs its manifest names; references always come
from the inputs (the run does not keep them): the references table (``list`` or ``rows``
layout) or the predictions table's list column (``inline``). Inputs that changed size since
the run are not read (their texts may no longer be the scored ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from pipeline.errors import InputError
from pipeline.io.manifest import input_files
from pipeline.io.read import input_dataset
from pipeline.io.runs import RunInfo, filesystem, read_predictions
from pipeline.io.schema import decode_reference_lists


def _dataset(files: list[tuple[str, int | None]], what: str) -> pads.Dataset:
    fs, _ = filesystem(files[0][0])
    inner = [filesystem(p)[1] for p, _ in files]
    for (path, size), info in zip(files, fs.get_file_info(inner), strict=True):
        if info.type == pafs.FileType.NotFound:
            raise InputError(f"the run's {what} input {path} is gone")
        if size is not None and info.size != size:
            raise InputError(f"the run's {what} input {path} has changed since the run "
                             f"({info.size} bytes, not {size})")
    return input_dataset(fs, inner, what=what)


def typed_ids(run: RunInfo, ids: Sequence[Any]) -> list[Any]:
    """Ids converted to the run's id type (``--id 17`` for an int64 id column).

    Raises:
        InputError: an id that is not an integer for an integer id column, or one outside
            the column type's range (no example can have it).

    """
    id_type = run.schema.field(run.id_column).type
    if pa.types.is_integer(id_type):
        try:
            out = [int(i) for i in ids]
        except ValueError:
            raise InputError(f"{run.path}: ids are integers, got {list(ids)!r}") from None
        bounds = np.iinfo(id_type.to_pandas_dtype())
        for i in out:
            if not bounds.min <= i <= bounds.max:
                raise InputError(f"{run.path}: no example with {run.id_column} {i}: the ids "
                                 f"are {id_type}, from {bounds.min} to {bounds.max}")
        return out
    return [str(i) for i in ids]


def read_references(run: RunInfo, ids: Sequence[Any]) -> dict[Any, list[str | None]]:
    """The references of some examples, from the run's inputs.

    Args:
        run: an opened run.
        ids: example ids (of the run's id type).

    Returns:
        ``id -> references`` in their scoring order, for the ids found.

    Raises:
        InputError: the manifest names no input, or an input is gone or changed.

    """
    manifest = run.manifest
    inputs = manifest.get("inputs") or {}
    layout = inputs.get("layout") or "inline"
    config = run.config
    column = inputs.get("reference_column") or config.get("reference_column") or "references"
    side = "predictions" if layout == "inline" else "references"
    files = input_files(manifest, side)
    if not files:
        raise InputError(f"{run.path}: the manifest names no {side} input to read references "
                         "from")
    data = _dataset(files, side)
    table = data.to_table(columns=[run.id_column, column],
                          filter=pads.field(run.id_column).isin(pa.array(list(ids))))
    if layout != "rows" and pa.types.is_string(table.schema.field(column).type):
        # a CSV input: each cell a JSON array of references, as the run decoded it
        table = table.set_column(1, column, decode_reference_lists(
            table.column(column), table.column(run.id_column), side=side,
            uri=files[0][0], name=column))
    out: dict[Any, list[str | None]] = {}
    for key, value in zip(table[run.id_column].to_pylist(), table[column].to_pylist(),
                          strict=True):
        if layout == "rows":
            out.setdefault(key, []).append(value)
        else:
            out[key] = list(value or [])
    return out


def read_texts(run: RunInfo, ids: Sequence[Any]
               ) -> dict[Any, tuple[str | None, list[str | None]]]:
    """Prediction and references of some examples of a run.

    Args:
        run: an opened run.
        ids: example ids (of the run's id type); with group columns, the first row of
            each id is taken.

    Returns:
        ``id -> (prediction or None when not found, references)`` for the ids whose
        references were found.

    Raises:
        InputError: references cannot be read (see :func:`read_references`).

    """
    import pandas as pd

    refs = read_references(run, ids)
    keys = pd.DataFrame({run.id_column: list(ids)})
    predictions, _ = read_predictions(run, keys)
    return {i: (p, refs[i]) for i, p in zip(ids, predictions, strict=True) if i in refs}


def example_languages(run: RunInfo, ids: Sequence[Any]) -> dict[Any, Any] | None:
    """Each example's language, when the run took it from a column (``--language column:COL``).

    Explaining such an example needs its own language (its row's value), which the engine
    carried to the run's examples.

    Args:
        run: an opened run.
        ids: example ids (of the run's id type).

    Returns:
        None when the run's ``language`` is not ``column:COL`` (one language for every
        row, or none); else ``id -> the row's value`` for the ids found.

    Raises:
        InputError: the run's examples have no such column, or cannot be read.

    """
    from pipeline.metrics.rouge.languages import language_column

    column = language_column(str(run.config.get("language") or ""))
    if column is None:
        return None
    if column not in run.schema.names:
        raise InputError(f"{run.path}: the examples have no column {column!r}, which "
                         f"--language column:{column} read")
    try:
        table = pads.dataset(list(run.files), format="parquet", filesystem=run.fs).to_table(
            columns=[run.id_column, column],
            filter=pads.field(run.id_column).isin(pa.array(list(ids))))
    except (OSError, pa.ArrowInvalid) as err:
        raise InputError(f"cannot read the examples of {run.path}: {err}") from err
    return dict(zip(table[run.id_column].to_pylist(), table[column].to_pylist(), strict=True))


__all__ = ["example_languages", "read_references", "read_texts", "typed_ids"]
