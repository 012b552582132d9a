"""A comparison as warehouse rows: the ``comparisons`` table.

An ``overlap compare --output DIR`` (or a nightly's ``ROOT/compare/run_date=D/run_id=ID``)
holds ``compare.parquet`` (one row per group and measure) and ``compare.json`` (the
verdict and its alarms). :func:`load_comparison` turns them into the rows of one table,
``comparisons``, so that a dashboard reads the alarms with SQL:

``comparison_id`` (string, the idempotency key), ``run_date`` (date, the partition),
``baseline_run_id``, ``candidate_run_id``, ``baseline_signature``, ``candidate_signature``
(strings), one string column per label, then the columns of ``compare.parquet`` (``group``
and the group columns, ``metric``, ``measure``, ``statistic``, the counts, the values
``baseline_mean`` and ``candidate_mean``, ``delta``, the interval ``ci_low``/``ci_high``,
``p_value``, ``p_adjusted``, ``mde``, ``band``, ``band_source``, ``history_nights``,
``alarm``, ``missing``, ``drift``, ``drift_statistic``, ``drift_p``), and ``alarm_kind``
(``missing``, ``change``, ``drift``, or null: the row's entry in ``compare.json``'s
``alarms``; a missing-examples alarm names a group, so every row of that group carries it).

``comparison_id`` is a SHA-256 (first 32 hex digits) of what the comparison says: both run
ids, the settings and every row. Comparing the same two runs again with the same settings
gives the same id, and publishing it again writes nothing; another comparison (other
settings, another history, another attempt of a night) is another id and is appended.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Sequence
from datetime import date
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config_checks import parse_run_date
from pipeline.errors import InputError
from pipeline.warehouse.common import (
    COMPARISONS_TABLE,
    RUN_DATE_COLUMN,
    RunTables,
    parse_labels,
    warehouse_type,
)

COMPARISON_ID_COLUMN = "comparison_id"
ALARM_KIND_COLUMN = "alarm_kind"
COMPARE_PARQUET = "compare.parquet"
COMPARE_JSON = "compare.json"
_FRONT = (COMPARISON_ID_COLUMN, RUN_DATE_COLUMN, "baseline_run_id", "candidate_run_id",
          "baseline_signature", "candidate_signature")


def is_comparison(path: str) -> bool:
    """Tell whether ``path`` is a comparison output (``compare.json`` and ``compare.parquet``).

    Args:
        path: a directory (local path or URI).

    Returns:
        True when both files are there; False otherwise (also when it cannot be read).

    """
    from pipeline.errors import PipelineError
    from pipeline.io.runs import filesystem

    try:
        fs, root = filesystem(path)
        return all(fs.get_file_info(posixpath.join(root, name)).type.name == "File"
                   for name in (COMPARE_JSON, COMPARE_PARQUET))
    except (PipelineError, OSError):
        return False


def _kinds(rows: pa.Table, alarms: list[dict[str, Any]]) -> pa.Array:
    """Each row's alarm kind from ``compare.json``'s ``alarms`` (first listed wins)."""
    by_row: dict[tuple[Any, Any, Any], str] = {}
    by_group: dict[Any, str] = {}
    for alarm in alarms:
        kind = str(alarm.get("kind"))
        if alarm.get("metric") is None:
            by_group.setdefault(alarm.get("group"), kind)
        else:
            by_row.setdefault((alarm.get("group"), alarm.get("metric"), alarm.get("measure")),
                              kind)
    groups = rows.column("group").to_pylist()
    metrics = rows.column("metric").to_pylist()
    measures = rows.column("measure").to_pylist()
    out = [by_group.get(g) or by_row.get((g, m, x))
           for g, m, x in zip(groups, metrics, measures, strict=True)]
    return pa.array(out, pa.string())


def _run_date(path: str, document: dict[str, Any], run_date: str | None) -> date:
    if run_date is not None:
        return parse_run_date(run_date)
    parent = posixpath.basename(posixpath.dirname(path.rstrip("/")))
    if parent.startswith("run_date="):
        return parse_run_date(parent.removeprefix("run_date="))
    candidate = document.get("candidate") or {}
    try:
        from pipeline.compare.history import run_date_of
        from pipeline.io.runs import open_run

        day = run_date_of(open_run(str(candidate.get("path"))))
    except Exception:  # noqa: BLE001 - the candidate may be gone: ask for the date
        day = None
    if day is None:
        raise InputError(f"{path}: cannot tell the comparison's run date (not under a "
                         "run_date= directory and the candidate run is not readable)",
                         hint="give --run-date YYYY-MM-DD")
    return parse_run_date(day)


def load_comparison(path: str, *, labels: Sequence[str] = (),
                    run_date: str | None = None) -> RunTables:
    """Read a comparison output into the rows of the ``comparisons`` table.

    Args:
        path: a directory holding ``compare.parquet`` and ``compare.json`` (local path or
            URI).
        labels: ``KEY=VALUE`` strings, one string column each.
        run_date: ``YYYY-MM-DD``; default: the ``run_date=`` directory the comparison sits
            in (a nightly's), else the candidate run's date.

    Returns:
        A :class:`pipeline.warehouse.common.RunTables` whose ``run_id`` is the comparison id,
        ``key_column`` ``comparison_id`` and only table ``comparisons`` (columns: the module
        docstring).

    Raises:
        InputError: a file missing or unreadable, a document without the run ids, a column
            that clashes with the table's own columns or a label, no run date found.
        ConfigError: bad labels or date.

    """
    from pipeline.io.runs import filesystem

    parsed = parse_labels(list(labels))
    fs, root = filesystem(path)
    try:
        with fs.open_input_file(posixpath.join(root, COMPARE_JSON)) as fh:
            document = json.loads(fh.read().decode("utf-8"))
        with fs.open_input_file(posixpath.join(root, COMPARE_PARQUET)) as fh:
            rows = pq.read_table(fh)
    except (OSError, ValueError, pa.ArrowException) as err:
        raise InputError(f"cannot read the comparison in {path}: {err}",
                         hint="name an `overlap compare --output` directory") from err
    if not isinstance(document, dict):
        raise InputError(f"{path}/{COMPARE_JSON} is not a comparison document")
    meta = rows.schema.metadata or {}
    sides = {side: document.get(side) or {} for side in ("baseline", "candidate")}
    ids = {side: sides[side].get("run_id") for side in sides}
    if not all(isinstance(v, str) and v for v in ids.values()):
        raise InputError(f"{path}/{COMPARE_JSON} names no baseline and candidate run ids")
    for col in ("group", "metric", "measure"):
        if col not in rows.column_names:
            raise InputError(f"{path}/{COMPARE_PARQUET} has no column {col!r}")
    day = _run_date(path, document, run_date)
    rows = rows.replace_schema_metadata(None)
    rows = rows.drop_columns([c for c in ("baseline_run_id", "candidate_run_id")
                              if c in rows.column_names])
    reserved = {c.casefold() for c in (*_FRONT, ALARM_KIND_COLUMN)}
    clash = [c for c in (*rows.column_names, *(k for k, _ in parsed))
             if c.casefold() in reserved]
    if clash:
        raise InputError(f"the comparison's column or label {clash[0]!r} is also a column of "
                         "the comparisons table", hint="choose another label key")
    seen: dict[str, str] = {}
    for name in [*rows.column_names, *(k for k, _ in parsed)]:
        if name.casefold() in seen:
            raise InputError(f"the comparison has columns {seen[name.casefold()]!r} and "
                             f"{name!r}, one column for readers that ignore case (DuckDB, "
                             "Trino, Spark)", hint="choose another label key")
        seen[name.casefold()] = name
    signatures = {side: str(sides[side].get("signature")
                            or meta.get(f"overlap.{side}_signature".encode(), b"").decode())
                  for side in sides}
    content = json.dumps({"baseline": ids["baseline"], "candidate": ids["candidate"],
                          "settings": document.get("settings"),
                          "rows": rows.to_pylist()}, sort_keys=True, default=str)
    comparison_id = hashlib.sha256(content.encode("utf-8")).hexdigest()[:32]
    n = rows.num_rows
    front = {
        COMPARISON_ID_COLUMN: pa.array([comparison_id] * n, pa.string()),
        RUN_DATE_COLUMN: pa.array([day] * n, pa.date32()),
        "baseline_run_id": pa.array([ids["baseline"]] * n, pa.string()),
        "candidate_run_id": pa.array([ids["candidate"]] * n, pa.string()),
        "baseline_signature": pa.array([signatures["baseline"]] * n, pa.string()),
        "candidate_signature": pa.array([signatures["candidate"]] * n, pa.string()),
        **{k: pa.array([v] * n, pa.string()) for k, v in parsed},
    }
    kinds = _kinds(rows, list(document.get("alarms") or []))
    table = pa.Table.from_arrays([*front.values(), *rows.columns, kinds],
                                 names=[*front, *rows.column_names, ALARM_KIND_COLUMN])
    table = table.cast(pa.schema([pa.field(f.name, warehouse_type(f.type))
                                  for f in table.schema]))
    fingerprint = hashlib.sha256(json.dumps(
        {"comparison_id": comparison_id, "run_date": day.isoformat(),
         "labels": [list(kv) for kv in parsed], "signatures": signatures},
        sort_keys=True).encode("utf-8")).hexdigest()
    return RunTables(run_id=comparison_id, run_date=day, signature=signatures["candidate"],
                     labels=parsed, tables={COMPARISONS_TABLE: table},
                     fingerprint=fingerprint, key_column=COMPARISON_ID_COLUMN)


__all__ = ["ALARM_KIND_COLUMN", "COMPARISONS_TABLE", "COMPARISON_ID_COLUMN", "is_comparison",
           "load_comparison"]
