"""``overlap compare``: the delta alarm between two runs of ``overlap score``."""

from __future__ import annotations

import math
import os
from typing import Any

import click

from pipeline import compare as cmp
from pipeline.cli import main, results_only_stdout
from pipeline.cli.options import measures_option
from pipeline.errors import PipelineError
from pipeline.printable import safe, safe_json

_TEXT_WIDTH = 160


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


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


def _name(r: dict[str, Any]) -> str:
    suffix = " (corpus)" if r.get("statistic") == "corpus" else ""
    return f"{r['metric']}.{r['measure']}{suffix}"


def alarm_lines(doc: dict[str, Any]) -> list[str]:
    """The verdict, then one line per alarm of ``doc["alarms"]``, in its order."""
    alarms = doc.get("alarms") or []
    if not alarms:
        return ["no alarm"]
    rows = {(r["group"], r["metric"], r["measure"]): r for r in doc["rows"]}
    by_group = {r["group"]: r for r in doc["rows"]}
    both = sum(1 for a in alarms if a["kind"] == "change"
               and rows[(a["group"], a["metric"], a["measure"])].get("drift"))
    out = [f"ALARM: {len(alarms)} alarm{'s' if len(alarms) > 1 else ''} "
           f"({sum(a['kind'] == 'change' for a in alarms)} change"
           + (f", {both} of them also drifting" if both else "")
           + f", {sum(a['kind'] == 'drift' for a in alarms)} drift, "
           f"{sum(a['kind'] == 'missing' for a in alarms)} missing)"]
    for a in alarms:
        if a["kind"] == "missing":
            r = by_group[a["group"]]
            lost, paired = r["n_baseline_only"], r["n_paired"]
            out.append(f"  missing  {safe(a['group'])}: {lost} of {paired + lost} baseline "
                       "examples have no candidate")
            continue
        r = rows[(a["group"], a["metric"], a["measure"])]
        if a["kind"] == "change":
            tail = r.get("p_tail")
            out.append(f"  change   {safe(a['group'])} {_name(r)}: {r['delta']:+.4f} "
                       f"[{_num(r['ci_low'], '+.4f')}, {_num(r['ci_high'], '+.4f')}], "
                       f"p adjusted {_num(r.get('p_adjusted'), '.3g')}"
                       + (" (from the normal tail)" if tail is not None else "")
                       + f", beyond the {r.get('band_source', 'static')} band "
                       f"{cmp.band_text(r['band'])}")
        else:
            out.append(f"  drift    {safe(a['group'])} {_name(r)}: drifting "
                       f"{'up' if r['drift_statistic'] > 0 else 'down'} over the last nights "
                       f"(chart {r['drift_statistic']:+.2f}, p adjusted "
                       f"{_num(r.get('drift_p'), '.3g')}); tonight "
                       f"{_num(r['candidate_mean'], '.4f')}")
    return out


def _header(doc: dict[str, Any]) -> list[str]:
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
    history = doc.get("history")
    if history:
        nights = history["nights"]
        span = f", {nights[0]['run_date']} to {nights[-1]['run_date']}" if nights else ""
        out.append(f"history    {safe(history['source'])}: {len(nights)} "
                   f"night{'' if len(nights) == 1 else 's'} (window: the last "
                   f"{history['window']}){span}")
    out += [
        f"paired     {p['n_paired']} examples on {safe(key)}; {p['n_baseline_only']} only in "
        f"the baseline, {p['n_candidate_only']} only in the candidate",
        f"method     delta = candidate - baseline (of means; of corpus scores for corpus "
        f"measures); {level} paired bootstrap interval ({s['n_bootstrap']} resamples, seed "
        f"{s['seed']}); p: paired approximate randomization ({s.get('n_trials')} trials), "
        f"adjusted across the {len(doc['rows'])} rows ({s.get('adjust')}); alarm: adjusted "
        f"p < {1 - s['confidence']:.2g} and |delta| > band; missing: a baseline group absent, "
        f"or more than {s['max_missing']:.0%} of its examples",
    ]
    return out


def _table(doc: dict[str, Any]) -> list[str]:
    level = f"{doc['settings']['confidence']:.0%}"
    header = ["group", "measure", "n", "baseline", "candidate", "delta", f"{level} interval",
              "p", "p adj", "band", "mde", "only b/c", "alarm"]

    def state(r: dict[str, Any]) -> str:
        flags = ((["ALARM"] if r["alarm"] else []) + (["MISSING"] if r["missing"] else [])
                 + (["DRIFT"] if r.get("drift") else []))
        return " ".join(flags) or "-"

    source = {"static": "", "learned": " L", "floor": " F"}
    rows = [[safe(r["group"]), _name(r), str(r["n_paired"]),
             _num(r["baseline_mean"], ".4f"), _num(r["candidate_mean"], ".4f"),
             _num(r["delta"], "+.4f"),
             f"[{_num(r['ci_low'], '+.4f')}, {_num(r['ci_high'], '+.4f')}]",
             cmp.p_text(r["p_value"], r.get("p_tail")), _num(r.get("p_adjusted"), ".3g"),
             cmp.band_text(r.get("band")) + source.get(r.get("band_source") or "", ""),
             _num(r.get("mde"), ".4f"),
             f"{r['n_baseline_only']}/{r['n_candidate_only']}", state(r)] for r in doc["rows"]]
    legend = ["band: L learned from the history, F its floor, else static"]
    if any(r.get("p_tail") is not None for r in doc["rows"]):
        legend.append(f"p: ~ the normal-tail estimate where no randomization trial was as "
                      f"extreme (the trials alone give p <= "
                      f"{1 / (doc['settings'].get('n_trials', 1000) + 1):.3g}); p adj is "
                      "adjusted from the p shown")
    return _grid(header, rows, right={2, 3, 4, 5, 7, 8, 9, 10, 11}) + legend


def _moved(doc: dict[str, Any]) -> list[str]:
    from pipeline.compare.textdiff import render_word_diff, word_diff

    s = doc["settings"]
    p = doc["pairing"]
    out: list[str] = []
    if doc["top"]:
        ranked = doc["top"][0]["measure"]
        keys = [p["id_column"], *p["group_columns"]]
        out += ["", f"{len(doc['top'])} examples that moved most ({ranked}); "
                    "[-baseline only-] {+candidate only+}:"]
        lines = _grid(["#", *(safe(k) for k in keys), "baseline", "candidate", "delta"],
                      [[str(i + 1), *(safe(t[k]) for k in keys), _num(t["baseline"], ".4f"),
                        _num(t["candidate"], ".4f"), _num(t["delta"], "+.4f")]
                       for i, t in enumerate(doc["top"])],
                      right={0, len(keys) + 1, len(keys) + 2, len(keys) + 3})
        out.append(lines[0])
        for line, t in zip(lines[1:], doc["top"], strict=True):
            out.append(line)
            a, b = t.get("baseline_prediction"), t.get("candidate_prediction")
            if a is not None and b is not None:
                out.append(f"      {safe(render_word_diff(word_diff(a, b)))}")
            elif a is not None or b is not None:
                out.append(f"      baseline:  {_clip(a)}")
                out.append(f"      candidate: {_clip(b)}")
    elif s.get("top"):
        out += ["", f"no example's {s['measures'][0]} changed"]
    return out


def format_table(doc: dict[str, Any], *, mode: str = "table") -> str:
    """Render a comparison document (``RunComparison.to_document()``) as readable text.

    The verdict and the alarms first (one line each), the band used per measure, then the
    header; ``mode="table"`` adds the full table of rows, ``"summary"`` leaves it out,
    ``"alarms"`` prints the verdict and alarms only. Then the examples that moved most, each
    with a word diff of the two predictions. Data from the runs (paths, group values, ids,
    texts) is escaped with :func:`safe`.
    """
    out = alarm_lines(doc)
    if mode == "alarms":
        return "\n".join(out)
    out += list(doc.get("bands") or [])
    out += ["", *_header(doc)]
    if mode == "table":
        out += ["", *_table(doc)]
    if not doc.get("alarms"):
        s = doc["settings"]
        seen = [f"{_name(r)} {cmp.band_text(max(r['mde'], r.get('band', s['band'])))}"
                for r in doc["rows"] if r["group"] == "all" and r.get("mde") is not None]
        if seen:
            out += ["", "the smallest change it could have seen (80% power, band included): "
                    + ", ".join(seen)]
    out += _moved(doc)
    return "\n".join(out)


def parse_bands(values: tuple[str, ...]) -> tuple[float | None, dict[str, float]]:
    """Parse ``--band`` values.

    A bare number (a fraction of every measure's scale) and/or ``METRIC.MEASURE=VALUE``
    items (in that measure's units), comma-separated or repeated. A measure (or the bare
    floor) given twice with different values is refused, never settled by the last one;
    the same value twice is one request.

    Raises:
        click.BadParameter: a value that is neither; a measure given two different values.

    """
    default: float | None = None
    per: dict[str, float] = {}
    for item in _split(values):
        name, sep, value = item.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            raise click.BadParameter(f"{item!r} is not a number nor METRIC.MEASURE=NUMBER",
                                     param_hint="--band") from None
        name = name.strip()
        before = per.get(name) if sep else default
        if before is not None and before != number:
            what = name if sep else "the floor of every measure"
            raise click.BadParameter(f"{what} is given twice ({before:g} and {number:g}); "
                                     "give it once", param_hint="--band")
        if sep:
            per[name] = number
        else:
            default = number
    return default, per


_COMPARE_EPILOG = """\b
Examples:
  overlap compare runs/realsumm runs/shorter
  overlap compare runs/base runs/cand --metrics rougeL.fmeasure,bleu.score --format table
  overlap compare BASE CAND --history /data/overlap --output cmp/ --plot cmp/delta.png

\b
Details: docs/compare.md (statistics, bands, drift, outputs); nightly use: docs/nightly.md."""


@main.command("compare", epilog=_COMPARE_EPILOG)
@click.argument("baseline_dir")
@click.argument("candidate_dir")
@measures_option(what="Measures to compare, e.g. rougeL.fmeasure,bleu.score (repeatable "
                      "or comma-separated).  [default: the primary measure of every metric "
                      "in both runs]")
@click.option("--band", "band_values", multiple=True, metavar="[METRIC.MEASURE=]VALUE",
              help="The band's floor: a bare number is a fraction of each measure's full "
                   "scale (0.01: 0.01 for ROUGE on 0..1, 1.0 for BLEU on 0..100); "
                   "METRIC.MEASURE=VALUE sets one measure's, in its units (repeatable). "
                   "With --history the band is learned and never below it.  [default: 0.01]")
@click.option("--history", metavar="ROOT", default=None,
              help="Learn each row's band and chart drift from the complete runs under this "
                   "nightly ROOT (run_date=/run_id= layout) dated on or before the candidate.")
@click.option("--history-window", type=click.IntRange(min=1),
              default=cmp.DEFAULT_HISTORY_WINDOW, show_default=True, metavar="N",
              help="Use the last N nights of the history.")
@click.option("--reference-run", metavar="RUN_DIR", default=None,
              help="Pin the drift chart's reference level to this run's values (default: the "
                   "history's own level). Needs --history.")
@click.option("--adjust", type=click.Choice(list(cmp.ADJUST_METHODS)),
              default=cmp.DEFAULT_ADJUST, show_default=True,
              help="Adjust p-values across all rows: holm (any false alarm at most "
                   "1 - confidence), bh (false discovery rate) or none.")
@click.option("--confidence", type=float, default=cmp.DEFAULT_CONFIDENCE, show_default=True,
              help="Level of the delta's paired bootstrap interval, in (0, 1); alarms need an "
                   "adjusted p below 1 - confidence.")
@click.option("--n-bootstrap", type=int, default=cmp.DEFAULT_N_BOOTSTRAP, show_default=True,
              help="Bootstrap resamples (and at least as many approximate randomization "
                   "trials).")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=cmp.DEFAULT_SEED,
              show_default=True,
              help="Seed of the resampling (counter-based: see docs/compare.md).")
@click.option("--max-missing", type=click.FloatRange(0.0, 1.0), default=cmp.DEFAULT_MAX_MISSING,
              show_default=True,
              help="Tolerated fraction of a group's baseline examples absent from the "
                   "candidate; more (or a whole group gone) is the 'missing' alarm.")
@click.option("--top", type=click.IntRange(min=0), default=cmp.DEFAULT_TOP, show_default=True,
              help="List the N examples whose first measure moved most (0: none).")
@click.option("--output", type=str, default=None, metavar="DIR",
              help="Write compare.parquet and compare.json into DIR.")
@click.option("--plot", type=str, default=None, metavar="FILE.png",
              help="Write a PNG of the per-example deltas with the mean and its interval "
                   "(a path, or a URI: drawn here, then uploaded).")
@click.option("--allow-signature-mismatch", is_flag=True,
              help="Compare runs scored with different settings for a compared measure "
                   "(tokenizer, stemmer, case, multi-reference rule...).")
@click.option("--engine", type=click.Choice(["auto", "local", "ray"]), default="auto",
              show_default=True,
              help="Where the runs are paired and tested, partition by partition: auto "
                   "(in-process on every CPU; Ray whenever an address is set or Ray is "
                   "running in the process), ray (local instance or --address) or local.")
@click.option("--address", help="Ray cluster address (also RAY_ADDRESS).")
@click.option("--scratch", metavar="URI", default=None,
              help="Directory for the comparison's temporary files on a cluster, on storage "
                   "every node reads (deleted at the end).  [default: a hidden directory "
                   "beside --output, or beside CANDIDATE_DIR without one]")
@click.option("--allow-local-paths", is_flag=True,
              help="With --address, accept local paths (runs, --output, --scratch): only for "
                   "a single-host cluster or a disk mounted at one path on every node.")
@click.option("--format", "output_format",
              type=click.Choice(["summary", "table", "alarms", "json"]), default="summary",
              show_default=True,
              help="stdout: summary (verdict, one line per alarm, header, moved examples), "
                   "table (the same with every row), alarms (verdict and alarms only), json "
                   "(the compare.json document).")
@click.pass_context
def compare_command(ctx: click.Context, baseline_dir: str, candidate_dir: str,
                    metrics: tuple[str, ...], band_values: tuple[str, ...],
                    history: str | None, history_window: int, reference_run: str | None,
                    adjust: str, confidence: float, n_bootstrap: int,
                    seed: int, max_missing: float, top: int, output: str | None,
                    plot: str | None, allow_signature_mismatch: bool,
                    engine: str, address: str | None, scratch: str | None,
                    allow_local_paths: bool, output_format: str) -> None:
    """Tell whether a run moved against a baseline beyond noise.

    BASELINE_DIR and CANDIDATE_DIR are two `overlap score` outputs. Pairs examples by id
    (and group columns), and per measure and group computes the values, the delta, its
    paired bootstrap interval, an approximate randomization p-value adjusted across all rows
    (--adjust) and the minimal detectable effect. A change alarms when the adjusted p < 1 -
    confidence and |delta| > the row's band (learned from --history when it has enough
    nights, never below --band); a drift alarms when the history's control chart passes its
    limit; a group that lost more than --max-missing of its baseline examples alarms as
    missing. The verdict and alarms are printed first.

    Exit codes: 0 no alarm, 1 alarm (change, drift or missing examples; a failed --plot is
    only a warning), 2 bad usage or input (including differing signatures).
    """
    from pipeline import api

    band, bands = parse_bands(band_values)
    try:
        if plot and "://" not in plot:
            from pipeline.plots import check_plot_output

            check_plot_output(plot)
        if output:
            from pipeline.io.runs import check_comparison_output

            check_comparison_output(output)
        with results_only_stdout():  # Ray's messages never mix with the result
            result = api.compare(
                baseline_dir, candidate_dir, output=output, measures=_split(metrics) or None,
                band=band, bands=bands, confidence=confidence, n_bootstrap=n_bootstrap, seed=seed,
                top=top, allow_signature_mismatch=allow_signature_mismatch,
                max_missing=max_missing, adjust=adjust, history=history,
                history_window=history_window, reference_run=reference_run, engine=engine,
                address=address, scratch=scratch, allow_local_paths=allow_local_paths)
        doc = result.to_document()
        if output:
            click.echo(f"wrote {safe(output.rstrip('/'))}/compare.parquet and "
                       f"{safe(output.rstrip('/'))}/compare.json", err=True)
    except PipelineError as err:
        click.echo(f"Error: {safe(err)}", err=True)
        ctx.exit(err.exit_code)
    for note in result.notes:
        click.echo(f"note: {safe(note)}", err=True)
    base, cand = doc.get("baseline") or {}, doc.get("candidate") or {}
    if base.get("run_id") is not None and base.get("run_id") == cand.get("run_id") \
            and _same_place(base.get("path"), cand.get("path")):  # a fixed RUN_ID is no hint
        click.echo(f"note: both sides are the same run (run id {safe(base['run_id'])})",
                   err=True)
    if result.signature_differences:
        click.echo(f"warning: signatures differ in {', '.join(result.signature_differences)}; "
                   "compared anyway (--allow-signature-mismatch)", err=True)
    if output_format == "json":
        click.echo(safe_json(doc))
    else:
        click.echo(format_table(doc, mode=output_format))
    if plot:
        # after the result is printed and written: a failed plot never hides an alarm
        try:
            api.draw_delta_plot(result.comparison, plot)  # a URI: drawn here, uploaded
            click.echo(f"wrote {safe(plot)}", err=True)
        except Exception as err:  # noqa: BLE001 - a picture must not change the verdict
            click.echo(f"warning: the plot was not drawn: {safe(err)}", err=True)
    ctx.exit(1 if result.alarm else 0)


def _same_place(a: str | None, b: str | None) -> bool:
    """True when two run paths name one directory (local paths resolved, URIs as written)."""
    if a is None or b is None:
        return False
    if "://" in a or "://" in b:
        return a.rstrip("/") == b.rstrip("/")
    return os.path.realpath(a) == os.path.realpath(b)
