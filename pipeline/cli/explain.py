"""``overlap explain``: a thin command over :func:`pipeline.api.explain`."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import click

from pipeline.cli import main
from pipeline.cli.score import _family_option, one_line
from pipeline.errors import PipelineError
from pipeline.printable import safe


def _family_options(fn: Any) -> Any:
    """Every family preset and option flag (from the registry), as ``overlap score`` has them."""
    from pipeline.metrics import registry

    for option in reversed(registry.options()):
        fn = _family_option(option)(fn)
    for preset in reversed(registry.presets()):
        fn = click.option(preset.flag, preset.key, metavar="TEXT", default=None,
                          help=preset.help)(fn)
    return fn


@main.command("explain", epilog="""\b
Examples:
  overlap explain --prediction "The cat sat." --reference "A cat sat down."
  overlap explain runs/realsumm --id ID --metrics rougeL

\b
Details: docs/explain.md.""")
@click.argument("run_dir", required=False)
@click.option("--id", "example_id", metavar="ID", default=None,
              help="The example of RUN_DIR to explain.")
@click.option("--prediction", metavar="TEXT", default=None, help="The prediction text.")
@click.option("--reference", "references", metavar="TEXT", multiple=True,
              help="A reference text (repeatable).")
@click.option("--metrics", metavar="NAME[,NAME]", default=None,
              help="Comma-separated metrics of any family.  [default: the run's, else "
                   "rouge1,rouge2,rougeL,rougeLsum]")
@_family_options
@click.option("--max-tokens", type=click.IntRange(min=1), default=None,
              help="Cut texts to N tokens (ROUGE).  [default: the run's, else no limit]")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True, help="What to print on stdout.")
@click.pass_context
def explain_command(ctx: click.Context, run_dir: str | None, example_id: str | None,
                    prediction: str | None, references: tuple[str, ...], metrics: str | None,
                    output_format: str, **options: Any) -> None:
    """Show why one example scored what it did, for every metric family.

    Either --prediction TEXT --reference TEXT [--reference TEXT ...], or RUN_DIR --id ID
    (texts from the run when kept with --keep-text, else from its inputs; the run's metrics
    and settings unless overridden; the settings flags are overlap score's). Prints per
    metric its scores and statistics as the run's columns hold them, which reference won,
    and per reference the matched units: clipped n-grams (rougeN, BLEU per order with the
    brevity penalty, chrF/chrF++ character and word n-grams per order), the LCS alignment
    (rougeL), union-LCS hits per sentence (rougeLsum, rougeWsum), skip bigrams (rougeS,
    rougeSU), the shared tokens (token_f1, exact_match).

    Exit codes: 0 ok, 2 bad usage or input.
    """
    from pipeline import api

    try:
        explanation = api.explain(
            prediction, list(references) if references or run_dir is None else None,
            run_dir=run_dir, example_id=example_id,
            metrics=[m.strip() for m in metrics.split(",") if m.strip()] if metrics else None,
            **options)
    except PipelineError as err:
        click.echo(f"Error: {one_line(err)}", err=True)
        ctx.exit(err.exit_code)
    if output_format == "json":
        click.echo(escaped_json(explanation.to_document()))
    else:
        # str(explanation) is the text (format_explanation), escaped for the terminal
        click.echo("\n".join(safe(line) for line in str(explanation).split("\n")))


def escaped_json(document: Any) -> str:
    """The document as indented JSON, control and bidirectional-format characters escaped.

    As the text tables (:func:`pipeline.printable.safe`) do, every character of Unicode
    category Cc or Cf but the zero-width joiner is written as its JSON escape
    (``\\u202e``), so that a right-to-left override or an escape sequence in a text
    cannot act on the terminal; the JSON decodes to the same strings. Other characters
    are kept as they are (no ``\\u`` for accents or CJK).
    """
    text = json.dumps(document, indent=2, ensure_ascii=False)
    return "".join(json.dumps(ch)[1:-1]
                   if ch != "\n" and ch != "\u200d" and unicodedata.category(ch) in ("Cc", "Cf")
                   else ch for ch in text)
