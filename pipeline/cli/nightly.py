"""``overlap nightly``: the nightly loop, a thin command over :func:`pipeline.api.nightly`."""

from __future__ import annotations

import shlex
from typing import Any

import click

from pipeline.cli import main
from pipeline.cli.compare import compare_command, format_table, parse_bands, safe
from pipeline.cli.publish import publish_command
from pipeline.cli.score import _settings, one_line, score_command
from pipeline.errors import ConfigError, PipelineError


def _parse(command: click.Command, name: str, args: list[str], text: str) -> dict[str, Any]:
    """The parameters of ``command`` for an argument string, parsed by its own parser.

    Raises:
        ConfigError: the string does not parse or its options are wrong for the command.

    """
    try:
        words = shlex.split(text)
    except ValueError as err:
        raise ConfigError(f"{name}: {err}") from err
    try:
        ctx = command.make_context(command.name or name, [*args, *words],
                                   resilient_parsing=False)
    except click.UsageError as err:
        raise ConfigError(f"{name}={text!r}: {err.format_message()}") from err
    return dict(ctx.params)


_FIXED_SCORE = ("predictions", "references", "output", "run_id", "overwrite")
_FIXED_COMPARE = ("baseline_dir", "candidate_dir", "output", "history", "plot",
                  "output_format")


@main.command("nightly", epilog="""\b
Examples:
  overlap nightly nights pipeline/data/realsumm/predictions \\
      pipeline/data/realsumm/references.parquet --run-date 2026-12-01
  RUN_DATE=2026-12-02 COMPARE_ARGS="--band rougeL.fmeasure=0.005" \\
      overlap nightly /data/overlap s3://evals/tonight/predictions s3://evals/refs --report

\b
Details, cron and Airflow: docs/compare.md ("Nightly use").""")
@click.argument("root")
@click.argument("predictions")
@click.argument("references", required=False)
@click.option("--run-date", envvar="RUN_DATE", metavar="YYYY-MM-DD", default=None,
              help="The date partition (env RUN_DATE).  [default: today in UTC]")
@click.option("--run-id", envvar="RUN_ID", default=None,
              help="Tonight's run id (env RUN_ID).  [default: UTC time + random suffix]")
@click.option("--baseline", envvar="BASELINE", metavar="RUN_DIR", default=None,
              help="Compare with this run instead of the last complete one (env BASELINE).")
@click.option("--score-args", envvar="SCORE_ARGS", default="--keep-text", show_default=True,
              help="Further `overlap score` options, one string (env SCORE_ARGS).")
@click.option("--compare-args", envvar="COMPARE_ARGS", default="",
              help="Further `overlap compare` options, one string (env COMPARE_ARGS), e.g. "
                   "\"--band rougeL.fmeasure=0.005 --metrics rougeL.fmeasure\".")
@click.option("--publish-args", envvar="PUBLISH_ARGS", default="",
              help="When set, publish tonight's run with these `overlap publish` options "
                   "(env PUBLISH_ARGS), e.g. \"--delta /data/warehouse --label model=m7\".")
@click.option("--report/--no-report", "write_report", envvar="REPORT", default=False,
              help="Also write COMPARE_DIR/report.html (env REPORT=1).")
@click.pass_context
def nightly_command(ctx: click.Context, root: str, predictions: str, references: str | None,
                    run_date: str | None, run_id: str | None, baseline: str | None,
                    score_args: str, compare_args: str, publish_args: str,
                    write_report: bool) -> None:
    """Score tonight's run, compare it with the history.

    Scores PREDICTIONS (against REFERENCES) under ROOT. Layout under ROOT (any characters;
    Hive-style partitions a warehouse can read): ROOT/run_date=YYYY-MM-DD/run_id=RUN_ID/
    (the `overlap score` output) and ROOT/compare/run_date=YYYY-MM-DD/run_id=RUN_ID/
    (compare.json, compare.parquet, delta.png, report.html). The baseline is the newest
    complete run dated before tonight with a measure in common with tonight's (newer ones
    without are passed over, saying so); the comparison learns its bands and drift from
    ROOT's earlier dates. Running the same night again (same RUN_DATE and RUN_ID) resumes
    it; a retry without RUN_ID is a second attempt of the same night: it compares with the
    same earlier night, so it keeps the first attempt's verdict on the same predictions.

    Exit codes: 0 no alarm, or a first night with nothing to compare with; 1 alarm; 2 bad
    usage or input; 3 or 4 as overlap score (output held by another run; execution failure).
    """
    from pipeline import api

    def log(line: str) -> None:
        click.echo(f"nightly: {safe(' '.join(line.split()))}", err=True)

    try:
        flags = _parse(score_command, "SCORE_ARGS", [predictions, "--output", "x"], score_args)
        if any(flags.get(k) not in (None, False, "x", predictions) for k in _FIXED_SCORE):
            raise ConfigError("SCORE_ARGS: --references, --output, --run-id and --overwrite "
                              "are the nightly's own")
        if flags.pop("output_format", "summary") != "summary":
            raise ConfigError("SCORE_ARGS: --format is not used by the nightly, which prints "
                              "the comparison")
        config_file = flags.pop("config_file", None)
        thresholds = flags.pop("thresholds", ())
        for k in _FIXED_SCORE:
            flags.pop(k, None)
        flags["threshold"] = list(thresholds) or None
        config = _settings(config_file, flags)
        cmp = _parse(compare_command, "COMPARE_ARGS", ["b", "c"], compare_args)
        band, bands = parse_bands(cmp.pop("band_values"))
        given = {k: v for k, v in cmp.items() if k not in _FIXED_COMPARE}
        if any(cmp.get(k) not in (None, "b", "c", "summary") for k in _FIXED_COMPARE):
            raise ConfigError("COMPARE_ARGS: --output, --history, --plot and --format are the "
                              "nightly's own")
        metrics = given.pop("metrics")
        compare_options = {"measures": [m.strip() for v in metrics for m in v.split(",")
                                        if m.strip()] or None,
                           "band": band, "bands": bands, **given}
        publish_options = None
        if publish_args.strip():
            pub = _parse(publish_command, "PUBLISH_ARGS", ["r"], publish_args)
            pub.pop("run_dir", None)
            if pub.pop("run_date", None) is not None:
                raise ConfigError("PUBLISH_ARGS: --run-date is the nightly's RUN_DATE")
            publish_options = pub
    except PipelineError as err:
        click.echo(f"nightly: {safe(one_line(err))}", err=True)
        ctx.exit(err.exit_code)
    result = api.nightly(root, predictions, references, run_date=run_date, run_id=run_id,
                         config=config, baseline=baseline, compare_options=compare_options,
                         publish_options=publish_options, write_report=write_report, log=log)
    if result.error is not None and result.run_dir == "":
        click.echo(f"nightly: {safe(one_line(result.error))}", err=True)
    if result.comparison is not None:
        click.echo(format_table(result.comparison.to_document()))
    ctx.exit(result.exit_code)
