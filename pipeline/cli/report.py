"""``overlap report``: a thin command over :func:`pipeline.api.report`."""

from __future__ import annotations

import click

from pipeline.cli import main
from pipeline.cli.options import measures_option
from pipeline.cli.score import one_line
from pipeline.errors import PipelineError


@main.command("report", epilog="""\b
Examples:
  overlap report runs/realsumm --output report.html
  overlap report runs/shorter --baseline runs/realsumm --output report.html
  overlap report RUN --comparison cmp/compare.json --output report.html

\b
Details: docs/report.md.""")
@click.argument("run_dir")
@click.option("--baseline", metavar="RUN_DIR", default=None,
              help="Compare with this complete run: the compare table with alarms, the "
                   "per-example deltas and the examples that moved most.")
@click.option("--output", metavar="FILE.html", required=True,
              help="The HTML file to write (an existing file only if it is an earlier report).")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="Examples that moved most to show (with --baseline).")
@click.option("--comparison", metavar="COMPARE.json", default=None,
              help="Show this comparison of RUN_DIR (overlap compare --output): its verdict, "
                   "alarms and settings; the baseline is its own unless --baseline is given.")
@measures_option(what="Measures to compare, as overlap compare (without --comparison)")
@click.option("--band", "band_values", multiple=True, metavar="[METRIC.MEASURE=]VALUE",
              help="As overlap compare (without --comparison).")
@click.option("--confidence", type=float, default=None, help="As overlap compare.")
@click.option("--adjust", type=click.Choice(["holm", "bh", "none"]), default=None,
              help="As overlap compare.")
@click.option("--history", metavar="ROOT", default=None,
              help="As overlap compare; also draws the nightly trend of each measure.")
@click.option("--history-window", type=click.IntRange(min=1), default=None, metavar="N",
              help="As overlap compare.")
@click.option("--trend-groups", type=click.Choice(["alarmed", "all"]), default="alarmed",
              show_default=True,
              help="With a history: beside the overall trend, draw the trend of the groups "
                   "that alarmed tonight, or of every group.")
@click.option("--agreement", metavar="AGREEMENT.json", default=None,
              help="Add the section of this overlap agree output (agreement.json).")
@click.pass_context
def report_command(ctx: click.Context, run_dir: str, baseline: str | None, output: str,
                   top: int, comparison: str | None, metrics: tuple[str, ...],
                   band_values: tuple[str, ...], confidence: float | None,
                   adjust: str | None, history: str | None,
                   history_window: int | None, trend_groups: str,
                   agreement: str | None) -> None:
    """Write an HTML report of a run.

    One self-contained file about RUN_DIR (and its comparison): opening it makes no network
    request. The verdict and alarms first (those of --comparison, or of the compare options
    given here, as overlap compare would print them), then the run's signature, counts and
    notes, per metric and group the mean with its interval, and a histogram of the
    per-example values of each measure; with --baseline (or --comparison), the compare table
    with alarms highlighted, the distribution of per-example deltas and the examples that
    moved most, with the matched words marked and a word diff; with --history, the nightly
    trend of each measure, overall and for each group that alarmed (--trend-groups all:
    every group), red marks on the nights that alarmed. Readable without JavaScript, and printable.

    An existing FILE.html is replaced only when it is a report written by overlap report.

    Exit codes: 0 written, 2 bad usage or input (an incomplete run, differing signatures),
    3 the output is in the way (a file that is not our report, a directory, a symbolic link),
    4 the file cannot be written.
    """
    from pipeline import api
    from pipeline.cli.compare import parse_bands

    band, bands = parse_bands(band_values)
    options = {"measures": [m.strip() for v in metrics for m in v.split(",") if m.strip()]
               or None, "band": band, "bands": bands or None, "confidence": confidence,
               "adjust": adjust, "history": history, "history_window": history_window}
    if comparison is not None and any(v is not None for v in options.values()):
        click.echo("Error: --comparison carries the comparison's settings; give no compare "
                   "option with it", err=True)
        ctx.exit(2)
    try:
        api.report(run_dir, output=output, baseline=baseline, top=top, comparison=comparison,
                   compare_options=options, trend_groups=trend_groups,
                   agreement=agreement)
    except PipelineError as err:
        click.echo(f"Error: {one_line(err)}", err=True)
        ctx.exit(err.exit_code)
    click.echo(f"wrote {output}")
