"""A run's ``manifest.json``: written by :func:`write_run` and read by the run reader.

The one module that knows the manifest's fields: what ``overlap score`` writes (run id,
signature, resolved config, engine, inputs, outputs with checksums, counts, stages and
timings), their JSON types (:data:`MANIFEST_TYPES`, checked when a run is opened), and how
the inputs a run names are found again (:func:`input_files`, used to show texts).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from pipeline import __version__
from pipeline.errors import InputError
from pipeline.io.schema import RUN_ID_KEY, SIGNATURE_KEY
from pipeline.io.write import (
    AGGREGATE_FILE,
    EXAMPLES_DIR,
    MANIFEST_FILE,
    OutputDir,
    checksum,
    write_json,
    write_parquet,
)

MANIFEST_NAME = MANIFEST_FILE


def _input_entry(uri: str, files: Sequence[Any]) -> dict[str, Any]:
    return {"uri": uri, "files": [{"path": f.uri, "size_bytes": f.size_bytes,
                                   "num_rows": f.num_rows} for f in files]}


def write_run(output: OutputDir, *, plan: Any, predictions: str, references: str | None,
              config: dict[str, Any], run_id: str, signature: str, started: datetime,
              resumed: bool, aggregate: pa.Table, parts: Sequence[Any],
              engine: dict[str, Any], counts: dict[str, Any], stages: dict[str, Any],
              task_seconds: dict[str, float], seconds: dict[str, float],
              t0: float) -> dict[str, Any]:
    """Write a staged run's ``aggregate.parquet`` and ``manifest.json`` (not yet published).

    Args:
        output: the staged run directory (its examples files already written).
        plan: the run's plan (:class:`pipeline.engine.plan.Plan`: ``prediction_files``,
            ``reference_files``, ``spec.layout``, ``spec.reference_column``).
        predictions: the predictions input as given.
        references: the references input as given, or None (references inline).
        config: the resolved settings (``ScoreConfig.to_dict()``).
        run_id: the run's id, written into the aggregate's key-value metadata.
        signature: the run's signature string, likewise.
        started: when the run started (UTC).
        resumed: the run resumed an interrupted one.
        aggregate: the aggregate table.
        parts: the partitions that wrote an examples file (``name``, ``num_rows``,
            ``size_bytes``, ``index``, ``where``), in partition order.
        engine: the engine's description.
        counts: the run's counts (rows, examples scored, skipped, data notes).
        stages: per stage, what was run and what was reused.
        task_seconds: seconds inside tasks per stage.
        seconds: wall seconds per stage; ``write`` and ``total`` are added.
        t0: ``time.perf_counter()`` when the run started, for ``total``.

    Returns:
        The manifest, as written.

    Raises:
        ExecutionError: the storage failed.

    """
    t = time.perf_counter()
    agg_size = write_parquet(aggregate, output.staged(AGGREGATE_FILE),
                             metadata={SIGNATURE_KEY: signature.encode(),
                                       RUN_ID_KEY: run_id.encode()})
    examples = [{"path": f"{EXAMPLES_DIR}/{p.name}", "num_rows": p.num_rows,
                 "size_bytes": p.size_bytes, "partition": p.index, "where": p.where,
                 "sha256": checksum(output.staged(f"{EXAMPLES_DIR}/{p.name}"))}
                for p in parts]
    manifest: dict[str, Any] = {
        "run_id": run_id,
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": None,
        "version": __version__,
        "signature": signature,
        "output": output.final.uri,
        "config": config,
        "engine": engine,
        "inputs": {
            "predictions": _input_entry(predictions, plan.prediction_files),
            "references": None if references is None
            else _input_entry(references, plan.reference_files),
            "layout": plan.spec.layout,
            "reference_column": plan.spec.reference_column,
        },
        "outputs": {
            "examples": examples,
            "aggregate": {"path": AGGREGATE_FILE, "num_rows": aggregate.num_rows,
                          "size_bytes": agg_size,
                          "sha256": checksum(output.staged(AGGREGATE_FILE))},
        },
        "counts": counts,
        "resumed": resumed,
        "stages": stages,
        "seconds": seconds,
        "task_seconds": task_seconds,
    }
    seconds["write"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - t0
    manifest["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_json(manifest, output.staged(MANIFEST_FILE))
    return manifest


def read_manifest(fs: pafs.FileSystem, path: str, shown: str) -> dict[str, Any]:
    """Read a run's ``manifest.json`` as a JSON object (types not yet checked).

    Args:
        fs: the run's filesystem.
        path: the manifest's path within ``fs``.
        shown: the run directory as the user knows it, for messages.

    Raises:
        InputError: no manifest, an unreadable one, or one that is not a JSON object.

    """
    try:
        with fs.open_input_stream(path) as fh:
            manifest = json.loads(fh.read().decode("utf-8"))
    except FileNotFoundError as err:
        raise InputError(f"{shown} has no {MANIFEST_NAME}") from err
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"cannot read {shown}/{MANIFEST_NAME}: {err}") from err
    if not isinstance(manifest, dict):
        raise InputError(f"{shown}/{MANIFEST_NAME} is not a JSON object")
    return manifest


# The JSON types of the manifest fields that readers use, as ``overlap score`` writes them
# (dotted paths; ``*`` is every value of an object). A field of another type is refused by
# :func:`open_run`, naming it, rather than failing in whichever command reads it first.
MANIFEST_TYPES: dict[str, tuple[str, ...]] = {
    "run_id": ("string",),
    "signature": ("string", "null"),
    "started_at": ("string", "null"),
    "finished_at": ("string", "null"),
    "version": ("string", "null"),
    "output": ("string", "null"),
    "resumed": ("boolean", "null"),
    "config": ("object", "null"),
    "config.id_column": ("string", "null"),
    "config.prediction_column": ("string", "null"),
    "config.reference_column": ("string", "null"),
    "config.group_by": ("array", "string", "null"),
    "config.group_by.*": ("string",),
    "config.metrics": ("array", "string", "null"),
    "config.metrics.*": ("string",),
    "config.tokenizer": ("string", "null"),
    "config.stemmer": ("string", "null"),
    "config.case_sensitive": ("boolean", "null"),
    "config.multi_reference": ("string", "null"),
    "config.sentence_split": ("string", "boolean", "null"),
    "config.max_tokens": ("integer", "null"),
    "config.keep_text": ("boolean", "null"),
    "config.confidence": ("number", "null"),
    "config.bootstrap": ("integer", "null"),
    "config.seed": ("integer", "null"),
    "inputs": ("object", "array", "null"),
    "inputs.predictions": ("object", "array", "string", "null"),
    "inputs.predictions.files": ("array", "null"),
    "inputs.predictions.files.*": ("object",),
    "inputs.predictions.files.*.path": ("string",),
    "inputs.predictions.files.*.size_bytes": ("integer", "null"),
    "inputs.references": ("object", "null"),
    "inputs.references.files": ("array", "null"),
    "inputs.references.files.*": ("object",),
    "inputs.references.files.*.path": ("string",),
    "inputs.references.files.*.size_bytes": ("integer", "null"),
    "inputs.layout": ("string", "null"),
    "inputs.reference_column": ("string", "null"),
    "outputs": ("object", "null"),
    "outputs.examples": ("array",),
    "outputs.examples.*": ("object",),
    "outputs.examples.*.path": ("string",),
    "outputs.examples.*.num_rows": ("integer", "null"),
    "outputs.examples.*.size_bytes": ("integer", "null"),
    "outputs.examples.*.sha256": ("string", "null"),
    "outputs.aggregate": ("object", "null"),
    "outputs.aggregate.path": ("string",),
    "outputs.aggregate.num_rows": ("integer", "null"),
    "outputs.aggregate.size_bytes": ("integer", "null"),
    "outputs.aggregate.sha256": ("string", "null"),
    "counts": ("object", "null"),
    "counts.skipped": ("object", "null"),
    "counts.skipped_ids": ("object", "null"),
}


# Every pattern of MANIFEST_TYPES and each of its prefixes (the objects on the way).
_PATTERNS = {".".join(k.split(".")[:n]) for k in MANIFEST_TYPES
             for n in range(1, k.count(".") + 2)}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def check_manifest(manifest: dict[str, Any], *, shown: str) -> None:
    """Check the JSON types of a manifest's fields against :data:`MANIFEST_TYPES`.

    Absent fields pass (readers fall back to defaults); fields not in the table are not
    checked. An integer passes where a number is expected; a boolean never passes as a number.

    Args:
        manifest: the parsed ``manifest.json``.
        shown: the file as the user knows it, for the message.

    Raises:
        InputError: a field of another type, naming it, its type and the expected ones.

    """
    def visit(value: Any, pattern: str, where: str) -> None:
        allowed = MANIFEST_TYPES.get(pattern)
        kind = _json_type(value)
        if allowed is not None and kind not in allowed \
                and not (kind == "integer" and "number" in allowed):
            raise InputError(f"{shown}: field {where!r} is {_a(kind)}, not "
                             f"{' or '.join(map(_a, allowed))}",
                             hint="the manifest was edited or damaged; score the run again")
        if isinstance(value, dict):
            for key, item in value.items():
                named = f"{pattern}.{key}" if pattern else str(key)
                child = named if named in _PATTERNS else f"{pattern}.*"
                if child in _PATTERNS:
                    visit(item, child, f"{where}.{key}" if where else str(key))
        elif isinstance(value, list) and f"{pattern}.*" in _PATTERNS:
            for index, item in enumerate(value):
                visit(item, f"{pattern}.*", f"{where}[{index}]")

    visit(manifest, "", "")


def _a(kind: str) -> str:
    if kind == "null":
        return kind
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def input_files(manifest: dict[str, Any], side: str) -> list[tuple[str, int | None]]:
    """Return the input files of one side a manifest names, with their recorded sizes.

    Looks, in order, at ``inputs.<side>`` (as ``overlap score`` writes it: an object with
    ``files``, a list of ``{"path", "size_bytes", "num_rows"}``; also a path or a list of
    paths), a list ``inputs`` of objects with ``role: <side>``, and ``config.<side>``.

    Args:
        manifest: a parsed manifest.
        side: ``predictions`` or ``references``.

    Returns:
        ``(path, size in bytes or None when not recorded)`` pairs; empty when none is named.

    """

    def files_of(value: Any) -> list[tuple[str, int | None]]:
        if isinstance(value, str):
            return [(value, None)]
        if isinstance(value, dict):
            if isinstance(value.get("path"), str):
                size = value.get("size_bytes", value.get("size"))
                return [(value["path"], size if isinstance(size, int) else None)]
            for key in ("files", "paths", "uri"):
                if value.get(key):
                    return files_of(value[key])
            return []
        if isinstance(value, (list, tuple)):
            return [f for item in value for f in files_of(item)]
        return []

    inputs = manifest.get("inputs")
    if isinstance(inputs, dict) and inputs.get(side):
        return files_of(inputs[side])
    if isinstance(inputs, list):
        found = [f for item in inputs if isinstance(item, dict)
                 and item.get("role") in (side, side.rstrip("s")) for f in files_of(item)]
        if found:
            return found
    config = manifest.get("config")
    if isinstance(config, dict):
        return files_of(config.get(side))
    return []


__all__ = ["MANIFEST_TYPES", "check_manifest", "input_files", "read_manifest", "write_run"]
