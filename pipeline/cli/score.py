"""``overlap score`` and ``overlap signature``: thin commands over :func:`pipeline.api.score`.

Each command gathers the flags that were given, layers them over ``--config`` (flags win),
makes one library call and prints the result. Library errors are printed as one line
(``Error: ...``, line breaks of underlying messages joined) and the process exits with the
error's code (2 bad usage or input, 3 output exists, 4 execution failure).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from pipeline.cli import main
from pipeline.config import ENGINES, ON_EMPTY_REFERENCES, ON_LONG_TEXT, ON_MISSING
from pipeline.errors import PipelineError, did_you_mean
from pipeline.metrics.base import Option
from pipeline.scoring import DEFAULT_METRICS, Threshold


class _Choice(click.Choice):
    """``click.Choice`` whose refusal adds "did you mean ...?" for a near miss."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as err:
            hint = did_you_mean(str(value), [str(c) for c in self.choices])
            if not hint:
                raise
            self.fail(f"{err.message} ({hint})", param, ctx)


def one_line(err: Exception) -> str:
    """The error's message on one line (messages of pyarrow and others may span several)."""
    return " ".join(part.strip() for part in str(err).splitlines() if part.strip())


def _family_option(option: Option) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The click option of a family option (declared once, in its family's module)."""
    shown = ("not set" if option.default is None else
             ("yes" if option.default else "no") if option.type is bool else option.default)
    text = f"{option.help}  [default: {shown}]"
    if option.type is bool:
        return click.option(f"{option.flag}/--no-{option.flag[2:]}", option.key, default=None,
                            help=text)
    kind: Any = _Choice(option.choices) if option.choices else option.type
    return click.option(option.flag, option.key, type=kind, help=text)


def _scoring_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options that define the scores and intervals (shared by ``score`` and ``signature``).

    The metric names in ``--metrics``'s help and every family option's flag come from the
    metric registry.
    """
    from pipeline.metrics import registry

    options: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.option("--config", "config_file", type=click.Path(dir_okay=False),
                     help="YAML settings file (see configs/default.yaml); flags override it."),
        click.option("--metrics", metavar="NAME[,NAME]",
                     help=f"Comma-separated metrics: {_names_help(registry.names())}.  "
                          f"[default: {','.join(DEFAULT_METRICS)}]"),
        click.option("--rouge155", metavar="FLAGS",
                     help="The ROUGE-1.5.5 Perl script's flags, quoted (e.g. \"-n 4 -w 1.2 "
                          "-2 4 -U -m -f A\"): sets the metrics and options the script "
                          "would use (tokenizer rouge155); see the README."),
        *(_family_option(o) for o in registry.options()),
        click.option("--max-tokens", type=int, metavar="N",
                     help="Cut texts longer than N tokens before ROUGE (signature "
                          "maxtok:N); see --on-long-text.  [default: 100000]"),
        click.option("--bootstrap", type=int, metavar="N",
                     help="Bootstrap resamples for the intervals; 0 turns them off.  "
                          "[default: 1000]"),
        click.option("--confidence", type=float,
                     help="Confidence level of the intervals.  [default: 0.95]"),
        click.option("--seed", type=int, help="Seed of the bootstrap.  [default: 12345]"),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _names_help(names: tuple[str, ...]) -> str:
    """``rouge1..rouge9, rougeL, ...``: runs of numbered names shortened."""
    out: list[str] = []
    i = 0
    while i < len(names):
        j = i
        while j + 1 < len(names) and names[j + 1][:-1] == names[i][:-1] \
                and names[j + 1][-1:].isdigit() and names[j][-1:].isdigit():
            j += 1
        out.append(f"{names[i]}..{names[j]}" if j - i >= 2 else ", ".join(names[i:j + 1]))
        i = j + 1
    return ", ".join(out)


def _settings(config_file: str | None, flags: dict[str, Any]) -> Any:
    from pipeline.config import load_config_file, resolve_config

    file_values = load_config_file(config_file) if config_file else None
    return resolve_config(file_values, flags)


def _rouge155_mapping(flags: str) -> list[str]:
    """What ROUGE-1.5.5 flags stand for, as lines (notes on ignored flags first)."""
    from pipeline.metrics.rouge155.family import parse_rouge155_flags

    metrics, options, notes = parse_rouge155_flags(flags)
    return [f"note: {n}" for n in notes] + [
        f"rouge155 {flags!r} -> metrics: {','.join(metrics)}",
        "  options: " + ", ".join(f"{k}={v}" for k, v in options.items())]


@main.command("score")
@click.argument("predictions")
@click.option("--references", metavar="REFERENCES",
              help="Separate references table (file, directory or glob), keyed by id; omit "
                   "when the predictions have a list<string> references column.")
@click.option("--output", required=True, metavar="DIR",
              help="Run directory to write (path or URI).")
@click.option("--id-column", help="Example id column.  [default: id]")
@click.option("--prediction-column", help="Prediction text column.  [default: prediction]")
@click.option("--reference-column",
              help="References column: list<string>, or string with one row per reference.  "
                   "[default: references, else reference]")
@_scoring_options
@click.option("--group-by", metavar="COL[,COL]",
              help="Aggregate per value of these predictions columns (also kept).")
@click.option("--keep-columns", metavar="COL[,COL]",
              help="Further predictions columns to copy into the examples.")
@click.option("--threshold", "thresholds", multiple=True, metavar="METRIC.MEASURE=VALUE",
              help="Pass/fail gate on any measure, e.g. rougeL.fmeasure=0.5 or "
                   "bleu.score=30 (repeatable): a passed_... column and pass rates.")
@click.option("--keep-text/--no-keep-text", default=None,
              help="Copy the prediction text into the examples (column 'prediction').")
@click.option("--on-missing", type=_Choice(ON_MISSING),
              help="Ids on one side only: error; skip (leave out, count); zero (a reference "
                   "id without a prediction scores as an empty prediction).  [default: error]")
@click.option("--on-empty-references", type=_Choice(ON_EMPTY_REFERENCES),
              help="Null or empty reference lists, null references: error, or skip (leave "
                   "out, count).  [default: error]")
@click.option("--on-long-text", type=_Choice(ON_LONG_TEXT),
              help="Texts over --max-tokens: truncate (cut, flag in column 'truncated', "
                   "count) or error.  [default: truncate]")
@click.option("--engine", type=_Choice(ENGINES),
              help="auto (in-process on every CPU; Ray whenever an address is set or Ray "
                   "is running in the process), ray (local instance or --address) or "
                   "local (in-process).  [default: auto]")
@click.option("--address", help="Ray cluster address (also RAY_ADDRESS); default: start a "
                                "local Ray sized to this machine.")
@click.option("--run-id", help="Run id (letters, digits, . _ -).  [default: UTC time + "
                               "random suffix]")
@click.option("--overwrite", is_flag=True, help="Replace a complete existing output.")
@click.pass_context
def score_command(ctx: click.Context, predictions: str, references: str | None, output: str,
                  config_file: str | None, thresholds: tuple[str, ...], run_id: str | None,
                  overwrite: bool, **flags: Any) -> None:
    """Score PREDICTIONS (Parquet file, directory of shards or glob) against references.

    Joins predictions and references by id, scores every example (in-process for small
    inputs, on Ray workers for large ones or a cluster: see --engine) and writes
    DIR/examples/part-*.parquet, DIR/aggregate.parquet, DIR/manifest.json and DIR/_SUCCESS
    (last). Prints the means with their bootstrap intervals.

    Exit codes: 0 ok, 2 bad usage or input, 3 output exists (use --overwrite),
    4 execution failure.
    """
    from pipeline.api import score

    flags["threshold"] = list(thresholds) or None
    progress = _Progress() if sys.stderr.isatty() else None
    try:
        config = _settings(config_file, flags)
        if flags.get("rouge155"):
            for line in _rouge155_mapping(flags["rouge155"])[:-2]:
                click.echo(line, err=True)
        # Only the result goes to stdout: whatever prints during the run (Ray reports a
        # task's retry, with its traceback, on stdout) goes to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            run = score(predictions, references=references, output=output, config=config,
                        run_id=run_id, overwrite=overwrite, defer_engine_stop=True,
                        progress=progress.update if progress else None)
    except PipelineError as err:
        if progress:
            progress.clear()
        click.echo(f"Error: {one_line(err)}", err=True)
        ctx.exit(err.exit_code)
    if progress:
        progress.clear()
    click.echo(format_summary(run.manifest, run.aggregate))


@main.command("signature")
@_scoring_options
@click.option("--n-references", default="1", show_default=True, metavar="N|var",
              help="References per example, or 'var' when it varies.")
@click.pass_context
def signature_command(ctx: click.Context, config_file: str | None, n_references: str,
                      **flags: Any) -> None:
    """Print the signature of a scoring configuration (as written on every result).

    With --rouge155, first what the script's flags stand for (metrics and options).
    """
    try:
        config = _settings(config_file, flags)
        if flags.get("rouge155"):
            click.echo("\n".join(_rouge155_mapping(flags["rouge155"])))
        if n_references != "var" and not (n_references.isdigit() and int(n_references) > 0):
            raise click.BadParameter("expected a positive integer or 'var'",
                                     param_hint="--n-references")
        nrefs: int | str = n_references if n_references == "var" else int(n_references)
    except PipelineError as err:
        click.echo(f"Error: {one_line(err)}", err=True)
        ctx.exit(err.exit_code)
    click.echo(str(config.signature(n_references=nrefs)))


class _Progress:
    """One self-rewriting status line on stderr (only when stderr is a terminal)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.width = 0

    def update(self, stage: str, done: int, total: int) -> None:
        text = (f"{'checking' if stage == 'check' else 'scoring'}: {done}/{total} partitions "
                f"({time.perf_counter() - self.start:.0f} s)")
        click.echo("\r" + text.ljust(self.width), err=True, nl=False)
        self.width = len(text)

    def clear(self) -> None:
        if self.width:
            click.echo("\r" + " " * self.width + "\r", err=True, nl=False)


def _cell(mean: float | None, low: float | None, high: float | None) -> str:
    if mean is None:
        return "-"
    if low is None or high is None:
        return f"{mean:.4f}"
    return f"{mean:.4f} [{low:.4f}, {high:.4f}]"


def format_summary(manifest: dict[str, Any], aggregate: Any) -> str:
    """Render a run's summary: each metric's primary measure (and pass rates) per group.

    A metric shows its corpus score (``statistic`` ``corpus``, e.g. corpus BLEU) when the
    aggregate has one, else the mean of its primary measure (ROUGE's fmeasure), with
    intervals.

    Args:
        manifest: the run's manifest (``pipeline.api.ScoreRun.manifest``).
        aggregate: the run's aggregate table (pyarrow).

    Returns:
        Plain text: a header, one row for the whole run then one per group, and where the
        output went.

    """
    from pipeline.metrics import registry

    config = manifest["config"]
    group_by: list[str] = config["group_by"]
    metrics: list[str] = config["metrics"]
    rows = aggregate.to_pylist()
    corpus_rows = {(r["metric"], r["measure"]) for r in rows if r["statistic"] == "corpus"}
    specs = registry.specs(metrics, config)
    columns: list[tuple[str, str, str, float | None]] = [
        (s.name, s.primary, "corpus" if (s.name, s.primary) in corpus_rows else "mean", None)
        for s in specs]
    thresholds = [Threshold.parse(t) for t in config["threshold"]]
    columns += [(t.metric, t.measure, "pass_rate", t.at) for t in thresholds]
    headers = [m if s == "mean" else f"{m} (corpus)" if s == "corpus"
               else f"pass {m}.{x}>={at:g}" for m, x, s, at in columns]
    table: dict[tuple, dict[tuple, dict[str, Any]]] = {}
    n_of: dict[tuple, int] = {}
    for r in rows:
        key = ("all",) if r["scope"] == "all" else tuple(r[g] for g in group_by)
        n_of[key] = r["n_examples"]
        at = r["threshold"]
        table.setdefault(key, {})[(r["metric"], r["measure"], r["statistic"],
                                   at if r["statistic"] == "pass_rate" else None)] = r
    label = ", ".join(group_by) if group_by else ""
    lines_in = []
    for key, cells in table.items():
        name = "(all)" if key == ("all",) else ", ".join("(null)" if v is None else str(v)
                                                          for v in key)
        values = []
        for c in columns:
            r = cells.get(c)
            values.append(_cell(r["mean"], r["ci_low"], r["ci_high"]) if r else "-")
        lines_in.append([name, str(n_of[key]), *values])
    header = [label, "n", *headers]
    widths = [max(len(header[i]), *(len(row[i]) for row in lines_in)) for i in range(len(header))]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    primaries = sorted({s.primary for s in specs})
    shown = (f"{primaries[0]} means" if len(primaries) == 1 else
             "means of each metric's primary measure (" + ", ".join(
                 f"{s.name}: {s.primary}" for s in specs) + ")")
    if corpus_rows:
        shown += "; corpus scores from summed statistics where marked"
    counts = manifest["counts"]
    engine = manifest["engine"]
    if engine["engine"] == "local":
        where = "in-process" + (", --engine local" if engine.get("requested") == "local"
                                else "")
    else:
        where = (f"Ray cluster at {engine['address']}" if engine.get("address")
                 else "local Ray") + f", {engine.get('num_cpus', 0)} CPU" + (
                     "" if engine.get("num_cpus") == 1 else "s")
    seconds = manifest["seconds"]["total"]
    interval = (f"{config['confidence']:.0%} percentile bootstrap interval "
                f"({config['bootstrap']} resamples, seed {config['seed']})"
                if config["bootstrap"] else "no interval (--bootstrap 0)")
    out = [
        f"scored {counts['examples_scored']:,} examples in {seconds:.1f} s ({where})",
        f"signature: {manifest['signature']}",
        "",
        fmt(header),
        *[fmt(r) for r in lines_in],
        "",
        f"{shown} with a {interval}; every measure is in aggregate.parquet",
    ]
    if counts.get("one_line_multi_sentence_texts") and "rougeLsum" in metrics \
            and config.get("sentence_split") == "newline":
        out.append(f"note: {counts['one_line_multi_sentence_texts']} texts have several "
                   "sentences on one line: rougeLsum splits on newlines only, so for them it "
                   "equals rougeL (--sentence-split punctuation splits after . ! ?)")
    if counts.get("zero_token_texts"):
        out.append(f"note: {counts['zero_token_texts']} non-empty texts produced no token "
                   f"with tokenizer {config['tokenizer']} (try --tokenizer unicode)")
    skipped = {k: n for k, n in (counts.get("skipped") or {}).items() if n}
    if skipped:
        out.append(f"note: {sum(skipped.values())} examples left out (" + ", ".join(
            f"{k.replace('_', ' ')}: {n}" for k, n in skipped.items())
            + "); their first ids are in manifest.json counts.skipped_ids")
    if counts.get("missing_predictions_scored_zero"):
        out.append(f"note: {counts['missing_predictions_scored_zero']} reference ids without a "
                   "prediction were scored as empty predictions (--on-missing zero)")
    if counts.get("truncated_examples"):
        out.append(f"note: {counts['truncated_examples']} examples had a text cut at "
                   f"{config.get('max_tokens')} tokens (column 'truncated')")
    reused = manifest.get("stages", {}).get("score", {}).get("partitions_reused", 0)
    if manifest.get("resumed"):
        out.append(f"note: resumed an interrupted run: {reused} of {counts['partitions']} "
                   "partitions reused, the others scored now")
    n_files = len(manifest["outputs"]["examples"])
    out.append(f"output: {manifest['output']}  (examples/: {n_files} file(s), "
               "aggregate.parquet, manifest.json, _SUCCESS)")
    return "\n".join(out)
