"""``overlap report``: a thin command over :func:`pipeline.api.report`."""

from __future__ import annotations

import click

from pipeline.cli import main
from pipeline.cli.score import one_line
from pipeline.errors import PipelineError


@main.command("report")
@click.argument("run_dir")
@click.option("--baseline", metavar="RUN_DIR", default=None,
              help="Compare with this complete run: the compare table with alarms, the "
                   "per-example deltas and the examples that moved most.")
@click.option("--output", metavar="FILE.html", required=True,
              help="The HTML file to write (an existing file only if it is an earlier report).")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
              help="Examples that moved most to show (with --baseline).")
@click.pass_context
def report_command(ctx: click.Context, run_dir: str, baseline: str | None, output: str,
                   top: int) -> None:
    """Write one self-contained HTML file about RUN_DIR (no request made when it is opened).

    Shows the run's signature, counts and notes, per metric and group the mean with its
    interval, and a histogram of the per-example values of each measure; with --baseline,
    the compare table with alarms highlighted, the distribution of per-example deltas and
    the examples that moved most, with the matched words marked. Readable without
    JavaScript, and printable.

    An existing FILE.html is replaced only when it is a report written by overlap report.

    Exit codes: 0 written, 2 bad usage or input (an incomplete run, differing signatures),
    3 the output is in the way (a file that is not our report, a directory, a symlink),
    4 the file cannot be written.
    """
    from pipeline import api

    try:
        api.report(run_dir, output=output, baseline=baseline, top=top)
    except PipelineError as err:
        click.echo(f"Error: {one_line(err)}", err=True)
        ctx.exit(err.exit_code)
    click.echo(f"wrote {output}")
