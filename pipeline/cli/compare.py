"""``overlap compare``: the delta alarm between two runs of ``overlap score``."""

from __future__ import annotations

import json
import math
import unicodedata
from typing import Any

import click

from pipeline import compare as cmp
from pipeline.cli import main
from pipeline.errors import PipelineError

_TEXT_WIDTH = 160


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def safe(text: Any) -> str:
    """``str(text)`` with control and bidirectional-format characters escaped.

    Data (group values, ids, texts, error messages naming them) is printed to a terminal;
    an escape sequence or a right-to-left override in it must not act on the terminal. A
    newline becomes ``\\x0a``, ESC ``\\x1b``, U+202E ``\\u202e``; other characters are kept.
    """
    out = []
    for ch in str(text):
        if unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\u200d":
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def _num(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return format(value, spec)


def _clip(text: str | None) -> str:
    if text is None:
        return "(text not available)"
    flat = safe(" ".join(text.split()))
    return flat if len(flat) <= _TEXT_WIDTH else flat[:_TEXT_WIDTH - 3] + "..."


def _grid(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return [line(header)] + [line(r) for r in rows]


def format_table(doc: dict[str, Any]) -> str:
    """Render a comparison document (``RunComparison.to_document()``) as readable text.

    Data from the runs (paths, group values, ids, texts) is escaped with :func:`safe`.
    """
    s = doc["settings"]
    p = doc["pairing"]
    level = f"{s['confidence']:.0%}"
    key = ", ".join([p["id_column"], *p["group_columns"]])
    out = [
        f"baseline   {safe(doc['baseline']['path'])}  (run {safe(doc['baseline']['run_id'])}, "
        f"{doc['baseline']['n_examples']} examples)",
        f"candidate  {safe(doc['candidate']['path'])}  (run "
        f"{safe(doc['candidate']['run_id'])}, {doc['candidate']['n_examples']} examples)",
        f"signature  {safe(doc['baseline']['signature'])}",
    ]
    if doc["signature_differences"]:
        out.append(f"           candidate differs in {', '.join(doc['signature_differences'])}"
                   f" (allowed): {safe(doc['candidate']['signature'])}")
    out += [
        f"paired     {p['n_paired']} examples on {safe(key)}; {p['n_baseline_only']} only in "
        f"the baseline, {p['n_candidate_only']} only in the candidate",
        f"method     delta = candidate - baseline (of means; of corpus scores for corpus "
        f"measures); {level} paired bootstrap interval ({s['n_bootstrap']} resamples, seed "
        f"{s['seed']}); p: paired approximate randomization; mde: smallest change seen with "
        f"80% power; alarm: interval excludes 0 and |delta| > {s['band']:g}; missing: a "
        f"baseline group absent, or more than {s['max_missing']:.0%} of its examples",
        "",
    ]
    header = ["group", "measure", "n", "baseline", "candidate", "delta", f"{level} interval",
              "p", "mde", "only b/c", "alarm"]

    def state(r: dict[str, Any]) -> str:
        flags = (["ALARM"] if r["alarm"] else []) + (["MISSING"] if r["missing"] else [])
        return " ".join(flags) or "-"

    def name(r: dict[str, Any]) -> str:
        suffix = " (corpus)" if r.get("statistic") == "corpus" else ""
        return f"{r['metric']}.{r['measure']}{suffix}"

    rows = [[safe(r["group"]), name(r), str(r["n_paired"]),
             _num(r["baseline_mean"], ".4f"), _num(r["candidate_mean"], ".4f"),
             _num(r["delta"], "+.4f"),
             f"[{_num(r['ci_low'], '+.4f')}, {_num(r['ci_high'], '+.4f')}]",
             _num(r["p_value"], ".3f"), _num(r.get("mde"), ".4f"),
             f"{r['n_baseline_only']}/{r['n_candidate_only']}", state(r)] for r in doc["rows"]]
    out += _grid(header, rows, right={2, 3, 4, 5, 7, 8, 9})
    alarms = [r for r in doc["rows"] if r["alarm"]]
    missing = list(dict.fromkeys((r["group"], r["n_paired"], r["n_baseline_only"])
                                 for r in doc["rows"] if r["missing"]))
    out.append("")
    if alarms:
        out.append(f"ALARM: {len(alarms)} of {len(doc['rows'])} rows moved beyond the band:")
        out += [f"  {safe(r['group'])} {name(r)}: {r['delta']:+.4f} "
                f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]" for r in alarms]
    if missing:
        out.append(f"MISSING: {len(missing)} group(s) lost baseline examples in the candidate:")
        out += [f"  {safe(g)}: {lost} of {paired + lost} baseline examples missing"
                for g, paired, lost in missing]
    if not alarms and not missing:
        seen = [f"{name(r)} {max(r['mde'], s['band']):.4f}" for r in doc["rows"]
                if r["group"] == "all" and r.get("mde") is not None]
        out.append("no alarm" + (f"; the smallest change it could have seen (80% power, "
                                 f"band included): {', '.join(seen)}" if seen else ""))
    if doc["top"]:
        ranked = doc["top"][0]["measure"]
        keys = [p["id_column"], *p["group_columns"]]
        out += ["", f"{len(doc['top'])} examples that moved most ({ranked}):"]
        lines = _grid(["#", *(safe(k) for k in keys), "baseline", "candidate", "delta"],
                      [[str(i + 1), *(safe(t[k]) for k in keys), _num(t["baseline"], ".4f"),
                        _num(t["candidate"], ".4f"), _num(t["delta"], "+.4f")]
                       for i, t in enumerate(doc["top"])],
                      right={0, len(keys) + 1, len(keys) + 2, len(keys) + 3})
        out.append(lines[0])
        for line, t in zip(lines[1:], doc["top"], strict=True):
            out.append(line)
            if t.get("baseline_prediction") is not None or \
                    t.get("candidate_prediction") is not None:
                out.append(f"      baseline:  {_clip(t.get('baseline_prediction'))}")
                out.append(f"      candidate: {_clip(t.get('candidate_prediction'))}")
    elif s.get("top"):
        out += ["", f"no example's {s['measures'][0]} changed"]
    return "\n".join(out)


@main.command("compare")
@click.argument("baseline_dir")
@click.argument("candidate_dir")
@click.option("--metric", "metrics", multiple=True, metavar="METRIC.MEASURE",
              help="Measure to compare, e.g. rougeL.fmeasure (repeatable or comma-separated). "
                   "Default: every fmeasure present in both runs.")
@click.option("--band", type=float, default=cmp.DEFAULT_BAND, show_default=True,
              help="Tolerated absolute change of a mean score (score units, 0..1); the alarm "
                   "needs |delta| > band.")
@click.option("--confidence", type=float, default=cmp.DEFAULT_CONFIDENCE, show_default=True,
              help="Level of the delta's paired bootstrap interval, in (0, 1).")
@click.option("--n-bootstrap", type=int, default=cmp.DEFAULT_N_BOOTSTRAP, show_default=True,
              help="Bootstrap resamples (and approximate randomization trials).")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=cmp.DEFAULT_SEED,
              show_default=True, help="Seed of the resampling (counter-based, see README).")
@click.option("--max-missing", type=click.FloatRange(0.0, 1.0), default=cmp.DEFAULT_MAX_MISSING,
              show_default=True,
              help="Tolerated fraction of a group's baseline examples absent from the "
                   "candidate; more (or a whole group gone) is the 'missing' alarm.")
@click.option("--top", type=click.IntRange(min=0), default=cmp.DEFAULT_TOP, show_default=True,
              help="List the N examples whose first measure moved most (0: none).")
@click.option("--output", type=str, default=None, metavar="DIR",
              help="Write compare.parquet and compare.json into DIR.")
@click.option("--plot", type=click.Path(dir_okay=False), default=None, metavar="FILE.png",
              help="Write a PNG of the per-example deltas with the mean and its interval.")
@click.option("--allow-signature-mismatch", is_flag=True,
              help="Compare runs scored with different settings (tokenizer, stemmer, metrics, "
                   "case, multi-reference rule).")
@click.option("--format", "output_format", type=click.Choice(["table", "json"]),
              default="table", show_default=True, help="What to print on stdout.")
@click.pass_context
def compare_command(ctx: click.Context, baseline_dir: str, candidate_dir: str,
                    metrics: tuple[str, ...], band: float, confidence: float, n_bootstrap: int,
                    seed: int, max_missing: float, top: int, output: str | None,
                    plot: str | None, allow_signature_mismatch: bool,
                    output_format: str) -> None:
    """Compare CANDIDATE_DIR against BASELINE_DIR (two `overlap score` outputs).

    Pairs examples by id (and group columns), and per measure and group prints the values,
    the delta, its paired bootstrap interval, an approximate randomization p-value and the
    minimal detectable effect. Alarms when an interval excludes 0 and |delta| > --band, in
    either direction, or when a baseline group lost more than --max-missing of its examples.

    Exit codes: 0 no alarm, 1 alarm (change or missing examples; a failed --plot is only a
    warning), 2 bad usage or input (including differing signatures).
    """
    try:
        result = cmp.compare_runs(
            baseline_dir, candidate_dir, measures=_split(metrics) or None, band=band,
            confidence=confidence, n_bootstrap=n_bootstrap, seed=seed, top=top,
            allow_signature_mismatch=allow_signature_mismatch, max_missing=max_missing)
        doc = result.to_document()
        if output:
            from pipeline.io.runs import write_comparison

            written = write_comparison(output, result.to_arrow(), doc)
            click.echo(f"wrote {safe(written[0])} and {safe(written[1])}", err=True)
    except PipelineError as err:
        click.echo(f"Error: {safe(err)}", err=True)
        ctx.exit(err.exit_code)
    for note in result.notes:
        click.echo(f"note: {safe(note)}", err=True)
    if result.signature_differences:
        click.echo(f"warning: signatures differ in {', '.join(result.signature_differences)}; "
                   "compared anyway (--allow-signature-mismatch)", err=True)
    if output_format == "json":
        click.echo(json.dumps(doc, indent=2, allow_nan=False, ensure_ascii=False))
    else:
        click.echo(format_table(doc))
    if plot:
        # after the result is printed and written: a failed plot never hides an alarm
        try:
            from pipeline.plots import plot_deltas

            plot_deltas(result.comparison, plot)
            click.echo(f"wrote {safe(plot)}", err=True)
        except Exception as err:  # noqa: BLE001 - a picture must not change the verdict
            click.echo(f"warning: the plot was not drawn: {safe(err)}", err=True)
    ctx.exit(1 if result.alarm else 0)
