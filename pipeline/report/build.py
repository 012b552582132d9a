"""Assemble the report of a run (and its comparison with a baseline) into one HTML page.

Reads what the run holds (manifest, ``aggregate.parquet``, the examples' score columns) and
follows it: every (metric, measure) of the aggregate gets its table rows and histogram,
whatever metrics the run has. With a baseline, :func:`pipeline.compare.compare_runs` gives
the table, the per-example deltas and the examples that moved most; their texts are read
(:mod:`pipeline.report.texts`) and explained (:func:`pipeline.explanation.explain`) to mark the
matched words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from pipeline.errors import InputError
from pipeline.report.html import esc, facts, histogram_svg, marked_text, num, page, table

_ROUGE = re.compile(r"rouge([1-9]|L|Lsum)")
_SKIP_NOTES = {
    "zero_token_texts": "texts with visible characters produced no token (try --tokenizer "
                        "unicode)",
    "one_line_multi_sentence_texts": "texts have several sentences on one line (rougeLsum "
                                     "then equals rougeL)",
    "truncated_examples": "examples had a text cut at --max-tokens",
    "null_predictions": "predictions were null (scored as empty)",
    "missing_predictions_scored_zero": "reference ids without a prediction were scored 0",
}


def _aggregate(run: Any) -> pd.DataFrame:
    try:
        with run.fs.open_input_file(f"{run.root}/aggregate.parquet") as fh:
            return pq.read_table(fh).to_pandas()
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read {run.path}/aggregate.parquet: {err}") from err


def _measures(agg: pd.DataFrame) -> list[tuple[str, str]]:
    rows = agg[agg["statistic"] == "mean"] if "statistic" in agg else agg
    return list(dict.fromkeys(zip(rows["metric"], rows["measure"], strict=True)))


def _run_section(run: Any, agg: pd.DataFrame,
                 values: dict[tuple[str, str], np.ndarray]) -> list[str]:
    m = run.manifest
    counts = m.get("counts") or {}
    skipped = counts.get("skipped") or {}
    items: list[tuple[str, Any]] = [
        ("run id", run.run_id), ("directory", run.path),
        ("signature", ("html", f'<span class="sig">{esc(run.signature)}</span>')),
        ("started / finished", f"{m.get('started_at', '?')} / {m.get('finished_at', '?')}"),
        ("examples scored", counts.get("examples_scored", run.n_examples)),
        ("prediction / reference rows",
         f"{counts.get('prediction_rows', '?')} / {counts.get('reference_rows', '?')}"),
        ("references per example", counts.get("n_references", "?")),
    ]
    if any(skipped.values()):
        items.append(("left out", ", ".join(f"{k.replace('_', ' ')}: {v}"
                                            for k, v in skipped.items() if v)))
    notes = [f"{counts[k]} {text}" for k, text in _SKIP_NOTES.items() if counts.get(k)]
    if m.get("resumed"):
        notes.append("the run was resumed after an interruption")
    out = [facts(items)]
    if notes:
        out.append("<h3>Notes</h3><ul class=\"notes\">"
                   + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    out += _aggregate_tables(run, agg)
    out.append("<h3>Distribution of per-example values</h3><div class=\"hists\">")
    for (metric, measure), v in values.items():
        mean = float(np.mean(v)) if len(v) else float("nan")
        out.append(histogram_svg(v, label=f"{metric}.{measure}",
                                 marks=[(mean, "#b3261e")] if len(v) else []))
    out.append("</div><p class=\"muted\">Red line: the mean.</p>")
    return out


def _cell(r: Any, *, two_lines: bool = False) -> Any:
    if r is None:
        return ""
    if pd.isna(r["ci_low"]):
        return num(r["mean"])
    if two_lines:  # narrow columns for tables with a column per metric
        return ("html", f"{num(r['mean'])}<br><small>[{num(r['ci_low'])}, "
                        f"{num(r['ci_high'])}]</small>")
    return f"{num(r['mean'])} [{num(r['ci_low'])}, {num(r['ci_high'])}]"


def _aggregate_tables(run: Any, agg: pd.DataFrame) -> list[str]:
    groups = [c for c in run.group_columns if c in agg.columns]
    means = agg[agg["statistic"] == "mean"]
    level = run.config.get("confidence") or 0.95
    out = [f"<h3>Means with {num(level * 100, '.0f')}% bootstrap intervals</h3>"]
    overall = means[means["scope"] == "all"]
    measures = list(dict.fromkeys(overall["measure"]))
    rows = []
    for metric in dict.fromkeys(overall["metric"]):
        here = overall[overall["metric"] == metric].set_index("measure")
        rows.append([metric, int(here["n_examples"].iloc[0]),
                     *(_cell(here.loc[m] if m in here.index else None) for m in measures)])
    out.append(table(["metric", "n", *measures], rows, caption="the whole run"))
    by_group = means[means["scope"] == "group"]
    if groups and not by_group.empty:
        # one measure per metric: fmeasure when the metric has one, else its first; one pass
        # over the rows (a lookup per group and metric, not a frame operation per group)
        measures_of: dict[str, list[str]] = {}
        for metric, measure in zip(by_group["metric"], by_group["measure"], strict=True):
            measures_of.setdefault(metric, [])
            if measure not in measures_of[metric]:
                measures_of[metric].append(measure)
        main = {m: ("fmeasure" if "fmeasure" in ms else ms[0]) for m, ms in measures_of.items()}
        metrics = list(measures_of)
        cells_of: dict[tuple, dict[str, Any]] = {}
        counts: dict[tuple, int] = {}
        records = by_group[[*groups, "metric", "measure", "mean", "ci_low", "ci_high",
                            "n_examples"]].to_dict("records")
        for r in records:
            key = tuple("nan" if isinstance(r[g], float) and np.isnan(r[g]) else r[g]
                        for g in groups)
            counts.setdefault(key, int(r["n_examples"]))
            if r["measure"] == main[r["metric"]]:
                cells_of.setdefault(key, {})[r["metric"]] = r
        rows = [[", ".join(str(v) for v in key), counts[key],
                 *(_cell(cells_of.get(key, {}).get(m), two_lines=True) for m in metrics)]
                for key in counts]
        out.append(table([", ".join(groups), "n", *(f"{m}.{main[m]}" for m in metrics)], rows,
                         caption="by group (every measure of every group is in "
                                 "aggregate.parquet)"))
    rates = agg[agg["statistic"] == "pass_rate"]
    if not rates.empty:
        rows = [["(all)" if r["scope"] == "all" else ", ".join(str(r[g]) for g in groups),
                 f"{r['metric']}.{r['measure']} >= {num(r['threshold'], 'g')}",
                 num(r["mean"], ".1%"), int(r["n_examples"])] for _, r in rates.iterrows()]
        out.append("<h3>Pass rates</h3>")
        out.append(table(["scope", "gate", "pass rate", "n"], rows, left=2))
    return out


def _values(run: Any, measures: Sequence[tuple[str, str]]) -> dict[tuple[str, str], np.ndarray]:
    from pipeline.io.runs import read_examples

    cols = {f"{m}_{x}": (m, x) for m, x in measures if f"{m}_{x}" in run.schema.names}
    frame = read_examples(run, columns=list(cols))
    return {cols[c]: frame[c].to_numpy(dtype=np.float64) for c in cols}


def _compare_section(result: Any) -> list[str]:
    doc = result.to_document()
    s = doc["settings"]
    p = doc["pairing"]
    level = f"{s['confidence']:.0%}"
    out = ["<h2>Against the baseline</h2>", facts([
        ("baseline", f"{doc['baseline']['path']} (run {doc['baseline']['run_id']})"),
        ("paired", f"{p['n_paired']} examples; {p['n_baseline_only']} only in the baseline, "
                   f"{p['n_candidate_only']} only in this run"),
        ("method", f"delta = mean(this run - baseline); {level} paired bootstrap interval "
                   f"({s['n_bootstrap']} resamples, seed {s['seed']}); p: paired approximate "
                   f"randomization; alarm: interval excludes 0 and |delta| > {s['band']:g}"),
        ("verdict", ("html", '<strong class="flag" style="color:#b3261e">ALARM</strong>'
                     if doc["alarm"] else "no alarm")),
    ])]
    rows, classes = [], []
    for r in doc["rows"]:
        rows.append([r["group"], f"{r['metric']}.{r['measure']}", r["n_paired"],
                     num(r["baseline_mean"]), num(r["candidate_mean"]),
                     num(r["delta"], "+.4f"),
                     f"[{num(r['ci_low'], '+.4f')}, {num(r['ci_high'], '+.4f')}]",
                     num(r["p_value"], ".3f"),
                     ("html", '<span class="flag">ALARM</span>') if r["alarm"] else "\u2013"])
        classes.append("alarm" if r["alarm"] else "")
    out.append(table(["group", "measure", "n", "baseline", "this run", "delta",
                      f"{level} interval", "p", "alarm"], rows, left=2, row_classes=classes))
    notes = list(result.notes)
    if notes:
        out.append("<ul class=\"notes\">" + "".join(f"<li>{esc(n)}</li>" for n in notes)
                   + "</ul>")
    out.append("<h3>Distribution of per-example deltas</h3><div class=\"hists\">")
    cmp = result.comparison
    overall = cmp.rows[cmp.rows["group"] == "all"].set_index(["metric", "measure"])
    for measure in cmp.measures:
        delta = cmp.paired[f"delta:{measure}"].to_numpy(dtype=np.float64)
        moved = delta[delta != 0.0]
        metric, _, ms = measure.rpartition(".")
        row = overall.loc[(metric, ms)] if (metric, ms) in overall.index else None
        color = "#b3261e" if row is not None and bool(row["alarm"]) else "#2e7d32"
        marks = [] if row is None else [(float(row["delta"]), color)]
        out.append(histogram_svg(moved, label=f"delta {measure}, {len(moved)} of {len(delta)} "
                                 "moved", symmetric=True, marks=marks))
    out.append("</div><p class=\"muted\">Examples whose score did not change are counted, not "
               "drawn. Grey line: 0; coloured line: the mean delta over all paired examples "
               "(red when it alarms).</p>")
    return out


def _explain_pair(prediction: str | None, references: list[str | None], metric: str,
                  config: dict[str, Any]) -> Any | None:
    from pipeline.explanation import explain, run_settings

    if prediction is None or not references:
        return None
    settings = {**run_settings(config), "metrics": (metric,)}
    return explain(prediction, references, **settings)


def _examples_section(result: Any, base_run: Any, cand_run: Any) -> list[str]:
    from pipeline.report.texts import read_references

    top = result.top
    if top.empty:
        return ["<h3>Examples that moved most</h3><p>No example's score changed.</p>"]
    measure = str(top["measure"].iloc[0])
    metric = measure.rpartition(".")[0]
    key = list(result.comparison.key_columns)
    id_col = key[0]
    out = [f"<h2>Examples that moved most ({esc(measure)})</h2>"]
    try:
        refs = read_references(cand_run, list(dict.fromkeys(top[id_col].tolist())))
        refs_note = None
    except InputError as err:
        refs, refs_note = {}, str(err)
    marking = bool(_ROUGE.fullmatch(metric))
    legend = ('<p class="legend muted">Words matched under ' + esc(metric) + ': '
              '<mark class="base">by the baseline</mark><mark class="cand">by this run</mark>'
              '<mark>by both</mark> (predictions: their words matched in the reference shown; '
              'reference: its words matched by each prediction).</p>') if marking else (
        f'<p class="muted">Words are not marked: {esc(metric)} is not a ROUGE metric.</p>')
    out.append(legend)
    if refs_note:
        out.append(f'<p class="muted">References not shown: {esc(refs_note)}</p>')
    for k, (_, row) in enumerate(top.iterrows(), start=1):
        ident = ", ".join(f"{c} = {row[c]}" for c in key)
        references = refs.get(row[id_col], [])
        base_text, cand_text = row.get("baseline_prediction"), row.get("candidate_prediction")
        base_text = None if pd.isna(base_text) else str(base_text)
        cand_text = None if pd.isna(cand_text) else str(cand_text)
        eb = _explain_pair(base_text, references, metric, base_run.config) if marking else None
        ec = _explain_pair(cand_text, references, metric, cand_run.config) if marking else None
        out.append('<section class="example">')
        out.append(f"<h3>{k}. {esc(ident)}: {esc(measure)} {num(row['baseline'])} \u2192 "
                   f"{num(row['candidate'])} ({num(row['delta'], '+.4f')})</h3>")
        ref_index = 0
        if ec is not None and ec.metrics[metric].reference_index >= 0:
            ref_index = ec.metrics[metric].reference_index
        for side, text, e in (("baseline", base_text, eb), ("this run", cand_text, ec)):
            classes = {}
            if e is not None:
                pair = e.metrics[metric].pairs[ref_index]
                classes = dict.fromkeys(pair.prediction_positions,
                                        "base" if side == "baseline" else "cand")
            spans = e.prediction.spans if e is not None else None
            out.append(f'<div class="label">{esc(side)} prediction</div>'
                       f'<p class="text">{marked_text(text, spans, classes)}</p>')
        if references:
            hit_b = set(eb.metrics[metric].pairs[ref_index].reference_positions) if eb else set()
            hit_c = set(ec.metrics[metric].pairs[ref_index].reference_positions) if ec else set()
            classes = {p: ("" if p in hit_b and p in hit_c else "base" if p in hit_b else "cand")
                       for p in hit_b | hit_c}
            e = ec or eb
            spans = e.references[ref_index].spans if e is not None else None
            which = (f"reference {ref_index + 1} of {len(references)}"
                     + (" (the one this run's score used)" if len(references) > 1 else ""))
            out.append(f'<div class="label">{esc(which)}</div>'
                       f'<p class="text">{marked_text(references[ref_index], spans, classes)}'
                       "</p>")
        out.append("</section>")
    return out


def build_report(run_dir: str, *, baseline: str | None = None, top: int = 10) -> str:
    """Build the HTML report of a run, compared with a baseline when given.

    Args:
        run_dir: a complete ``overlap score`` output.
        baseline: a complete baseline run to compare with (None: no comparison).
        top: how many moved examples to show (with a baseline), >= 0.

    Returns:
        The HTML document (a str).

    Raises:
        InputError: an incomplete or unreadable run.
        SignatureMismatchError: runs scored with different settings.

    """
    from pipeline.io.runs import open_run

    run = open_run(run_dir)
    agg = _aggregate(run)
    measures = _measures(agg)
    values = _values(run, measures)
    made = datetime.now(timezone.utc).isoformat(timespec="seconds")
    body = [f"<h1>overlap report: run {esc(run.run_id)}</h1>",
            f'<p class="muted">Made {esc(made)} by overlap-pipeline '
            f"{esc(run.manifest.get('version', ''))}. Self-contained: no script, nothing "
            "loaded from the network.</p>",
            "<h2>This run</h2>", *_run_section(run, agg, values)]
    if baseline is not None:
        from pipeline.compare import compare_runs

        result = compare_runs(baseline, run_dir, top=top)
        body += _compare_section(result)
        body += _examples_section(result, result.baseline, result.candidate)
    return page(f"overlap report: {run.run_id}", body)


__all__ = ["build_report"]
