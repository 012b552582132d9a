"""Publish a run into Apache Iceberg tables with pyiceberg.

Tables ``NS.examples`` and ``NS.aggregates`` in a catalog named by URI: ``sqlite:///PATH``
(or another SQLAlchemy URL: pyiceberg's SQL catalog, files under ``--warehouse``),
``http(s)://`` (REST), ``thrift://`` (Hive), or a catalog name configured in
``~/.pyiceberg.yaml`` / ``PYICEBERG_CATALOG__*`` variables. Partitioned by ``run_date``
(identity). Each append's snapshot carries the summary property ``overlap.run-id``; before
writing, the table's snapshots are searched for it, so a run already in the table is never
appended again (expiring snapshots forgets which runs were published). A commit that loses
to a concurrent writer is retried after reloading the table and looking for the run again;
tables are created with ``commit.retry.num-retries=0`` so that pyiceberg does not re-apply
an append on its own (a table created elsewhere keeps its setting, and two publishers of
the same run racing on it could both land).
"""

from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa

from pipeline.errors import ConfigError, ExecutionError, InputError, PipelineError
from pipeline.warehouse.common import (
    PARTITION_COLUMN,
    TABLES,
    PublishedTable,
    RunTables,
    after_commit,
    check_additive,
)

FORMAT = "iceberg"
RUN_ID_PROPERTY = "overlap.run-id"
ROWS_PROPERTY = "overlap.rows"
COMMIT_ATTEMPTS = 8
# pyiceberg retries a failed commit by re-applying the append, without our check for the
# run: two publishers of the same run would both land. Tables created here retry nothing
# inside pyiceberg; the loop below reloads the table and looks for the run first.
TABLE_PROPERTIES = {"commit.retry.num-retries": "0"}
_SQL_SCHEMES = ("sqlite", "postgresql", "mysql")


def load_catalog(catalog_uri: str, *, warehouse: str | None = None) -> Any:
    """Open an Iceberg catalog by URI or configured name.

    Args:
        catalog_uri: ``sqlite:///PATH`` or another SQLAlchemy URL (SQL catalog),
            ``http(s)://...`` (REST), ``thrift://...`` (Hive), or the name of a catalog in
            pyiceberg's configuration.
        warehouse: where data files go (path or URI). For a SQLite catalog the default is
            ``warehouse/`` beside the database file; other catalogs use their own default.

    Raises:
        ConfigError: a SQL catalog without a warehouse location that cannot be defaulted.
        ExecutionError: pyiceberg missing, or the catalog cannot be opened.

    """
    try:
        from pyiceberg.catalog import load_catalog as _load
    except ImportError:
        raise ExecutionError("publishing to Iceberg needs the pyiceberg package",
                             hint="pip install 'overlap-pipeline[warehouse]'") from None
    props: dict[str, str] = {}
    scheme = urlparse(catalog_uri).scheme.split("+")[0]
    if "://" in catalog_uri:
        props["uri"] = catalog_uri
        if scheme in _SQL_SCHEMES:
            props["type"] = "sql"
            if scheme == "sqlite":
                path = catalog_uri.split(":///", 1)[-1]
                if path and path != ":memory:":
                    parent = os.path.dirname(os.path.abspath(path))
                    os.makedirs(parent, exist_ok=True)
                    warehouse = warehouse or os.path.join(parent, "warehouse")
            if not warehouse:
                raise ConfigError(f"catalog {catalog_uri}: give --warehouse (where the "
                                  "tables' files go)")
        name = "overlap"
    else:
        name = catalog_uri
    if warehouse:
        if "://" not in warehouse:
            os.makedirs(warehouse, exist_ok=True)
            warehouse = "file://" + os.path.abspath(warehouse)
        props["warehouse"] = warehouse
    for attempt in range(COMMIT_ATTEMPTS):
        try:
            return _load(name, **props)
        except Exception as err:  # noqa: BLE001 - pyiceberg raises many kinds; say which
            # A new SQL catalog creates its tables when first opened: two publishers opening
            # it at once race ("table iceberg_tables already exists", "database is locked").
            racing = "already exists" in str(err) or "locked" in str(err)
            if not racing or attempt + 1 == COMMIT_ATTEMPTS:
                raise ExecutionError(f"cannot open Iceberg catalog {catalog_uri}: "
                                     f"{type(err).__name__}: {err}") from err
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def _published_snapshot(table: Any, run_id: str) -> Any | None:
    for snap in table.metadata.snapshots:
        summary = snap.summary
        props = getattr(summary, "additional_properties", None) or {}
        if props.get(RUN_ID_PROPERTY) == run_id:
            return snap
    return None


def _create(catalog: Any, identifier: str, schema: pa.Schema) -> Any:
    from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError

    try:
        with catalog.create_table_transaction(identifier, schema=schema,
                                              properties=TABLE_PROPERTIES) as txn:
            with txn.update_spec() as spec:
                spec.add_identity(PARTITION_COLUMN)
    except (TableAlreadyExistsError, CommitFailedException):
        pass  # a concurrent publisher created it ("Table already exists")
    return catalog.load_table(identifier)


def _publish_one(catalog: Any, identifier: str, rows: pa.Table, run_id: str,
                 table_name: str) -> PublishedTable:
    from pyiceberg.exceptions import CommitFailedException, NoSuchTableError

    where = f"Iceberg table {identifier}"
    last: Exception | None = None
    for attempt in range(COMMIT_ATTEMPTS):
        added: tuple[str, ...] = ()
        try:
            table = catalog.load_table(identifier)
        except NoSuchTableError:
            table = _create(catalog, identifier, rows.schema)
        snap = _published_snapshot(table, run_id)
        if snap is not None:
            n = int((snap.summary.additional_properties or {}).get(ROWS_PROPERTY, -1))
            return PublishedTable(FORMAT, table_name, identifier, n, False, snap.snapshot_id)
        fields = table.schema().as_arrow()
        if PARTITION_COLUMN not in [f.name for f in fields] or not any(
                table.schema().find_field(f.source_id).name == PARTITION_COLUMN
                for f in table.spec().fields):
            raise InputError(f"{where} is not partitioned by {PARTITION_COLUMN}")
        added = check_additive(fields, rows.schema, where=where)
        try:
            with table.transaction() as txn:
                if added:
                    with txn.update_schema() as update:
                        update.union_by_name(rows.schema)
                txn.append(rows, snapshot_properties={RUN_ID_PROPERTY: run_id,
                                                      ROWS_PROPERTY: str(rows.num_rows)})
        except CommitFailedException as err:
            last = err
            time.sleep(0.05 * (attempt + 1))
            continue
        except (ValueError, TypeError) as err:
            raise InputError(f"{where}: {err}") from err
        except OSError as err:
            raise ExecutionError(f"cannot write {where}: {err}") from err
        except Exception as err:  # SQLite "database is locked" and the like: retry
            if "locked" in str(err) and attempt + 1 < COMMIT_ATTEMPTS:
                last = err
                time.sleep(0.1 * (attempt + 1))
                continue
            raise ExecutionError(f"cannot write {where}: {type(err).__name__}: {err}") from err
        after_commit(FORMAT, table_name)
        table = catalog.load_table(identifier)
        snap = _published_snapshot(table, run_id)
        return PublishedTable(FORMAT, table_name, identifier, rows.num_rows, True,
                              None if snap is None else snap.snapshot_id, added)
    raise ExecutionError(f"cannot write {where}: {COMMIT_ATTEMPTS} commits lost to "
                         f"concurrent writers ({last})")


def publish_iceberg(run: RunTables, catalog_uri: str, *, namespace: str,
                    warehouse: str | None = None) -> list[PublishedTable]:
    """Append a run to the Iceberg tables ``namespace.examples`` and ``namespace.aggregates``.

    Creates the namespace and tables on first use (partitioned by ``run_date``); adds the
    run's new columns to an existing table in the same commit as its rows. Idempotent per
    table: a table with a snapshot whose summary has ``overlap.run-id`` = the run id is
    left alone.

    Args:
        run: the run's rows (:func:`pipeline.warehouse.common.load_run`).
        catalog_uri: see :func:`load_catalog`.
        namespace: the namespace (dotted for nested namespaces).
        warehouse: the warehouse location (see :func:`load_catalog`).

    Returns:
        One :class:`PublishedTable` per table, examples first.

    Raises:
        ConfigError: an empty namespace; a SQL catalog without warehouse.
        SchemaChangeError: a column's type differs from the table's.
        InputError: a table partitioned otherwise.
        ExecutionError: pyiceberg missing, catalog or storage failures, commits lost to
            concurrent writers too often.

    """
    if not namespace or any(not part for part in namespace.split(".")):
        raise ConfigError(f"namespace {namespace!r}: give a name such as evals or evals.nightly")
    catalog = load_catalog(catalog_uri, warehouse=warehouse)
    try:
        catalog.create_namespace_if_not_exists(namespace)
    except Exception as err:  # noqa: BLE001 - created concurrently (IntegrityError and the like)?
        if not catalog.namespace_exists(namespace):
            raise ExecutionError(f"cannot create Iceberg namespace {namespace}: "
                                 f"{type(err).__name__}: {err}") from err
    out = []
    for name in TABLES:
        identifier = f"{namespace}.{name}"
        try:
            out.append(_publish_one(catalog, identifier, run.tables[name], run.run_id, name))
        except PipelineError:
            raise
        except Exception as err:  # noqa: BLE001 - the catalog's own errors, as one line
            raise ExecutionError(f"cannot write Iceberg table {identifier}: "
                                 f"{type(err).__name__}: {err}") from err
    return out


__all__ = ["RUN_ID_PROPERTY", "load_catalog", "publish_iceberg"]
