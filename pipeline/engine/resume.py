"""Resuming an interrupted run: the key of its work, and the records of what is done.

A run's staging directory (see :mod:`pipeline.io.write`) is named after :func:`run_key`, a
hash of everything that decides the examples files: the inputs (path, size, modification
time, row groups), every setting except where the work runs, and the package version. A
rerun of the same command finds it; a rerun with other inputs or settings gets a fresh one.

Inside it, the check stage's results are saved once the check passed (``checks.json``), and
each score task writes a completion marker (``completions/part-*.json``) right after its
examples file: datatrove's completions folder. A rerun skips the check stage when
``checks.json`` is there and scores only the partitions without a valid marker.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import posixpath
import typing
from collections.abc import Iterable
from typing import Any, TypeVar

import pyarrow.fs as pafs

from pipeline.config import ScoreConfig
from pipeline.engine.plan import Plan
from pipeline.io.files import Location
from pipeline.io.read import InputFile
from pipeline.io.write import COMPLETIONS_DIR, EXAMPLES_DIR, OutputDir, read_json, write_json

# Settings that decide where the work runs, not what it produces: left out of the key, so
# that a run started on one engine or cluster can be finished on another.
EXECUTION_SETTINGS = frozenset({"engine", "address", "num_cpus", "ship_code", "runtime_env",
                                "allow_local_paths", "scratch", "storage"})
CHECKS_FILE = "checks.json"
KEY_HEX_DIGITS = 16

T = TypeVar("T")


def run_key(plan: Plan, config: ScoreConfig) -> str:
    """Return the key of a run's work: 16 hex digits of a SHA-256.

    Args:
        plan: the run's plan (input footers, partitions).
        config: the run's settings (execution settings are left out).

    """
    from pipeline import __version__

    material = {
        "version": __version__,
        "settings": {k: v for k, v in config.to_dict().items() if k not in EXECUTION_SETTINGS},
        "layout": plan.spec.layout,
        "n_partitions": plan.n_partitions,
        "predictions": _fingerprints(plan.prediction_files),
        "references": _fingerprints(plan.reference_files),
    }
    text = json.dumps(material, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_HEX_DIGITS]


def _fingerprints(files: Iterable[InputFile]) -> list[list[Any]]:
    return [[f.uri, f.size_bytes, f.num_rows, list(f.row_group_rows), f.mtime_ns]
            for f in files]


def completion_name(part_name: str) -> str:
    """Return a partition's marker path in the staging directory, from its examples file name.

    ``part-00003.parquet`` -> ``completions/part-00003.json``.
    """
    return f"{COMPLETIONS_DIR}/{part_name.removesuffix('.parquet')}.json"


def to_record(obj: Any) -> dict[str, Any]:
    """Return a task result dataclass as JSON-ready data (nested dataclasses included)."""
    return dataclasses.asdict(obj)


def from_record(cls: type[T], data: Any) -> T | None:
    """Rebuild a dataclass written by :func:`to_record`; None if the record does not fit.

    A record that does not fit (written by another version, damaged) counts as absent, so
    its work is redone rather than trusted.
    """
    if not isinstance(data, dict):
        return None
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            return None
        value = data[f.name]
        hint = hints.get(f.name)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            value = from_record(hint, value)
            if value is None:
                return None
        kwargs[f.name] = value
    try:
        return cls(**kwargs)
    except (TypeError, ValueError):
        return None


def write_checks(output: OutputDir, checks: list[Any]) -> None:
    """Save the check stage's results (after it passed) in the staging directory."""
    write_json([to_record(c) for c in checks], output.control(CHECKS_FILE))


def read_checks(output: OutputDir, cls: type[T], n_partitions: int) -> list[T] | None:
    """Return the saved check results, one per partition in order, or None if absent or stale."""
    data = read_json(output.control(CHECKS_FILE))
    if not isinstance(data, list) or len(data) != n_partitions:
        return None
    checks = [from_record(cls, d) for d in data]
    if any(c is None or getattr(c, "index", None) != b for b, c in enumerate(checks)):
        return None
    return typing.cast(list[T], checks)


def read_completions(output: OutputDir, plan: Plan, cls: type[T]) -> dict[int, T]:
    """Return the partitions already written, by index, with their recorded results.

    A partition counts as done when its marker is readable, names it, and its examples
    file is in the staging directory with the recorded size (no file when it had no
    example).
    """
    markers = output.control(COMPLETIONS_DIR)
    try:
        present = {posixpath.basename(e.path) for e in markers.fs.get_file_info(
            pafs.FileSelector(markers.path, allow_not_found=True))
            if e.type == pafs.FileType.File}
    except OSError:
        return {}
    done: dict[int, T] = {}
    for b in range(plan.n_partitions):
        name = completion_name(plan.part_name(b))
        if name.rsplit("/", 1)[-1] not in present:
            continue
        result = from_record(cls, read_json(output.control(name)))
        if result is None or getattr(result, "index", None) != b:
            continue
        if getattr(result, "name", None) is not None and not _has_size(
                output.staged(f"{EXAMPLES_DIR}/{plan.part_name(b)}"),
                getattr(result, "size_bytes", None)):
            continue
        done[b] = result
    return done


def _has_size(loc: Location, size: Any) -> bool:
    try:
        info = loc.fs.get_file_info(loc.path)
    except OSError:
        return False
    return info.type == pafs.FileType.File and info.size == size


__all__ = ["CHECKS_FILE", "EXECUTION_SETTINGS", "completion_name", "from_record",
           "read_checks", "read_completions", "run_key", "to_record", "write_checks"]
