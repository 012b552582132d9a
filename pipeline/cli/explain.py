"""``overlap explain``: a thin command over :func:`pipeline.api.explain`."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import click

from pipeline.cli import main
from pipeline.cli.compare import safe
from pipeline.cli.score import _Choice, one_line
from pipeline.errors import PipelineError
from pipeline.metrics.rouge.family import MULTI_REFERENCE_RULES, SENTENCE_SPLITS
from pipeline.tokenizers.rouge_score import STEMMERS, TOKENIZERS


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
@click.option("--metrics", default=None,
              help="Comma-separated ROUGE metrics.  [default: the run's, else "
                   "rouge1,rouge2,rougeL,rougeLsum]")
@click.option("--tokenizer", type=_Choice(TOKENIZERS), default=None,
              help="Tokenizer.  [default: the run's, else rouge-score]")
@click.option("--stemmer", type=_Choice(STEMMERS), default=None,
              help="Stemmer.  [default: the run's, else none]")
@click.option("--case-sensitive/--no-case-sensitive", default=None,
              help="Keep case.  [default: the run's, else no]")
@click.option("--multi-reference", type=_Choice(MULTI_REFERENCE_RULES), default=None,
              help="How several references combine.  [default: the run's, else max]")
@click.option("--sentence-split", type=_Choice(SENTENCE_SPLITS), default=None,
              help="How rougeLsum finds sentences.  [default: the run's, else newline]")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None,
              help="Cut texts to N tokens.  [default: the run's, else no limit]")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True, help="What to print on stdout.")
@click.pass_context
def explain_command(ctx: click.Context, run_dir: str | None, example_id: str | None,
                    prediction: str | None, references: tuple[str, ...], metrics: str | None,
                    tokenizer: str | None, stemmer: str | None, case_sensitive: bool | None,
                    multi_reference: str | None, sentence_split: str | None,
                    max_tokens: int | None, output_format: str) -> None:
    """Show why one example scored what it did.

    Either --prediction TEXT --reference TEXT [--reference TEXT ...], or RUN_DIR --id ID
    (texts from the run when kept with --keep-text, else from its inputs; the run's
    settings unless overridden). Prints per metric the matched units: clipped n-gram
    matches (rougeN), the LCS alignment as (prediction, reference) token positions
    (rougeL), the union-LCS hits per reference sentence (rougeLsum), and which reference
    won under the multi-reference rule.

    Exit codes: 0 ok, 2 bad usage or input.
    """
    from pipeline import api
    from pipeline.explanation import format_explanation

    try:
        explanation = api.explain(
            prediction, list(references) if references or run_dir is None else None,
            run_dir=run_dir, example_id=example_id,
            metrics=[m.strip() for m in metrics.split(",") if m.strip()] if metrics else None,
            tokenizer=tokenizer, stemmer=stemmer, case_sensitive=case_sensitive,
            multi_reference=multi_reference, sentence_split=sentence_split,
            max_tokens=max_tokens)
    except PipelineError as err:
        click.echo(f"Error: {one_line(err)}", err=True)
        ctx.exit(err.exit_code)
    if output_format == "json":
        click.echo(escaped_json(explanation.to_document()))
    else:
        click.echo("\n".join(safe(line) for line in format_explanation(explanation).split("\n")))


def escaped_json(document: Any) -> str:
    """The document as indented JSON, control and bidirectional-format characters escaped.

    As the text tables (:func:`pipeline.cli.compare.safe`) do, every character of Unicode
    category Cc or Cf but the zero-width joiner is written as its JSON escape
    (``\\u202e``), so that a right-to-left override or an escape sequence in a text
    cannot act on the terminal; the JSON decodes to the same strings. Other characters
    are kept as they are (no ``\\u`` for accents or CJK).
    """
    text = json.dumps(document, indent=2, ensure_ascii=False)
    return "".join(json.dumps(ch)[1:-1]
                   if ch != "\n" and ch != "\u200d" and unicodedata.category(ch) in ("Cc", "Cf")
                   else ch for ch in text)
