"""Assemble the report of a run (and its comparison with a baseline) into one HTML page.

Reads what the run holds (manifest, ``aggregate.parquet``, the examples' score columns) and
follows it: every (metric, measure) of the aggregate gets its table rows and histogram,
whatever metrics the run has. With a baseline, :func:`pipeline.compare.compare_runs` gives
the table, the per-example deltas and the examples that moved most; their texts are read
(:mod:`pipeline.report.texts`) and explained (:func:`pipeline.explanation.explain`, the
metric's family's own explanation) to mark the matched units.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from pipeline.compare.alarms import band_text, p_text
from pipeline.errors import ConfigError, InputError
from pipeline.metrics.registry import data_notes
from pipeline.report.html import (
    esc,
    facts,
    histogram_svg,
    marked_text,
    marked_tokens,
    num,
    page,
    table,
    trend_svg,
    word_diff_html,
)

# Tables of a report with more groups show this many rows (the files hold them all).
MAX_GROUP_ROWS = 500
_SKIP_NOTES = {  # (one, several): the words agree with the count
    "truncated_examples": ("example had a text cut at --max-tokens",
                           "examples had a text cut at --max-tokens"),
    "null_predictions": ("prediction was null (scored as empty)",
                         "predictions were null (scored as empty)"),
    "missing_predictions_scored_zero": ("reference id without a prediction was scored 0",
                                        "reference ids without a prediction were scored 0"),
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


def _warnings_section(run: Any) -> list[str]:
    """The run's silent-zero notes (``DataNote.loud``) in a box at the top of the report.

    E.g. non-Latin texts with no ROUGE token, Chinese under BLEU's ``13a``: their scores are
    0 for a reason that is not the texts' quality, said where a reader looks first (as
    ``overlap score`` prints them first); language names scored with the fallback tokenizer
    (a typo of a language) in a box of their own. Empty when the run has none.
    """
    m = run.manifest
    counts, config = m.get("counts") or {}, m.get("config") or {}
    from pipeline.metrics.rouge.languages import fallback_notes

    loud = [note.text(counts[note.key], config) for note in data_notes()
            if note.loud and counts.get(note.key)]
    out = []
    if loud:
        out.append('<div class="verdict alarm"><strong>Scores of 0 that say nothing about '
                   "the texts</strong><ul>" + "".join(f"<li>{esc(n)}</li>" for n in loud)
                   + "</ul></div>")
    fallback = fallback_notes(config, counts)
    if fallback:
        out.append('<div class="verdict alarm"><strong>Languages scored with the fallback '
                   "tokenizer</strong><ul>" + "".join(f"<li>{esc(n)}</li>" for n in fallback)
                   + "</ul></div>")
    return out


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
    notes = [note.text(counts[note.key], m.get("config") or {}) for note in data_notes()
             if counts.get(note.key) and not note.loud]  # the loud ones: _warnings_section
    notes += [f"{counts[k]} {one if counts[k] == 1 else many}"
              for k, (one, many) in _SKIP_NOTES.items() if counts.get(k)]
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
        shown = list(counts)[:MAX_GROUP_ROWS]
        rows = [[", ".join(str(v) for v in key), counts[key],
                 *(_cell(cells_of.get(key, {}).get(m), two_lines=True) for m in metrics)]
                for key in shown]
        left = len(counts) - len(shown)
        out.append(table([", ".join(groups), "n", *(f"{m}.{main[m]}" for m in metrics)], rows,
                         caption="by group (every measure of every group is in "
                                 "aggregate.parquet)" + (f"; the first {len(shown)} of "
                                                         f"{len(counts)} groups shown"
                                                         if left else "")))
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


def _verdict_section(doc: dict[str, Any]) -> list[str]:
    """The verdict and one line per alarm, first in the page (the same as compare's)."""
    alarms = doc.get("alarms") or []
    rows = {(r["group"], r["metric"], r["measure"]): r for r in doc["rows"]}
    by_group = {r["group"]: r for r in doc["rows"]}
    items = []
    for a in alarms:
        if a["kind"] == "missing":
            r = by_group.get(a["group"], {})
            lost, paired = r.get("n_baseline_only", 0), r.get("n_paired", 0)
            items.append(f"missing: {a['group']}: {lost} of {lost + paired} baseline examples "
                         "have no candidate")
            continue
        r = rows.get((a["group"], a["metric"], a["measure"]), {})
        name = f"{a['group']} {a['metric']}.{a['measure']}"
        if a["kind"] == "change":
            tail = " (from the normal tail)" if r.get("p_tail") is not None else ""
            items.append(f"change: {name}: {num(r.get('delta'), '+.4f')}, p adjusted "
                         f"{num(r.get('p_adjusted'), '.3g')}{tail}, beyond the "
                         f"{r.get('band_source', 'static')} band {band_text(r.get('band'))}")
        else:
            items.append(f"drift: {name}: the control chart is beyond its limit (p adjusted "
                         f"{num(r.get('drift_p'), '.3g')})")
    head = (f'<strong class="flag" style="color:#b3261e">ALARM</strong>: {len(alarms)} '
            f"alarm{'s' if len(alarms) != 1 else ''}" if alarms else "<strong>no alarm</strong>")
    out = [f'<div class="verdict{" alarm" if alarms else ""}"><p>{head} (candidate '
           f"{esc(doc['candidate']['run_id'])} against baseline "
           f"{esc(doc['baseline']['run_id'])})</p>"]
    if items:
        out.append("<ul>" + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>")
    bands = doc.get("bands") or []
    if bands:
        out.append('<p class="muted">' + "<br>".join(esc(b) for b in bands) + "</p>")
    out.append("</div>")
    return out


TREND_GROUPS = ("alarmed", "all")


def _trend_section(result: Any, doc: dict[str, Any], *,
                   trend_groups: str = "alarmed") -> list[str]:
    """Per measure, the nightly values with tonight's band and the alarms marked.

    One panel per measure for the overall mean, then one per group that alarmed tonight
    (``trend_groups="alarmed"``) or per group (``"all"``). Red marks: the nights whose
    comparison (``ROOT/compare/run_date=D/run_id=ID/compare.json``) alarmed on that group
    and measure (on the overall panel: on any group), and tonight's alarms. Nights of
    tonight's date (earlier attempts of a retried night) are left out.
    """
    history = result.history
    if history is None or not history.nights:
        return []
    from pipeline.compare.bands import MIN_NIGHTS
    from pipeline.compare.history import History, Night, run_date_of, run_values

    today = run_date_of(result.candidate)
    nights = [n for n in history.nights if today is None or n.run_date < today]
    if not nights:
        return []
    history = History(history.source, tuple(nights), history.window, history.notes)
    alarms = [a for a in doc.get("alarms") or [] if isinstance(a, dict)]
    alarmed = {a.get("group") for a in alarms}
    rows = [r for r in doc["rows"] if r["group"] == "all"]
    rows += [r for r in doc["rows"] if r["group"] != "all"
             and (trend_groups == "all" or r["group"] in alarmed)]
    keys = pd.DataFrame([{"group": r["group"], "metric": r["metric"],
                          "measure": r["measure"], "statistic": r["statistic"]}
                         for r in rows])
    tonight = History("candidate", (Night("", "", "", run_values(result.candidate)),), 1)
    series = np.concatenate([history.series(keys), tonight.series(keys)], axis=1)
    dates = [n.run_date for n in history.nights] + ["tonight"]
    past, unread = _past_alarms(history)

    def kinds(found: list[dict[str, Any]], group: str, name: str) -> list[str]:
        return [str(a.get("kind")) for a in found
                if (group == "all" or a.get("group") == group)
                and (a.get("metric") is None or f"{a.get('metric')}.{a.get('measure')}" == name)]

    out = ["<h2>Nightly trend</h2>", '<div class="hists">']
    for k, r in enumerate(rows):
        name = f"{r['metric']}.{r['measure']}"
        marks = [(i, kind) for i, n in enumerate(history.nights)
                 for kind in kinds(past.get((n.run_date, n.run_id), []), r["group"], name)[:1]]
        marks += [(len(dates) - 1, kind) for kind in kinds(alarms, r["group"], name)[:1]]
        ref = None
        if r.get("drift_statistic") is not None:
            first = series[k, :-1][np.isfinite(series[k, :-1])][:MIN_NIGHTS]
            ref = float(np.median(first)) if first.size else None
        where = "overall" if r["group"] == "all" else r["group"]
        out.append(trend_svg(dates, series[k], label=f"{where} {name}: {len(dates) - 1} "
                             f"nights and tonight; band {r.get('band_source')} "
                             f"{num(r.get('band'), '.4g')}",
                             band=r.get("band"), level=ref, alarms=marks,
                             baseline=r.get("baseline_mean")))
    out.append('</div><p class="muted">Blue line: the mean of every night (from each run\'s '
               "aggregate.parquet), overall and for each group that alarmed tonight; grey "
               "strip at tonight: the band around the baseline's value (a change beyond it, "
               "and significant, alarms; cut at the chart's edge, marked by an arrow, when "
               "wider than the nights' range); dashed line: the drift chart's reference "
               "level (the median of the window's first nights); red points: nights that "
               "alarmed (C change, D drift, M missing; on the overall chart, on any group; "
               "earlier nights from their compare.json under ROOT/compare). A step is one "
               "jump out of the strip; a drift is a slope away from the dashed line; noise "
               "stays around it.</p>")
    if unread:
        out.append('<p class="muted">' + "<br>".join(esc(n) for n in unread) + "</p>")
    return out


def _past_alarms(history: Any) -> tuple[dict[tuple[str, str], list[dict[str, Any]]],
                                       list[str]]:
    """Alarms of earlier nights and notes on documents left out (see ``night_alarms``)."""
    from pipeline.compare.history import night_alarms

    return night_alarms(history)


def _compare_section(result: Any, doc: dict[str, Any]) -> list[str]:
    s = doc["settings"]
    p = doc["pairing"]
    level = f"{s['confidence']:.0%}"
    out = ["<h2>Against the baseline</h2>", facts([
        ("baseline", f"{doc['baseline']['path']} (run {doc['baseline']['run_id']})"),
        ("paired", f"{p['n_paired']} examples; {p['n_baseline_only']} only in the baseline, "
                   f"{p['n_candidate_only']} only in this run"),
        ("method", f"delta = mean(this run - baseline); {level} paired bootstrap interval "
                   f"({s['n_bootstrap']} resamples, seed {s['seed']}); p: paired approximate "
                   f"randomization, adjusted across the rows ({s.get('adjust', 'none')}); "
                   "alarm: adjusted p < 1 - confidence and |delta| > the row's band"),
        ("verdict", ("html", '<strong class="flag" style="color:#b3261e">ALARM</strong>'
                     if doc["alarm"] else "no alarm")),
    ])]
    rows, classes = [], []
    every = doc["rows"]
    picked = [r for r in every if r["group"] == "all" or r["alarm"] or r.get("missing")
              or r.get("drift")]
    if len(every) <= MAX_GROUP_ROWS:
        picked = every
    else:
        seen = {id(r) for r in picked}
        picked += [r for r in every if id(r) not in seen][:max(MAX_GROUP_ROWS - len(picked), 0)]
        order = {id(r): i for i, r in enumerate(every)}
        picked.sort(key=lambda r: order[id(r)])
    for r in picked:
        flags = ((["ALARM"] if r["alarm"] else []) + (["MISSING"] if r.get("missing") else [])
                 + (["DRIFT"] if r.get("drift") else []))
        group = esc(r["group"]).replace("=", "=<wbr>").replace(",", ",<wbr>")
        rows.append([("html", group), f"{r['metric']}.{r['measure']}", r["n_paired"],
                     num(r["baseline_mean"]), num(r["candidate_mean"]),
                     num(r["delta"], "+.4f"),
                     f"[{num(r['ci_low'], '+.4f')}, {num(r['ci_high'], '+.4f')}]",
                     p_text(r["p_value"], r.get("p_tail")), num(r.get("p_adjusted"), ".3g"),
                     f"{band_text(r.get('band'))} {r.get('band_source', '')}",
                     ("html", f'<span class="flag">{" ".join(flags)}</span>') if flags
                     else "\u2013"])
        classes.append("alarm" if flags else "")
    out.append(table(["group", "measure", "n", "baseline", "this run", "delta",
                      f"{level} interval", "p", "p adj", "band", "alarm"], rows, left=2,
                     row_classes=classes,
                     caption=None if len(picked) == len(every) else
                     f"{len(picked)} of {len(every)} rows: the overall ones, every alarming "
                     "one, then the first groups; every row is in compare.parquet"))
    if any(r.get("p_tail") is not None for r in picked):
        out.append('<p class="muted">p: ~ marks the normal-tail estimate where no '
                   "randomization trial was as extreme (the trials alone give p &le; "
                   f"{num(1 / (s.get('n_trials', s['n_bootstrap']) + 1), '.3g')}); p adj is "
                   "adjusted from the p shown.</p>")
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
                  config: dict[str, Any], *, language: Any = None) -> Any | None:
    """The explanation of ``metric`` (its family's own) under the run's settings, or None.

    ``language``: the example's own language where the run read it from a column
    (``--language column:COL``, :func:`pipeline.report.texts.example_languages`).
    None when a text is missing, the metric's family has no explanation, or such a run has
    no language for the example.
    """
    from pipeline.explanation import explain, run_settings, without_unread
    from pipeline.metrics.registry import family_of
    from pipeline.metrics.rouge.languages import language_column

    explained = getattr(family_of(metric), "explainer", None) is not None
    if prediction is None or not references or not explained:
        return None
    settings = {**run_settings(config), "metrics": (metric,)}
    if language_column(settings.get("language")) is not None:
        if not language:
            return None
        settings["language"] = language
    return explain(prediction, references, **without_unread(settings))


def _tokens_html(label: str, tokens: Any, classes: dict[int, str],
                 explanation: Any = None) -> str:
    """Per-language tokens (``--language``) as compared, quoted, the matched ones marked.

    Under ``--language auto`` the label says the language detected for the example (from
    ``explanation``, the side's :class:`pipeline.explanation.Explanation`).
    """
    from pipeline.explanation import said_language

    detected = explanation.settings.get("detected_language") if explanation else None
    language = f", language {said_language(detected)} (detected)" if detected else ""
    return (f'<div class="label">{esc(label)}: {len(tokens.tokens)} tokens as compared '
            f"(quoted){esc(language)}</div>"
            f'<p class="tokens">{marked_tokens(tokens.tokens, classes)}</p>')


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
    from pipeline.metrics.registry import family_of

    marking = getattr(family_of(metric), "explainer", None) is not None
    ids = list(dict.fromkeys(top[id_col].tolist()))
    languages = {"baseline": _languages(base_run, ids, marking),
                 "this run": _languages(cand_run, ids, marking)}
    legend = ('<p class="legend muted">Words matched under ' + esc(metric) + ': '
              '<mark class="base">by the baseline</mark><mark class="cand">by this run</mark>'
              '<mark>by both</mark> (predictions: their units matched in the reference shown; '
              'reference: its units matched by each prediction; see docs/explain.md for '
              'what each metric marks).</p>') if marking else (
        f'<p class="muted">Words are not marked: {esc(metric)}\'s family has no '
        'explanation.</p>')
    out.append(legend)
    if refs_note:
        out.append(f'<p class="muted">References not shown: {esc(refs_note)}</p>')
    for k, (_, row) in enumerate(top.iterrows(), start=1):
        ident = ", ".join(f"{c} = {row[c]}" for c in key)
        references = refs.get(row[id_col], [])
        base_text, cand_text = row.get("baseline_prediction"), row.get("candidate_prediction")
        base_text = None if pd.isna(base_text) else str(base_text)
        cand_text = None if pd.isna(cand_text) else str(cand_text)
        eb = _explain_pair(base_text, references, metric, base_run.config,
                           language=languages["baseline"].get(row[id_col])) if marking else None
        ec = _explain_pair(cand_text, references, metric, cand_run.config,
                           language=languages["this run"].get(row[id_col])) if marking else None
        out.append('<section class="example">')
        out.append(f"<h3>{k}. {esc(ident)}: {esc(measure)} {num(row['baseline'])} \u2192 "
                   f"{num(row['candidate'])} ({num(row['delta'], '+.4f')})</h3>")
        if base_text is not None and cand_text is not None:
            from pipeline.compare.textdiff import word_diff

            out.append('<div class="label">where the predictions differ (word diff: '
                       '<del>baseline only</del> <ins>this run only</ins>)</div>'
                       f'<p class="diff">{word_diff_html(word_diff(base_text, cand_text))}</p>')
        ref_index = 0
        if ec is not None and ec.metrics[metric].reference_index >= 0:
            ref_index = ec.metrics[metric].reference_index
        mb = eb.metrics[metric] if eb is not None else None
        mc = ec.metrics[metric] if ec is not None else None
        pair_b = mb.pair(ref_index) if mb is not None else None
        pair_c = mc.pair(ref_index) if mc is not None else None
        for side, text, m, pair in (("baseline", base_text, mb, pair_b),
                                    ("this run", cand_text, mc, pair_c)):
            classes = {}
            if pair is not None:
                classes = dict.fromkeys(pair.prediction_positions,
                                        "base" if side == "baseline" else "cand")
            spans = m.prediction.spans if m is not None else None
            out.append(f'<div class="label">{esc(side)} prediction</div>'
                       f'<p class="text">{marked_text(text, spans, classes)}</p>')
            if m is not None and m.view.startswith("xlsum"):  # tokens not in the text
                out.append(_tokens_html(f"{side} prediction", m.prediction, classes,
                                        eb if side == "baseline" else ec))
        if references:
            hit_b = set(pair_b.reference_positions) if pair_b is not None else set()
            hit_c = set(pair_c.reference_positions) if pair_c is not None else set()
            classes = {p: ("" if p in hit_b and p in hit_c else "base" if p in hit_b else "cand")
                       for p in hit_b | hit_c}
            m = mc or mb
            spans = m.references[ref_index].spans if m is not None else None
            which = (f"reference {ref_index + 1} of {len(references)}"
                     + (" (the one this run's score used)" if len(references) > 1 else ""))
            out.append(f'<div class="label">{esc(which)}</div>'
                       f'<p class="text">{marked_text(references[ref_index], spans, classes)}'
                       "</p>")
            if m is not None and m.view.startswith("xlsum"):
                out.append(_tokens_html(which, m.references[ref_index], classes,
                                        ec if mc is not None else eb))
        out.append("</section>")
    return out


def _languages(run: Any, ids: list[Any], marking: bool) -> dict[Any, Any]:
    """Each example's language under ``--language column:COL`` (empty otherwise)."""
    from pipeline.report.texts import example_languages

    if not marking:
        return {}
    try:
        return example_languages(run, ids) or {}
    except InputError:  # the examples are explained without marks, as for missing texts
        return {}


def comparison_options(document: dict[str, Any]) -> dict[str, Any]:
    """The options of :func:`pipeline.compare.compare_runs` a ``compare.json`` was made with.

    Args:
        document: a document checked by :func:`pipeline.compare.document.check_document`.

    """
    settings = document["settings"]
    options: dict[str, Any] = {k: settings[k] for k in ("confidence", "n_bootstrap", "seed",
                                                         "max_missing", "adjust")}
    options["measures"] = list(settings["measures"])
    if "band_floors" in settings:
        options["bands"] = {k: float(v) for k, v in settings["band_floors"].items()}
    history = document.get("history")
    if history is not None:
        options["history"] = history["source"]
        options["history_window"] = history["window"]
        if history.get("reference_run") is not None:
            options["reference_run"] = history["reference_run"]
    return options


def _described(result: Any, baseline: str) -> Any:
    """The facts of a comparison made again that its document must agree with."""
    from pipeline.compare.document import DESCRIBED_FIELDS, Described

    rows = result.comparison.rows
    columns = [rows[c].tolist() for c in ("group", "metric", "measure", *DESCRIBED_FIELDS)]
    made = Described(baseline, result.baseline.run_id, result.candidate.run_id)
    for values in zip(*columns, strict=True):
        made.rows[values[:3]] = {
            k: None if isinstance(v, float) and not np.isfinite(v) else v
            for k, v in zip(DESCRIBED_FIELDS, values[3:], strict=True)}
    return made


def build_report(run_dir: str, *, baseline: str | None = None, top: int = 10,
                 comparison: str | None = None,
                 compare_options: dict[str, Any] | None = None,
                 trend_groups: str = "alarmed",
                 agreement: str | None = None) -> str:
    """Build the HTML report of a run, compared with a baseline when given.

    The verdict comes first. With ``comparison`` (a ``compare.json`` of this run), its
    verdict, alarms and rows are shown as written, and its settings (measures, bands,
    confidence, resamples, seed, adjustment, history) are used to recompute the per-example
    deltas and the moved examples, so the report never disagrees with the comparison;
    otherwise ``compare_options`` are the comparison's options, as ``overlap compare``
    takes them. With a history, a trend chart per measure: overall, and per group that
    alarmed tonight (or per group: ``trend_groups="all"``).

    Args:
        run_dir: a complete ``overlap score`` output.
        baseline: a complete baseline run to compare with (None: the comparison's baseline,
            or no comparison).
        top: how many moved examples to show (with a baseline), >= 0.
        comparison: a ``compare.json`` whose candidate is this run (path or URI).
        compare_options: options of :func:`pipeline.compare.compare_runs` (without one).
        trend_groups: ``alarmed`` (the groups that alarmed tonight) or ``all``: the groups
            whose trend is drawn beside the overall one.
        agreement: an ``agreement.json`` of ``overlap agree``: its section (verdict, system
            means against the human score, coefficients with intervals per subset).

    Returns:
        The HTML document (a str).

    Raises:
        InputError: an incomplete or unreadable run or comparison; a comparison whose
            fields break its schema (:mod:`pipeline.compare.document`), of another run, or
            that does not describe these runs (another baseline, values that differ).
        SignatureMismatchError: runs scored with different settings.
        ConfigError: an unknown ``trend_groups``.

    """
    from pipeline.compare.document import check_describes, load_document
    from pipeline.io.runs import filesystem, open_run

    if trend_groups not in TREND_GROUPS:
        raise ConfigError(f"trend groups {trend_groups!r}: use one of {', '.join(TREND_GROUPS)}")

    run = open_run(run_dir)
    saved: dict[str, Any] | None = None
    options = dict(compare_options or {})
    if comparison is not None:
        try:
            fs, where = filesystem(comparison)
            with fs.open_input_stream(where) as fh:
                data = fh.read()
        except OSError as err:
            raise InputError(f"cannot read the comparison {comparison}: {err}") from err
        saved = load_document(data, source=comparison)
        if saved["candidate"]["run_id"] != run.run_id:
            raise InputError(f"{comparison} compares run {saved['candidate']['run_id']!r}, "
                             f"not this run ({run.run_id!r})")
        options = comparison_options(saved)
        if baseline is None:
            baseline = saved["baseline"]["path"]
    agg = _aggregate(run)
    measures = _measures(agg)
    values = _values(run, measures)
    made = datetime.now(timezone.utc).isoformat(timespec="seconds")
    body = [f"<h1>overlap report: run {esc(run.run_id)}</h1>",
            f'<p class="muted">Made {esc(made)} by overlap-pipeline '
            f"{esc(run.manifest.get('version', ''))}. Self-contained: no script, nothing "
            "loaded from the network.</p>", *_warnings_section(run)]
    tail: list[str] = []
    if baseline is not None:
        from pipeline.compare import compare_runs

        result = compare_runs(baseline, run_dir, top=top, **options)
        if saved is not None:
            check_describes(saved, _described(result, baseline), source=str(comparison))
        doc = saved if saved is not None else result.to_document()
        body += _verdict_section(doc)
        body += _trend_section(result, doc, trend_groups=trend_groups)
        tail += _compare_section(result, doc)
        tail += _examples_section(result, result.baseline, result.candidate)
    if agreement is not None:
        from pipeline.report.agreement import agreement_section, read_agreement

        body += agreement_section(read_agreement(agreement))
    body += ["<h2>This run</h2>", *_run_section(run, agg, values), *tail]
    return page(f"overlap report: {run.run_id}", body)


__all__ = ["build_report"]
