"""``overlap score`` and ``overlap signature``: thin commands over :func:`pipeline.api.score`.

Each command gathers the flags that were given, layers them over ``--config`` (flags win),
makes one library call and prints the result. Library errors are printed as one line
(``Error: ...``, line breaks of underlying messages joined) and the process exits with the
error's code (2 bad usage or input, 3 output exists, 4 execution failure).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import click

from pipeline.cli import main, results_only_stdout
from pipeline.config import ENGINES, ON_EMPTY_REFERENCES, ON_LONG_TEXT, ON_MISSING
from pipeline.errors import PipelineError, did_you_mean
from pipeline.metrics.base import Option
from pipeline.scoring import DEFAULT_METRICS, Threshold

# Columns of the default summary (``--format summary``): a terminal of 100 columns shows it
# unwrapped. ``--format wide`` writes one line per group whatever its width.
SUMMARY_WIDTH = 100
SUMMARY_FORMATS = ("summary", "wide", "json")


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


def _n(count: int, one: str, many: str) -> str:
    """``1 text has`` / ``2 texts have``: a count with the words that agree with it."""
    return f"{count} {one if count == 1 else many}"


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
        *(click.option(p.flag, p.key, metavar="TEXT", help=p.help) for p in registry.presets()),
        *(_family_option(o) for o in registry.options()),
        click.option("--max-tokens", type=int, metavar="N",
                     help="Cut texts longer than N tokens before ROUGE (signature "
                          "maxtok:N); see --on-long-text.  [default: 100000]"),
        click.option("--bootstrap", type=int, metavar="N",
                     help="Bootstrap resamples for the intervals; 0 turns them off; at "
                          "most 100000, and above 1000 at most 10^10 rows x N.  "
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


def preset_lines(flags: dict[str, Any]) -> list[str]:
    """What the presets given (e.g. ``--rouge155``) stand for, as lines (notes first).

    Raises:
        ConfigError: a preset's text it refuses.

    """
    from pipeline.metrics import registry

    return [line for p in registry.presets() if flags.get(p.key)
            for line in p.describe(flags[p.key])]


_SCORE_EPILOG = """\b
Examples:
  overlap score pipeline/data/realsumm/predictions \\
      --references pipeline/data/realsumm/references.parquet \\
      --output runs/realsumm --group-by system
  overlap score preds/ --references refs.parquet --output runs/mt --metrics bleu,chrf
  overlap score preds.parquet --output runs/qa --metrics token_f1,exact_match
  overlap score preds/ --references refs/ --output runs/r155 --rouge155 "-n 4 -w 1.2 -m"

\b
Details: docs/scoring.md (inputs, options), docs/outputs.md (columns),
docs/failures.md (bad input, resuming), docs/metrics.md (every metric and option)."""


@main.command("score", epilog=_SCORE_EPILOG)
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
@click.option("--allow-local-paths", is_flag=True, default=None,
              help="With --address, accept local paths (inputs, --output): only for a "
                   "single-host cluster or a disk mounted at one path on every node.")
@click.option("--run-id", help="Run id (letters, digits, . _ -).  [default: UTC time + "
                               "random suffix]")
@click.option("--overwrite", is_flag=True, help="Replace a complete existing output.")
@click.option("--format", "output_format", type=_Choice(SUMMARY_FORMATS), default="summary",
              show_default=True,
              help="stdout: summary (fits 100 columns: metrics in blocks, notes wrapped), "
                   "wide (one line per group, every column), json (the summary's figures, "
                   "counts and every aggregate row as one document).")
@click.pass_context
def score_command(ctx: click.Context, predictions: str, references: str | None, output: str,
                  config_file: str | None, thresholds: tuple[str, ...], run_id: str | None,
                  overwrite: bool, output_format: str, **flags: Any) -> None:
    """Score predictions against references into a run.

    PREDICTIONS and --references are a Parquet, CSV or JSON Lines file (*.csv, *.jsonl,
    *.ndjson, *.json), a directory of shards or a glob (local or a URI). Joins them by id,
    scores every example (in-process on every CPU, or on Ray with --address: see --engine)
    and writes DIR/examples/part-*.parquet,
    DIR/aggregate.parquet, DIR/manifest.json and DIR/_SUCCESS (last). Prints the means with
    their bootstrap intervals, per --group-by group.

    Exit codes: 0 ok, 2 bad usage or input, 3 output exists (use --overwrite),
    4 execution failure.
    """
    from pipeline.api import score

    flags["threshold"] = list(thresholds) or None
    progress = _Progress() if sys.stderr.isatty() else None
    try:
        config = _settings(config_file, flags)
        for line in preset_lines(flags):
            if line.startswith("note: "):
                click.echo(line, err=True)
        early = language_warnings(config.scoring.to_dict())  # before a long run, not after
        for line in early:
            click.echo(line, err=True)
        # Only the result goes to stdout: whatever prints during the run (Ray reports a
        # task's retry, with its traceback, on stdout) goes to stderr.
        with results_only_stdout():
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
    for line in loud_warnings(run.manifest):  # where a user looks first, before the table
        if line not in early:
            click.echo(line, err=True)
    if output_format == "json":
        from pipeline.printable import safe_json

        click.echo(safe_json(summary_document(run.manifest, run.aggregate)))
    else:
        click.echo(format_summary(run.manifest, run.aggregate,
                                  width=None if output_format == "wide" else SUMMARY_WIDTH))


@main.command("signature", epilog=(
    "\b\nExamples:\n  overlap signature --metrics rouge1,rougeL --stemmer porter\n"
    "  overlap signature --rouge155 \"-c 95 -2 -1 -U -r 1000 -n 4 -w 1.2 -a -m\""))
@_scoring_options
@click.option("--n-references", default="1", show_default=True, metavar="N|var",
              help="References per example, or 'var' when it varies.")
@click.pass_context
def signature_command(ctx: click.Context, config_file: str | None, n_references: str,
                      **flags: Any) -> None:
    """Print the signature a configuration writes.

    The string every result of a run with these settings carries (Parquet metadata,
    manifest.json); compare refuses runs whose signatures differ in a compared measure.

    With a preset (--rouge155), first what it stands for (metrics and options).
    """
    try:
        config = _settings(config_file, flags)
        for line in preset_lines(flags):
            click.echo(line)
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


_GAP = "  "


def _summary_table(header: list[str], rows: list[list[str]], *, width: int | None) -> list[str]:
    """A table whose first two columns (group, n) start every line, the others in blocks.

    Args:
        header: column names: the group label, ``n``, then one per metric or pass rate.
        rows: the cells of each row, as many as ``header``.
        width: the widest line allowed, in characters; ``None``: one block, any width.

    Returns:
        Lines: with ``width``, the value columns are cut into consecutive blocks, each block
        a header and the rows (group and n repeated), blocks separated by an empty line; a
        group label longer than leaves room for one value column is shortened with ``...``
        (``--format wide`` prints it whole). Every line is at most ``width`` characters but
        when a single value column is wider.

    """
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(len(header))]
    values = list(range(2, len(header)))
    if width is not None and values:
        room = width - widths[1] - max(widths[i] for i in values) - 2 * len(_GAP)
        if widths[0] > room:
            keep = max(room, len(header[0]), 8)
            rows = [[r[0] if len(r[0]) <= keep else r[0][:keep - 3] + "...", *r[1:]]
                    for r in rows]
            widths[0] = max(len(header[0]), *(len(r[0]) for r in rows))
    blocks: list[list[int]] = []
    for i in values:
        used = widths[0] + widths[1] + sum(len(_GAP) + widths[j] for j in
                                           (blocks[-1] if blocks else [])) + len(_GAP)
        if blocks and (width is None or used + len(_GAP) + widths[i] <= width):
            blocks[-1].append(i)
        else:
            blocks.append([i])

    def fmt(cells: list[str], columns: list[int]) -> str:
        return _GAP.join(cells[i].ljust(widths[i]) if i == 0 else cells[i].rjust(widths[i])
                         for i in columns).rstrip()

    out: list[str] = []
    for block in blocks or [[]]:
        if out:
            out.append("")
        columns = [0, 1, *block]
        out += [fmt(header, columns), *(fmt(r, columns) for r in rows)]
    return out


def loud_warnings(manifest: dict[str, Any]) -> list[str]:
    """``warning: ...`` lines for the data notes that mean silent zeros (``DataNote.loud``).

    E.g. non-Latin texts that produced no ROUGE token, or Chinese under BLEU's ``13a``:
    their scores are 0 for a reason that is not the texts' quality.
    """
    from pipeline.metrics import registry

    counts, config = manifest.get("counts") or {}, manifest.get("config") or {}
    return [*language_warnings(config, counts),
            *(f"warning: {note.text(counts[note.key], config)}"
              for note in registry.data_notes() if note.loud and counts.get(note.key))]


def language_warnings(config: Mapping[str, Any],
                      counts: Mapping[str, Any] | None = None) -> list[str]:
    """``warning: ...`` lines for language names scored with XL-Sum's fallback tokenizer.

    See :func:`pipeline.metrics.rouge.languages.fallback_notes`: one line for
    ``--language NAME`` (from the config alone, so it can be printed before scoring) and one
    per distinct ``column:COL`` value (the manifest's ``counts.unnamed_languages``).
    """
    from pipeline.metrics.rouge.languages import fallback_notes

    return [f"warning: {line}" for line in fallback_notes(config, counts)]


def format_summary(manifest: dict[str, Any], aggregate: Any, *,
                   width: int | None = SUMMARY_WIDTH) -> str:
    """Render a run's summary: each metric's primary measure (and pass rates) per group.

    A metric shows its corpus score (``statistic`` ``corpus``, e.g. corpus BLEU) when the
    aggregate has one, else the mean of its primary measure (ROUGE's fmeasure), with
    intervals.

    Args:
        manifest: the run's manifest (``pipeline.api.ScoreRun.manifest``).
        aggregate: the run's aggregate table (pyarrow).
        width: the widest line, in characters (default 100): the table's value columns go
            into blocks that fit and notes are wrapped; the signature line is one token,
            printed whole. ``None`` (``--format wide``): one line per group and per note.

    Returns:
        Plain text: a header, one row for the whole run then one per group, and where the
        output went. Group values and group column names have their control and
        bidirectional-format characters escaped (a newline as ``\\x0a``, U+202E as
        ``\\u202e``), as the JSON output has them.

    """
    from pipeline.aggregate import metric_aggregates
    from pipeline.metrics import registry
    from pipeline.printable import safe

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
    # group values and column names are data: control and bidi characters escaped
    label = safe(", ".join(group_by)) if group_by else ""
    lines_in = []
    for key, cells in table.items():
        name = "(all)" if key == ("all",) else ", ".join("(null)" if v is None else safe(v)
                                                          for v in key)
        values = []
        for c in columns:
            r = cells.get(c)
            values.append(_cell(r["mean"], r["ci_low"], r["ci_high"]) if r else "-")
        lines_in.append([name, str(n_of[key]), *values])
    header = [label, "n", *headers]

    primaries = sorted({s.primary for s in specs})
    shown = (f"{primaries[0]} means" if len(primaries) == 1 else
             "means of each metric's primary measure (" + ", ".join(
                 f"{s.name}: {s.primary}" for s in specs) + ")")
    if corpus_rows:
        shown += ", and corpus scores from summed statistics where marked (corpus),"
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
    interval = (f"with a {config['confidence']:.0%} percentile bootstrap interval "
                f"({config['bootstrap']} resamples, seed {config['seed']})"
                if config["bootstrap"] else "without an interval (--bootstrap 0)")
    out = [
        f"scored {counts['examples_scored']:,} "
        f"{'example' if counts['examples_scored'] == 1 else 'examples'} in {seconds:.1f} s "
        f"({where})",
        *loud_warnings(manifest),
        f"signature: {manifest['signature']}",
        "",
    ]
    table_at = len(out)  # the table goes here, already fitted to the width
    out += [
        "",
        f"{shown} {interval}; every measure is in aggregate.parquet",
    ]
    out += [f"{m}: {a.breakdown_text}"  # the corpus score's parts, as sacrebleu prints them
            for m, a in metric_aggregates(aggregate, specs).items() if a.breakdown_text]
    out += [f"note: {note.text(counts[note.key], config)}" for note in registry.data_notes()
            if counts.get(note.key) and not note.loud]
    if counts.get("null_predictions"):
        n_null = counts["null_predictions"]
        out.append(f"note: {_n(n_null, 'prediction was', 'predictions were')} null and "
                   f"scored as {'an empty text' if n_null == 1 else 'empty texts'} "
                   "(manifest.json counts.null_predictions)")
    skipped = {k: n for k, n in (counts.get("skipped") or {}).items() if n}
    if skipped:
        out.append(f"note: {_n(sum(skipped.values()), 'example', 'examples')} left out ("
                   + ", ".join(f"{k.replace('_', ' ')}: {n}" for k, n in skipped.items())
                   + "); their first ids are in manifest.json counts.skipped_ids")
    if counts.get("missing_predictions_scored_zero"):
        n_zero = counts["missing_predictions_scored_zero"]
        out.append(f"note: {_n(n_zero, 'reference id', 'reference ids')} without a prediction "
                   f"{'was' if n_zero == 1 else 'were'} scored as empty predictions "
                   "(--on-missing zero)")
    if counts.get("truncated_examples"):
        out.append(f"note: {_n(counts['truncated_examples'], 'example', 'examples')} had a "
                   f"text cut at {config.get('max_tokens')} tokens (column 'truncated')")
    reused = manifest.get("stages", {}).get("score", {}).get("partitions_reused", 0)
    if manifest.get("resumed"):
        out.append(f"note: resumed an interrupted run: {reused} of {counts['partitions']} "
                   "partitions reused, the others scored now")
    n_files = len(manifest["outputs"]["examples"])
    out.append(f"output: {manifest['output']}  (examples/: {n_files} file(s), "
               "aggregate.parquet, manifest.json, _SUCCESS)")
    grid = _summary_table(header, lines_in, width=width)
    if width is None:
        return "\n".join([*out[:table_at], *grid, *out[table_at:]])
    return "\n".join([*_wrap(out[:table_at], width=width), *grid,
                      *_wrap(out[table_at:], width=width)])


def summary_document(manifest: dict[str, Any], aggregate: Any) -> dict[str, Any]:
    """The run's result as one JSON-ready document (``overlap score --format json``).

    Args:
        manifest: the run's manifest (``pipeline.api.ScoreRun.manifest``).
        aggregate: the run's aggregate table (pyarrow), in its row order.

    Returns:
        ``run_id``, ``output``, ``signature``, ``engine``, ``seconds`` and ``counts`` as in
        ``manifest.json``, and ``aggregate``: one object per row of ``aggregate.parquet``
        with its columns. Values JSON has no type for are written as text: a NaN or
        infinite float as ``"nan"``, ``"inf"``, ``"-inf"``, a date as ISO 8601, bytes as
        Python's ``repr``.

    """
    import math

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        return value.isoformat() if hasattr(value, "isoformat") else str(value)

    return plain({key: manifest.get(key) for key in ("run_id", "output", "signature",
                                                     "engine", "seconds", "counts")}
                 | {"aggregate": aggregate.to_pylist()})


def _wrap(lines: list[str], *, width: int) -> list[str]:
    """Lines longer than ``width`` broken at spaces, continued with a 2-space indent.

    The signature is one token and stays whole (it is copied as it is); a path or word
    longer than the width is never cut.
    """
    import textwrap

    out: list[str] = []
    for line in lines:
        if len(line) <= width or line.startswith("signature: "):
            out.append(line)
        else:
            out += textwrap.wrap(line, width=width, subsequent_indent="  ",
                                 break_long_words=False, break_on_hyphens=False)
    return out
