"""Publish a run into Apache Iceberg tables with pyiceberg.

Tables ``NS.examples`` and ``NS.aggregates`` in a catalog named by URI: ``sqlite:///PATH``
(or another SQLAlchemy URL: pyiceberg's SQL catalog, files under ``--warehouse``),
``http(s)://`` (REST), ``thrift://`` (Hive), or a catalog name configured in
``~/.pyiceberg.yaml`` / ``PYICEBERG_CATALOG__*`` variables. Partitioned by ``run_date``
(identity). Each append's snapshot carries the summary property ``overlap.run-id``; before
writing, the table's snapshots are searched for it, so a run already in the table is never
appended again (expiring snapshots forgets which runs were published); the snapshot also
records the run's fingerprint (``overlap.fingerprint``), and a run id found with another
one is refused (exit 2). Namespaces may be nested (``evals.nightly``): the SQL catalog keeps
one string per namespace, as Iceberg's JdbcCatalog does. A commit that loses
to a concurrent writer is retried after reloading the table and looking for the run again;
tables are created with ``commit.retry.num-retries=0`` so that pyiceberg does not re-apply
an append on its own (a table created elsewhere keeps its setting, and two publishers of
the same run racing on it could both land).
"""

from __future__ import annotations

import os
import time
import unicodedata
import urllib.parse
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa

from pipeline.errors import (
    ConfigError,
    ExecutionError,
    InputError,
    MissingExtraError,
    PipelineError,
)
from pipeline.warehouse.common import (
    PARTITION_COLUMN,
    PublishedTable,
    RunTables,
    after_commit,
    check_additive,
    conflict,
)

FORMAT = "iceberg"
RUN_ID_PROPERTY = "overlap.run-id"
ROWS_PROPERTY = "overlap.rows"
FINGERPRINT_PROPERTY = "overlap.fingerprint"
COMMIT_ATTEMPTS = 8
# pyiceberg retries a failed commit by re-applying the append, without our check for the
# run: two publishers of the same run would both land. Tables created here retry nothing
# inside pyiceberg; the loop below reloads the table and looks for the run first.
TABLE_PROPERTIES = {"commit.retry.num-retries": "0"}
_SQL_SCHEMES = ("sqlite", "postgresql", "mysql")
# The columns of pyiceberg's (and Iceberg JdbcCatalog's) table of tables.
_CATALOG_COLUMNS = frozenset({"catalog_name", "table_namespace", "table_name",
                              "metadata_location"})


def parse_namespace(namespace: str | None) -> tuple[str, ...]:
    """Split a namespace into its levels, refusing names that are not plain names.

    Levels are separated by ``.`` (``evals.nightly``); each is any text without ``/``,
    ``\\``, control characters or surrounding spaces (a level is a directory name under the
    warehouse: ``/abs`` would share ``abs``'s directory and ``a/b`` would nest), and not
    empty.

    Raises:
        ConfigError: no namespace, an empty level, or a level such as above, naming it.

    """
    if not namespace:
        raise ConfigError("--iceberg needs --namespace NS (a name such as evals or "
                          "evals.nightly)")
    levels = tuple(namespace.split("."))
    for level in levels:
        bad = next((c for c in level if c in "/\\" or unicodedata.category(c) == "Cc"), None)
        if not level or level != level.strip() or bad is not None:
            why = "an empty level" if not level.strip() else \
                "spaces around a level" if level != level.strip() else f"the character {bad!r}"
            raise ConfigError(f"namespace {namespace!r}: {why}; give a name such as evals or "
                              "evals.nightly (levels joined by '.', without '/', '\\', "
                              "control characters or spaces around them)")
    return levels


def _check_sqlite_file(catalog_uri: str, path: str) -> None:
    """Refuse a SQLite file that exists but is not an Iceberg SQL catalog (or is no database).

    pyiceberg would create its catalog tables in any SQLite database it is given; a database
    of someone else's is left alone.

    Raises:
        ConfigError: the file is not a SQLite database, or one with tables but none of the
            catalog's (``iceberg_tables`` with its columns).

    """
    import sqlite3

    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    if os.path.isdir(path):
        raise ConfigError(f"catalog {catalog_uri}: {path} is a directory, not a SQLite file")
    try:
        with open(path, "rb") as fh:
            magic = fh.read(16)
        if magic != b"SQLite format 3\x00":
            raise ConfigError(f"catalog {catalog_uri}: {path} is not a SQLite database, so not "
                              "an Iceberg catalog", hint="give a new file or an existing catalog")
        uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
        con = sqlite3.connect(uri, uri=True)
        try:
            names = [r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            columns = {r[1] for r in con.execute("PRAGMA table_info(iceberg_tables)")}
        finally:
            con.close()
    except (OSError, sqlite3.Error) as err:
        raise ConfigError(f"catalog {catalog_uri}: cannot read {path} as SQLite: {err}") from err
    if "iceberg_tables" in names and not _CATALOG_COLUMNS <= columns:
        raise ConfigError(f"catalog {catalog_uri}: {path} has a table iceberg_tables without "
                          f"the catalog's columns ({', '.join(sorted(_CATALOG_COLUMNS - columns))}"
                          " missing), so it is not an Iceberg catalog",
                          hint="give a new file or an existing catalog")
    if names and "iceberg_tables" not in names:
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        raise ConfigError(f"catalog {catalog_uri}: {path} is a SQLite database but not an "
                          f"Iceberg catalog (its tables: {shown}); refusing to add the "
                          "catalog's tables to it", hint="give a new file or an existing catalog")


_CATALOG_HINT = ("--iceberg takes a catalog URI (sqlite:///PATH for a catalog in one file, "
                 "another SQLAlchemy URL, http(s):// or thrift://) or the name of a catalog "
                 "configured for pyiceberg")


def check_catalog_argument(catalog_uri: str) -> None:
    """Refuse a plain path as ``--iceberg``, which takes a catalog URI or a catalog name.

    A name without ``://`` is a catalog of pyiceberg's configuration, and such names hold no
    path separator; a path (``/tmp/ice``, ``./ice``, ``ice.db``) is told what to write instead.

    Raises:
        ConfigError: ``catalog_uri`` is empty or a path (exit 2), with the URI to give.

    """
    if "://" in catalog_uri:
        return
    looks_like_path = (not catalog_uri.strip() or "/" in catalog_uri or "\\" in catalog_uri
                       or catalog_uri.startswith(("~", ".")) or catalog_uri.endswith(".db"))
    if not looks_like_path:
        return
    path = os.path.abspath(os.path.expanduser(catalog_uri)) if catalog_uri.strip() else ""
    if not path:
        suggestion = "sqlite:///PATH"
    elif os.path.isfile(path) or path.endswith(".db"):
        suggestion = f"sqlite:///{path}"
    else:  # a directory, or a name meant as one: the catalog file goes inside
        suggestion = f"sqlite:///{os.path.join(path, 'catalog.db')}"
    raise ConfigError(f"--iceberg {catalog_uri!r} is a path, not an Iceberg catalog: "
                      f"{_CATALOG_HINT}",
                      hint=f"for a catalog in one SQLite file: --iceberg {suggestion}; its "
                           "data files go under --warehouse, by default warehouse/ beside it")


def load_catalog(catalog_uri: str, *, warehouse: str | None = None) -> Any:
    """Open an Iceberg catalog by URI or configured name.

    Args:
        catalog_uri: ``sqlite:///PATH`` or another SQLAlchemy URL (SQL catalog),
            ``http(s)://...`` (REST), ``thrift://...`` (Hive), or the name of a catalog in
            pyiceberg's configuration.
        warehouse: where data files go (path or URI). For a SQLite catalog the default is
            ``warehouse/`` beside the database file; other catalogs use their own default.

    Raises:
        ConfigError: a path rather than a URI or a name; a name no configuration defines;
            a SQL catalog without a warehouse location that cannot be defaulted;
            a SQLite file that is not a catalog (see :func:`_check_sqlite_file`).
        MissingExtraError: pyiceberg is not installed (exit 2).
        ExecutionError: the catalog cannot be opened.

    """
    check_catalog_argument(catalog_uri)
    try:
        from pyiceberg.catalog import load_catalog as _load
    except ImportError:
        raise MissingExtraError("publishing to Iceberg needs the pyiceberg package",
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
                    _check_sqlite_file(catalog_uri, path)
                    parent = os.path.dirname(os.path.abspath(path))
                    os.makedirs(parent, exist_ok=True)
                    warehouse = warehouse or os.path.join(parent, "warehouse")
            if not warehouse:
                raise ConfigError(f"catalog {catalog_uri}: give --warehouse (where the "
                                  "tables' files go)")
        name = "overlap"
    else:
        name = catalog_uri
    from pipeline.io.storage import iceberg_properties

    props.update(iceberg_properties())  # the storage settings, as pyarrow and deltalake get them
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
            if "://" not in catalog_uri and isinstance(err, ValueError) \
                    and "URI missing" in str(err):
                raise ConfigError(f"--iceberg {catalog_uri}: no Iceberg catalog of that name "
                                  "is configured (~/.pyiceberg.yaml or "
                                  "PYICEBERG_CATALOG__<NAME>__URI)",
                                  hint=_CATALOG_HINT) from None
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


def identifier(catalog: Any, levels: tuple[str, ...], table: str) -> tuple[str, ...]:
    """The identifier of ``table`` in the namespace ``levels`` for this catalog.

    pyiceberg's SQL catalog keeps a namespace as one string, its levels joined by ``.``
    (as Iceberg's JdbcCatalog does), and takes identifiers ``(namespace, table)``; a REST
    catalog takes the levels. Other catalogs (Hive, Glue) have one level.

    Raises:
        ConfigError: a nested namespace for a catalog with one level.

    """
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.catalog.sql import SqlCatalog

    if isinstance(catalog, SqlCatalog):
        return (".".join(levels), table)
    if isinstance(catalog, RestCatalog) or len(levels) == 1:
        return (*levels, table)
    raise ConfigError(f"namespace {'.'.join(levels)!r}: this catalog "
                      f"({type(catalog).__name__}) has no nested namespaces; give one name")


def _create(catalog: Any, ident: tuple[str, ...], schema: pa.Schema) -> Any:
    from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError

    try:
        with catalog.create_table_transaction(ident, schema=schema,
                                              properties=TABLE_PROPERTIES) as txn:
            with txn.update_spec() as spec:
                spec.add_identity(PARTITION_COLUMN)
    except (TableAlreadyExistsError, CommitFailedException):
        pass  # a concurrent publisher created it ("Table already exists")
    return catalog.load_table(ident)


def _found(snap: Any, run: RunTables, table_name: str, where: str,
           shown: str) -> PublishedTable:
    """The table holds the run id: the same rows (nothing to write), or refuse.

    Raises:
        RunConflictError: the snapshot records another fingerprint, or (published before
            fingerprints) another row count.

    """
    props = snap.summary.additional_properties or {}
    n = int(props.get(ROWS_PROPERTY, -1))
    recorded = props.get(FINGERPRINT_PROPERTY)
    if recorded is not None and recorded != run.fingerprint:
        raise conflict(where, run, found="another fingerprint")
    if recorded is None and n != run.rows(table_name):
        raise conflict(where, run, found=f"{n} rows, not {run.rows(table_name)}")
    return PublishedTable(FORMAT, table_name, shown, n, False, snap.snapshot_id)


def _check_table(table: Any, rows: pa.Table, where: str) -> tuple[str, ...]:
    """The columns an append adds; refuse a table it cannot go into.

    Raises:
        SchemaChangeError: a column's type differs, or a name differs only in case.
        InputError: a table not partitioned by ``run_date``.

    """
    fields = table.schema().as_arrow()
    if PARTITION_COLUMN not in [f.name for f in fields] or not any(
            table.schema().find_field(f.source_id).name == PARTITION_COLUMN
            for f in table.spec().fields):
        raise InputError(f"{where} is not partitioned by {PARTITION_COLUMN}")
    return check_additive(fields, rows.schema, where=where)


def _publish_one(catalog: Any, ident: tuple[str, ...], run: RunTables,
                 table_name: str, shown: str) -> PublishedTable:
    from pyiceberg.exceptions import CommitFailedException, NoSuchTableError

    where = f"Iceberg table {shown}"
    rows, run_id = run.tables[table_name], run.run_id
    last: Exception | None = None
    for attempt in range(COMMIT_ATTEMPTS):
        added: tuple[str, ...] = ()
        try:
            table = catalog.load_table(ident)
        except NoSuchTableError:
            table = _create(catalog, ident, rows.schema)
        snap = _published_snapshot(table, run_id)
        if snap is not None:
            return _found(snap, run, table_name, where, shown)
        added = _check_table(table, rows, where)
        try:
            with table.transaction() as txn:
                if added:
                    with txn.update_schema() as update:
                        update.union_by_name(rows.schema)
                txn.append(rows, snapshot_properties={RUN_ID_PROPERTY: run_id,
                                                      ROWS_PROPERTY: str(rows.num_rows),
                                                      FINGERPRINT_PROPERTY: run.fingerprint})
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
        table = catalog.load_table(ident)
        snap = _published_snapshot(table, run_id)
        return PublishedTable(FORMAT, table_name, shown, rows.num_rows, True,
                              None if snap is None else snap.snapshot_id, added)
    raise ExecutionError(f"cannot write {where}: {COMMIT_ATTEMPTS} commits lost to "
                         f"concurrent writers ({last})")


def check_iceberg(run: RunTables, catalog: Any, *, namespace: str) -> None:
    """Check, without writing, that :func:`publish_iceberg` can write ``run``.

    ``run`` as :meth:`RunTables.for_format` made it for Iceberg; ``catalog`` from
    :func:`load_catalog`. Existing tables must take the run's columns, be partitioned by
    ``run_date`` and hold the run id only with the same rows; a missing namespace or table
    is fine (created when publishing).

    Raises:
        ConfigError: a bad namespace, or a nested one the catalog cannot hold.
        SchemaChangeError, InputError, RunConflictError: as :func:`publish_iceberg`.
        ExecutionError: the catalog cannot be read.

    """
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    levels = parse_namespace(namespace)
    for name in run.tables:
        ident = identifier(catalog, levels, name)
        shown = f"{namespace}.{name}"
        try:
            try:
                table = catalog.load_table(ident)
            except (NoSuchTableError, NoSuchNamespaceError):
                continue
            snap = _published_snapshot(table, run.run_id)
            if snap is not None:
                _found(snap, run, name, f"Iceberg table {shown}", shown)
            else:
                _check_table(table, run.tables[name], f"Iceberg table {shown}")
        except PipelineError:
            raise
        except Exception as err:  # noqa: BLE001 - the catalog's own errors, as one line
            raise ExecutionError(f"cannot read Iceberg table {shown}: "
                                 f"{type(err).__name__}: {err}") from err


def publish_iceberg(run: RunTables, catalog_uri: str | Any, *, namespace: str,
                    warehouse: str | None = None) -> list[PublishedTable]:
    """Append a run to the Iceberg tables ``namespace.examples`` and ``namespace.aggregates``.

    (Or any tables ``run`` holds: a comparison's ``namespace.comparisons``,
    :func:`pipeline.warehouse.comparisons.load_comparison`.)

    Creates the namespace and tables on first use (partitioned by ``run_date``); adds the
    run's new columns to an existing table in the same commit as its rows. Idempotent per
    table: a table with a snapshot whose summary has ``overlap.run-id`` = the run id is
    left alone when the snapshot records the same fingerprint
    (:class:`pipeline.warehouse.common.RunTables`), and refused otherwise. Columns are cast
    for Iceberg first (:func:`pipeline.warehouse.common.cast_for`).

    Args:
        run: the run's rows (:func:`pipeline.warehouse.common.load_run`).
        catalog_uri: see :func:`load_catalog`; or a catalog it opened.
        namespace: the namespace (levels joined by ``.``; see :func:`parse_namespace`).
        warehouse: the warehouse location (see :func:`load_catalog`).

    Returns:
        One :class:`PublishedTable` per table, examples first.

    Raises:
        ConfigError: a bad namespace; a SQL catalog without warehouse; a SQLite file that is
            not a catalog.
        SchemaChangeError: a column's type differs from the table's.
        RunConflictError: a table holds the run id with other rows.
        InputError: a table partitioned otherwise; a column Iceberg cannot hold.
        ExecutionError: pyiceberg missing, catalog or storage failures, commits lost to
            concurrent writers too often.

    """
    levels = parse_namespace(namespace)
    run = run.for_format(FORMAT)
    catalog = load_catalog(catalog_uri, warehouse=warehouse) \
        if isinstance(catalog_uri, str) else catalog_uri
    ns = identifier(catalog, levels, "")[:-1]
    try:
        existed = bool(catalog.namespace_exists(ns))
    except Exception:  # noqa: BLE001 - then it is not dropped on failure
        existed = True
    try:
        catalog.create_namespace_if_not_exists(ns)
    except Exception as err:  # noqa: BLE001 - created concurrently (IntegrityError and the like)?
        if not catalog.namespace_exists(ns):
            raise ExecutionError(f"cannot create Iceberg namespace {namespace}: "
                                 f"{type(err).__name__}: {err}") from err
    out = []
    try:
        for name in run.tables:
            shown = f"{namespace}.{name}"
            try:
                out.append(_publish_one(catalog, identifier(catalog, levels, name), run, name,
                                        shown))
            except PipelineError:
                raise
            except Exception as err:  # noqa: BLE001 - the catalog's own errors, as one line
                raise ExecutionError(f"cannot write Iceberg table {shown}: "
                                     f"{type(err).__name__}: {err}") from err
    except BaseException:
        if not existed:
            _drop_if_empty(catalog, ns)
        raise
    return out


def _drop_if_empty(catalog: Any, ns: tuple[str, ...]) -> None:
    """Drop a namespace this publish created when it holds no table (best effort)."""
    try:
        if not catalog.list_tables(ns):
            catalog.drop_namespace(ns)
    except Exception:  # noqa: BLE001 - leaving an empty namespace is harmless
        pass


__all__ = ["FINGERPRINT_PROPERTY", "RUN_ID_PROPERTY", "check_catalog_argument", "check_iceberg",
           "identifier", "load_catalog", "parse_namespace", "publish_iceberg"]
