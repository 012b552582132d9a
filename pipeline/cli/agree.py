"""``overlap agree``: a thin command over :func:`pipeline.api.agree`."""

from __future__ import annotations

import click

from pipeline.cli import main
from pipeline.errors import PipelineError


def _split(values: tuple[str, ...]) -> list[str]:
    return [p.strip() for v in values for p in v.split(",") if p.strip()]


def _epsilon(value: str | None) -> float | str | None:
    if value is None or value == "auto":
        return value
    try:
        return float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither a number nor 'auto'",
                                 param_hint="--epsilon") from None


@main.command("agree", epilog="""\b
Examples:
  overlap agree runs/realsumm --judgments pipeline/data/realsumm/litepyramid.parquet \\
      --system-column set_system --input-column document --group-by set \\
      --output runs/agree
  overlap agree scores.parquet --judgments ratings.parquet --human expert_relevance \\
      --metrics rouge1_f1,rouge2_f1 --coefficients pearson,spearman,kendall
  overlap agree RUN --judgments ratings.jsonl --group-by domain

\b
Exit codes: 0 ok, 2 bad usage or input, 3 output in the way, 4 the outputs cannot be
written. Details: docs/agree.md.""")
@click.argument("scores", metavar="RUN")
@click.option("--judgments", metavar="FILE", required=True,
              help="Human judgments keyed by id (Parquet, CSV or JSON Lines): a number per "
                   "example, or a list of raters' numbers (their mean is the human score).")
@click.option("--human", "humans", metavar="COLUMN", multiple=True,
              help="A judgment column (repeatable).  [default: every numeric or list column]")
@click.option("--metrics", "measures", metavar="MEASURE[,MEASURE]", multiple=True,
              help="Score columns: a run's measures (rouge1.fmeasure; rouge1 means its "
                   "fmeasure) or a table's columns.  [default: a run's *.fmeasure and "
                   "*.score, a table's numeric columns]")
@click.option("--system-column", default="system", show_default=True,
              help="What a system is.")
@click.option("--input-column", default=None,
              help="What an input is.  [default: input, else document; without one, one "
                   "row per system: the system level only]")
@click.option("--id-column", default=None, help="The id column.  [default: the run's, else id]")
@click.option("--group-by", "group_by", metavar="COLUMN[,COLUMN]", multiple=True,
              help="Subsets with their own rows and a test of their difference from the rest.")
@click.option("--preferences", metavar="FILE", default=None,
              help="Pairwise preferences (id_a, id_b, choice a/b/tie per rater, or counts "
                   "n_a, n_b, n_tie): each measure's agreement with the raters' majority.")
@click.option("--levels", metavar="LEVEL[,LEVEL]", default="system,input,global",
              show_default=True, help="Of system, input, global.")
@click.option("--coefficients", metavar="NAME[,NAME]", default="kendall", show_default=True,
              help="Of pearson, spearman, kendall (tau-b), kendall_c (tau-c), acc23, tau23.")
@click.option("--epsilon", metavar="NUMBER|auto", default=None,
              help="acc23 / tau23: metric differences <= NUMBER are ties; auto: the "
                   "threshold maximising the coefficient (tie calibration).  [default: 0]")
@click.option("--resampling", type=click.Choice(["both", "systems", "inputs"]),
              default="both", show_default=True, help="What the bootstrap resamples.")
@click.option("--n-resamples", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Bootstrap resamples (0: no interval).")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.95, show_default=True, help="Interval coverage; 1 - test level.")
@click.option("--permutation", type=click.Choice(["cells", "rows-columns", "systems",
                                                   "inputs"]),
              default="cells", show_default=True,
              help="What the paired permutation test swaps between two measures: each "
                   "cell (Perm-Both), or whole rows then columns (nlpstats 0.0.1).")
@click.option("--n-permutations", type=click.IntRange(min=0), default=1000,
              show_default=True, help="Permutation-test resamples (0: no test, no clusters).")
@click.option("--adjust", type=click.Choice(["holm", "bh", "none"]), default="holm",
              show_default=True, help="Multiplicity adjustment of the tests.")
@click.option("--seed", type=int, default=12345, show_default=True,
              help="Seed of the bootstrap and the permutations.")
@click.option("--output", metavar="DIR", default=None,
              help="Write agreement.parquet and agreement.json into DIR.")
@click.option("--overwrite", is_flag=True, help="Replace outputs overlap agree wrote there.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True, help="What to print on stdout.")
@click.pass_context
def agree_command(ctx: click.Context, scores: str, judgments: str, humans: tuple[str, ...],
                  measures: tuple[str, ...], system_column: str, input_column: str | None,
                  id_column: str | None, group_by: tuple[str, ...],
                  preferences: str | None, levels: str,
                  coefficients: str, epsilon: str | None, resampling: str, n_resamples: int,
                  confidence: float, permutation: str, n_permutations: int, adjust: str,
                  seed: int, output: str | None, overwrite: bool, output_format: str) -> None:
    """Does the metric agree with your raters? Agreement with human judgments.

    Joins RUN's per-example measures (an overlap score output, or any Parquet / CSV / JSON
    Lines table of scores keyed by id) with human judgments by id, and gives per measure,
    judgment column, level (system: system means; input: per input across its systems,
    averaged; global: all examples) and coefficient the value with a seeded bootstrap
    interval (Boot-Both by default), paired permutation tests between measures with the
    clusters of measures not significantly different, the raters' own agreement when a
    judgment column holds several raters (Krippendorff's alpha; each rater against the
    others), and with --group-by each subset with a test of its difference from the rest.
    The verdict comes first.
    """
    from pipeline import api
    from pipeline.agree.tables import summary_text
    from pipeline.cli.explain import escaped_json

    eps = _epsilon(epsilon)
    options = {"levels": tuple(_split((levels,))),
               "coefficients": tuple(_split((coefficients,))), "resampling": resampling,
               "n_resamples": n_resamples, "confidence": confidence,
               "permutation": permutation, "n_permutations": n_permutations,
               "adjust": adjust, "seed": seed, "epsilon": eps}
    try:
        result = api.agree(scores, judgments=judgments, humans=list(humans) or None,
                           measures=_split(measures) or None, system_column=system_column,
                           input_column=input_column, id_column=id_column,
                           group_by=_split(group_by), preferences=preferences,
                           output=output, overwrite=overwrite,
                           **options)
    except PipelineError as err:
        message = " ".join(p.strip() for p in str(err).splitlines() if p.strip())
        click.echo(f"Error: {message}", err=True)
        ctx.exit(err.exit_code)
    if output_format == "json":
        click.echo(escaped_json(result.document))
    else:
        click.echo(summary_text(result.document))
    if output is not None:
        click.echo(f"wrote {output}/agreement.parquet and agreement.json", err=True)
