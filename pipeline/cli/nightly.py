"""``overlap nightly``: the nightly loop, a thin command over :func:`pipeline.api.nightly`."""

from __future__ import annotations

import os
import shlex
from typing import Any

import click

from pipeline.cli import main, results_only_stdout
from pipeline.cli.compare import compare_command, format_table, parse_bands
from pipeline.cli.publish import publish_command
from pipeline.cli.score import one_line, score_command
from pipeline.errors import ConfigError, PipelineError
from pipeline.printable import safe


def _words(name: str, text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as err:
        raise ConfigError(f"{name}: {err}") from err


def _parse(command: click.Command, name: str, args: list[str], text: str) -> dict[str, Any]:
    """The parameters of ``command`` for an argument string, parsed by its own parser.

    Args:
        command: the command whose options the string holds (``overlap score``...).
        name: the variable the string came from (``SCORE_ARGS``), named in every error.
        args: the command's required arguments and options, put before the string.
        text: the string, split as a shell would (never run).

    Raises:
        ConfigError: the string does not parse or its options are wrong for the command.

    """
    words = _words(name, text)
    try:
        ctx = command.make_context(command.name or name, [*args, *words],
                                   resilient_parsing=False)
    except click.UsageError as err:
        raise ConfigError(f"{name}={text!r}: {err.format_message()}") from err
    return dict(ctx.params)


def _refuse_owned(command: click.Command, name: str, args: list[str], text: str,
                  owned: dict[str, str]) -> None:
    """Refuse options the nightly sets itself, when the string gives them.

    Which options the string gives is read by the command's own parser (the string alone,
    without the nightly's placeholders), so ``--output x`` is caught whatever ``x`` is.

    Args:
        command: the command.
        name: the variable (``SCORE_ARGS``...), named in the error.
        args: placeholders for the command's positional arguments.
        text: the string.
        owned: parameter name -> why the nightly owns it.

    Raises:
        ConfigError: an owned option given (exit 2), naming it and the variable.

    """
    from click.core import ParameterSource

    words = _words(name, text)
    try:
        ctx = command.make_context(command.name or name, [*args, *words],
                                   resilient_parsing=True)
    except click.UsageError:
        return  # the strict parse names the fault
    given = [p for p in command.params if p.name in owned
             and ctx.get_parameter_source(p.name) == ParameterSource.COMMANDLINE]
    if given:
        flags = ", ".join(str(p.opts[0]) for p in given)
        why = "; ".join(dict.fromkeys(owned[str(p.name)] for p in given))
        raise ConfigError(f"{name}: {flags} {'is' if len(given) == 1 else 'are'} the "
                          f"nightly's own ({why}); remove {'it' if len(given) == 1 else 'them'}"
                          f" from {name}")


_FIXED_SCORE = {
    "references": "REFERENCES is the nightly's third argument",
    "output": "tonight's run goes to ROOT/run_date=RUN_DATE/run_id=RUN_ID",
    "run_id": "set RUN_ID (--run-id) instead",
    "overwrite": "a finished night is reused, never replaced",
}
_FIXED_COMPARE = {
    "output": "the comparison goes to ROOT/compare/run_date=RUN_DATE/run_id=RUN_ID",
    "history": "the history is ROOT",
    "plot": "delta.png is drawn beside compare.json",
}
_FIXED_PUBLISH = {"run_date": "the run date is RUN_DATE (--run-date)"}


def nightly_settings(config_file: str | None, flags: dict[str, Any]) -> Any:
    """Tonight's scoring settings: the nightly's defaults, then the config file, then flags.

    The nightly's defaults (:data:`pipeline.api.NIGHTLY_SCORE_DEFAULTS`: missing predictions
    are left out and counted, for compare's ``missing`` alarm) give way to a config file's
    keys and to ``SCORE_ARGS`` flags.

    Raises:
        ConfigError: an unreadable config file, an unknown key or a bad value.

    """
    from pipeline.api import NIGHTLY_SCORE_DEFAULTS
    from pipeline.config import load_config_file, resolve_config

    file_values = load_config_file(config_file) if config_file else None
    return resolve_config(NIGHTLY_SCORE_DEFAULTS, file_values, flags)


def _compare_options(text: str) -> dict[str, Any]:
    """``COMPARE_ARGS`` as :func:`pipeline.api.compare` options; every error names it.

    The values are checked next, with compare's own checks
    (:func:`pipeline.api.check_nightly_compare_options`).

    Raises:
        ConfigError: the string does not parse, or gives an option the nightly owns.

    """
    name = "COMPARE_ARGS"
    _refuse_owned(compare_command, name, ["b", "c"], text, _FIXED_COMPARE)
    cmp = _parse(compare_command, name, ["b", "c"], text)
    if cmp.pop("output_format", "summary") != "summary":
        raise ConfigError(f"{name}: --format is not used by the nightly, which prints the "
                          "comparison's summary")
    try:
        band, bands = parse_bands(cmp.pop("band_values"))
    except click.BadParameter as err:
        raise ConfigError(f"{name}={text!r}: {err.format_message()}") from err
    given = {k: v for k, v in cmp.items() if k not in (*_FIXED_COMPARE, "baseline_dir",
                                                        "candidate_dir")}
    metrics = given.pop("metrics")
    options = {"measures": [m.strip() for v in metrics for m in v.split(",") if m.strip()]
               or None, "band": band, "bands": bands, **given}
    return options


def _flag_from_environment(ctx: click.Context, name: str, variable: str,
                           value: bool | None) -> bool | None:
    """A yes/no option's value from its environment variable, when the flag was not given.

    ``REPORT`` and ``PLOT`` are common names that other tools set to other things (a path,
    a word): a value that is not yes/no (click's booleans: 1/0, true/false, yes/no, on/off,
    y/n, t/f, any case) is ignored with a one-line warning naming the variable, never an
    error that stops the night. An empty value counts as unset.

    Args:
        ctx: the command's context (says whether the flag was given).
        name: the parameter's name (``plot``, ``write_report``).
        variable: the environment variable (``PLOT``, ``REPORT``).
        value: the parameter's parsed value (its default when not given).

    Returns:
        The flag's value: as given on the command line, else the variable's, else ``value``.

    """
    from click.core import ParameterSource

    text = os.environ.get(variable, "")
    if ctx.get_parameter_source(name) != ParameterSource.DEFAULT or not text.strip():
        return value
    try:
        return bool(click.BOOL.convert(text, None, ctx))
    except click.BadParameter:
        click.echo(f"nightly: warning: {variable}={safe(repr(text))} is not 1 or 0 (nor "
                   f"true/false, yes/no, on/off); {variable} ignored", err=True)
        return value


@main.command("nightly", epilog="""\b
Examples:
  overlap nightly nights pipeline/data/realsumm/predictions \\
      pipeline/data/realsumm/references.parquet --run-date 2026-12-01
  RUN_DATE=2026-12-02 COMPARE_ARGS="--band rougeL.fmeasure=0.005" \\
      overlap nightly /data/overlap s3://evals/tonight/predictions s3://evals/refs --report

\b
Details, cron and Airflow: docs/nightly.md.""")
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
@click.option("--report/--no-report", "write_report", default=False,
              help="Also write COMPARE_DIR/report.html (env REPORT=1).")
@click.option("--plot/--no-plot", default=None,
              help="Draw COMPARE_DIR/delta.png (env PLOT=1 / PLOT=0).  [default: when "
                   "matplotlib is installed; --plot without it: a warning]")
@click.pass_context
def nightly_command(ctx: click.Context, root: str, predictions: str, references: str | None,
                    run_date: str | None, run_id: str | None, baseline: str | None,
                    score_args: str, compare_args: str, publish_args: str,
                    write_report: bool, plot: bool | None) -> None:
    """Score tonight's run, compare it with the history.

    Scores PREDICTIONS (against REFERENCES) under ROOT. Layout under ROOT (any characters;
    Hive-style partitions a warehouse can read): ROOT/run_date=YYYY-MM-DD/run_id=RUN_ID/
    (the `overlap score` output) and ROOT/compare/run_date=YYYY-MM-DD/run_id=RUN_ID/
    (compare.json, compare.parquet, delta.png, report.html). The baseline is the newest
    complete run dated before tonight with a measure in common with tonight's, scored as
    tonight's for the compared measures (newer ones are passed over, saying so; none scored
    as tonight's: exit 2, tonight's run kept for the nights after it); the comparison learns
    its bands and drift from ROOT's earlier dates (their aggregate.parquet, only those
    scored as tonight for the compared measures). Running the same night again (same
    RUN_DATE, and RUN_ID when one was set) resumes it; a retry is an attempt of the same
    night: it compares with the same earlier night, so it keeps the first attempt's verdict
    on the same predictions. Missing predictions are left out and counted (compare's missing
    alarm, exit 1) unless SCORE_ARGS says --on-missing. The *_ARGS strings are checked
    before anything is written; options the nightly sets itself (--output, --run-id,
    --history...) are refused there.

    Exit codes: 0 no alarm, or a first night with nothing to compare with; 1 alarm; 2 bad
    usage or input (a missing extra included; earlier nights, but none scored as
    tonight's); 3 or 4 as overlap score (output held by another run; execution failure).
    """
    from pipeline import api

    def log(line: str) -> None:
        click.echo(f"nightly: {safe(' '.join(line.split()))}", err=True)

    # read here, not by click: a PLOT or REPORT meant for another tool is a warning
    write_report = bool(_flag_from_environment(ctx, "write_report", "REPORT", write_report))
    plot = _flag_from_environment(ctx, "plot", "PLOT", plot)

    try:
        _refuse_owned(score_command, "SCORE_ARGS", [predictions], score_args, _FIXED_SCORE)
        flags = _parse(score_command, "SCORE_ARGS", [predictions, "--output", "x"], score_args)
        if flags.pop("output_format", "summary") != "summary":
            raise ConfigError("SCORE_ARGS: --format is not used by the nightly, which prints "
                              "the comparison")
        config_file = flags.pop("config_file", None)
        thresholds = flags.pop("thresholds", ())
        for k in (*_FIXED_SCORE, "predictions"):
            flags.pop(k, None)
        flags["threshold"] = list(thresholds) or None
        config = nightly_settings(config_file, flags)
        compare_options = _compare_options(compare_args)
        try:
            api.check_nightly_compare_options(compare_options, config)
        except PipelineError as err:
            raise type(err)(f"COMPARE_ARGS: {err.message}", hint=err.hint) from err
        publish_options = None
        if publish_args.strip():
            _refuse_owned(publish_command, "PUBLISH_ARGS", ["r"], publish_args,
                          _FIXED_PUBLISH)
            pub = _parse(publish_command, "PUBLISH_ARGS", ["r"], publish_args)
            pub.pop("run_dir", None)
            pub.pop("run_date", None)
            publish_options = pub
    except PipelineError as err:
        click.echo(f"nightly: {safe(one_line(err))}", err=True)
        ctx.exit(err.exit_code)
    with results_only_stdout():  # Ray's messages never mix with the result
        result = api.nightly(root, predictions, references, run_date=run_date, run_id=run_id,
                             config=config, baseline=baseline, compare_options=compare_options,
                             publish_options=publish_options, write_report=write_report,
                             plot=plot, log=log)
    if result.error is not None and result.run_dir == "":
        click.echo(f"nightly: {safe(one_line(result.error))}", err=True)
    if result.comparison is not None:
        for note in result.comparison.notes:
            click.echo(f"nightly: note: {safe(note)}", err=True)
        click.echo(format_table(result.comparison.to_document()))
    ctx.exit(result.exit_code)
