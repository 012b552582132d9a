"""``overlap publish``: a thin command over :func:`pipeline.api.publish`."""

from __future__ import annotations

import click

from pipeline.cli import main
from pipeline.cli.score import one_line
from pipeline.errors import PipelineError


@main.command("publish", epilog="""\b
Examples (pip install -e '.[warehouse]'):
  overlap publish runs/realsumm --delta warehouse --label model=bart
  overlap publish runs/realsumm --iceberg sqlite:///catalog.db --namespace evals
  overlap publish cmp/ --delta warehouse --label model=bart   (table comparisons)

\b
Details, and reading the tables from DuckDB, Spark, Trino: docs/warehouse.md.""")
@click.argument("run_dir")
@click.option("--delta", metavar="ROOT", default=None,
              help="Append to the Delta Lake tables ROOT/examples and ROOT/aggregates "
                   "(local path or object-store URI).")
@click.option("--iceberg", metavar="CATALOG_URI", default=None,
              help="Append to Iceberg tables NS.examples and NS.aggregates in this catalog: "
                   "sqlite:///PATH (pyiceberg's SQL catalog), another catalog URI, or a "
                   "catalog name from pyiceberg's configuration.")
@click.option("--namespace", metavar="NS", default=None,
              help="The Iceberg namespace (required with --iceberg), e.g. evals or "
                   "evals.nightly.")
@click.option("--warehouse", metavar="LOCATION", default=None,
              help="Where an Iceberg SQL catalog writes files (default for sqlite: "
                   "warehouse/ beside the database).")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE",
              help="A string column with this value on every row (repeatable), "
                   "e.g. --label model=m7 --label dataset=cnn.")
@click.option("--run-date", metavar="YYYY-MM-DD", default=None,
              help="The run_date partition.  [default: the run's start date in UTC]")
@click.pass_context
def publish_command(ctx: click.Context, run_dir: str, delta: str | None, iceberg: str | None,
                    namespace: str | None, warehouse: str | None, labels: tuple[str, ...],
                    run_date: str | None) -> None:
    """Append a run (or a comparison) to Delta Lake and/or Iceberg tables.

    RUN_DIR is a complete run (with _SUCCESS), checked against its manifest; or a
    comparison (compare.json and compare.parquet: `overlap compare --output`, a nightly's
    ROOT/compare/run_date=D/run_id=ID), appended to the table comparisons, one row per
    group and measure with both run ids, values, delta, interval, p, band and alarm_kind,
    once per comparison. Both tables
    (examples, aggregates) get run_id, run_date, signature and the --label columns, and are
    partitioned by run_date. Publishing a run that is already in a table writes nothing to
    it, so publishing again after a failure completes what is missing; another run (or other
    labels or date) under a published run id is refused. A run with new metrics adds
    columns; a column whose type changed is refused. Everything is checked before anything
    is written.

    Exit codes: 0 published, 2 bad usage or input (an incomplete run or one that does not
    match its manifest, a type change, another run under the run id, a bad namespace, a
    path as --iceberg, deltalake or pyiceberg not installed), 4 storage or catalog failure.
    """
    from pipeline import api

    try:
        published = api.publish(run_dir, delta=delta, iceberg=iceberg, namespace=namespace,
                                warehouse=warehouse, labels=labels, run_date=run_date)
    except PipelineError as err:
        click.echo(f"Error: {one_line(err)}", err=True)
        ctx.exit(err.exit_code)
    for table in published:
        click.echo(table.describe())
