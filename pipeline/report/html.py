"""HTML pieces of the report: one self-contained file, no script, no request when opened.

Pure rendering: strings and numbers in, escaped HTML out. Styles are inline in ``<head>``,
histograms are inline SVG, and a Content-Security-Policy meta tag forbids loading anything
(``default-src 'none'``), so the file renders the same from an e-mail, an artifact store or
a laptop without network. Content does not depend on JavaScript; print styles keep tables
and examples whole on paper.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

STYLE = """
:root { --ink: #1d2430; --muted: #5b6472; --line: #d6dae0; --alarm: #b3261e;
        --alarm-bg: #fde7e5; --bar: #3b6ea5; --both: #ffe58a; --base: #cfe3ff;
        --cand: #c9f2cf; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue",
       Arial, sans-serif; color: var(--ink); margin: 0 auto; padding: 1.5rem;
       max-width: 76rem; }
h1 { font-size: 1.5rem; margin: 0 0 .3rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .6rem; border-bottom: 2px solid var(--line); }
h3 { font-size: 1.02rem; margin: 1.2rem 0 .4rem; }
code, .sig { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
             overflow-wrap: anywhere; }
.muted { color: var(--muted); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem;
           margin: .5rem 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: .4rem 0 1rem; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: .25rem .55rem; text-align: right;
         vertical-align: top; }
th { background: #f3f5f8; } td { white-space: nowrap; }
td small { color: var(--muted); }
td.l, th.l { text-align: left; white-space: normal; }
td.l:first-child { overflow-wrap: anywhere; min-width: 8rem; }
tr.alarm td { background: var(--alarm-bg); }
td.flag { color: var(--alarm); font-weight: 700; }
td span.flag { white-space: normal; }
.hists { display: flex; flex-wrap: wrap; gap: .8rem 1.2rem; }
figure { margin: 0; } figcaption { font-size: 12.5px; color: var(--muted); }
svg { display: block; }
.example { border: 1px solid var(--line); border-radius: 6px; padding: .6rem .9rem;
           margin: .8rem 0; break-inside: avoid; }
.example p.text { margin: .2rem 0 .6rem; white-space: pre-wrap; }
.example p.tokens { margin: .2rem 0 .6rem; font-family: ui-monospace, monospace; font-size: 12px; }
.example p.tokens span, .example p.tokens mark { margin-right: .35rem; white-space: pre; }
.label { font-size: 12px; font-weight: 700; text-transform: uppercase; color: var(--muted);
         letter-spacing: .03em; }
mark { background: var(--both); padding: 0 1px; border-bottom: 2px solid #c9a400; }
mark.base { background: var(--base); border-bottom: 2px dashed #3b6ea5; }
mark.cand { background: var(--cand); border-bottom: 2px dotted #2e7d32; }
.legend mark { margin-right: .6rem; }
ul.notes { padding-left: 1.2rem; }
.verdict { border: 2px solid var(--line); border-radius: 6px; padding: .5rem .9rem;
           margin: .8rem 0; }
.verdict.alarm { border-color: var(--alarm); background: var(--alarm-bg); }
.verdict ul { margin: .3rem 0; padding-left: 1.2rem; }
p.diff { white-space: pre-wrap; margin: .2rem 0 .6rem; }
p.diff del { background: var(--alarm-bg); color: var(--alarm); }
p.diff ins { background: var(--cand); text-decoration: none; }
p.diff .gap { color: var(--muted); font-style: italic; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  h2 { break-after: avoid; } table, figure { break-inside: avoid; }
  .scroll { overflow: visible; }
  mark { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  tr.alarm td { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  .verdict, p.diff del, p.diff ins { -webkit-print-color-adjust: exact;
                                     print-color-adjust: exact; }
}
"""


def esc(value: Any) -> str:
    """HTML-escape any value's text."""
    return html.escape("" if value is None else str(value), quote=True)


def num(value: Any, spec: str = ".4f") -> str:
    """A number formatted, or an en dash for None/NaN."""
    if value is None:
        return "\u2013"
    try:
        if isinstance(value, float) and not math.isfinite(value):
            return "\u2013"
        return format(value, spec)
    except (TypeError, ValueError):
        return esc(value)


def page(title: str, body: Iterable[str]) -> str:
    """A whole HTML document: CSP, inline styles, the body parts joined."""
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{esc(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        *body,
        "</body>",
        "</html>",
        "",
    ])


def facts(items: Sequence[tuple[str, Any]]) -> str:
    """A definition list of (label, value) pairs.

    Values are escaped, except those given as ``("html", text)``.
    """
    rows = []
    for label, value in items:
        shown = value[1] if isinstance(value, tuple) and value[0] == "html" else esc(value)
        rows.append(f"<dt>{esc(label)}</dt><dd>{shown}</dd>")
    return '<dl class="facts">' + "".join(rows) + "</dl>"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, left: int = 1,
          row_classes: Sequence[str] | None = None, caption: str | None = None) -> str:
    """An HTML table; the first ``left`` columns are left-aligned text.

    Cells are escaped, except those given as ``("html", text)``.
    """
    def cell(tag: str, i: int, value: Any) -> str:
        cls = ' class="l"' if i < left else ""
        if isinstance(value, tuple) and len(value) == 2 and value[0] == "html":
            return f"<{tag}{cls}>{value[1]}</{tag}>"
        return f"<{tag}{cls}>{esc(value)}</{tag}>"

    out = ['<div class="scroll"><table>']
    if caption:
        out.append(f"<caption class=\"muted\">{esc(caption)}</caption>")
    out.append("<thead><tr>" + "".join(cell("th", i, h) for i, h in enumerate(header))
               + "</tr></thead><tbody>")
    for k, row in enumerate(rows):
        cls = f' class="{row_classes[k]}"' if row_classes and row_classes[k] else ""
        out.append(f"<tr{cls}>" + "".join(cell("td", i, v) for i, v in enumerate(row))
                   + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def histogram_svg(values: np.ndarray, *, label: str, bins: int = 24, width: int = 240,
                  height: int = 84, symmetric: bool = False,
                  marks: Sequence[tuple[float, str]] = ()) -> str:
    """A small histogram as inline SVG, inside a ``<figure>`` with a caption.

    Args:
        values: the values (NaN dropped).
        label: caption (escaped), e.g. ``rougeL.fmeasure``.
        bins: number of bars.
        width: pixels.
        height: pixels (plot area plus a line of axis text).
        symmetric: range symmetric around 0 (for deltas), with a line at 0.
        marks: vertical lines ``(value, color)`` (e.g. the mean).

    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    plot_h = height - 16
    if v.size == 0:
        body = f'<text x="4" y="{plot_h // 2}" font-size="11">no values</text>'
        lo, hi = 0.0, 1.0
    else:
        lo, hi = float(v.min()), float(v.max())
        if symmetric:
            edge = max(abs(lo), abs(hi)) or 1e-9
            lo, hi = -edge, edge
        elif 0.0 <= lo and hi <= 1.0:
            lo, hi = 0.0, 1.0  # scores in [0, 1]: the whole range, comparable across panels
        if hi <= lo:
            hi = lo + 1e-9
        counts, _ = np.histogram(v, bins=bins, range=(lo, hi))
        peak = max(int(counts.max()), 1)
        bar_w = width / bins
        rects = []
        for i, c in enumerate(counts.tolist()):
            if not c:
                continue
            h = max(1.0, plot_h * c / peak)
            rects.append(f'<rect x="{i * bar_w + 0.5:.1f}" y="{plot_h - h:.1f}" '
                         f'width="{max(bar_w - 1, 1):.1f}" height="{h:.1f}" fill="#3b6ea5">'
                         f"<title>{c}</title></rect>")
        body = "".join(rects)
        lines = list(marks)
        if symmetric:
            lines.insert(0, (0.0, "#5b6472"))
        for value, color in lines:
            x = (value - lo) / (hi - lo) * width
            body += (f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{plot_h}" stroke="{color}" '
                     f'stroke-width="1.5"/>')
    axis = (f'<line x1="0" x2="{width}" y1="{plot_h + .5}" y2="{plot_h + .5}" '
            f'stroke="#98a1ad"/>'
            f'<text x="0" y="{height - 3}" font-size="10" fill="#5b6472">{num(lo, ".3g")}</text>'
            f'<text x="{width}" y="{height - 3}" font-size="10" fill="#5b6472" '
            f'text-anchor="end">{num(hi, ".3g")}</text>')
    n = int(v.size)
    return (f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{esc(label)}: histogram of {n} values">{body}{axis}</svg>'
            f"<figcaption>{esc(label)}{'' if symmetric else f' (n = {n})'}</figcaption>"
            "</figure>")


def marked_text(text: str | None, spans: Sequence[tuple[int, int]] | None,
                classes: dict[int, str]) -> str:
    """A text with some tokens wrapped in ``<mark>``.

    Args:
        text: the text (None: shown as not available).
        spans: character spans of its tokens (None: shown unmarked).
        classes: token position -> mark class ("" for the plain ``<mark>``).

    """
    if text is None:
        return '<span class="muted">(text not available)</span>'
    if spans is None or not classes:
        return esc(text)
    out = []
    cursor = 0
    for pos, (a, b) in enumerate(spans):
        if pos not in classes:
            continue
        out.append(esc(text[cursor:a]))
        cls = f' class="{classes[pos]}"' if classes[pos] else ""
        out.append(f"<mark{cls}>{esc(text[a:b])}</mark>")
        cursor = b
    out.append(esc(text[cursor:]))
    return "".join(out)




TOKENS_SHOWN = 300


def marked_tokens(tokens: Sequence[str], classes: dict[int, str], *,
                  limit: int = TOKENS_SHOWN) -> str:
    """Tokens as compared, each quoted as a Python literal, some wrapped in ``<mark>``.

    For tokens that cannot be followed back to the text (``--language``): a white-space
    token (jieba's and pythainlp's ``' '``) shows as ``' '``, so a user sees it matched.

    Args:
        tokens: the tokens, in order (positions index them).
        classes: token position -> mark class ("" for the plain ``<mark>``).
        limit: at most this many shown; the rest counted (``... N more``).

    """
    out = []
    for pos, token in enumerate(tokens[:limit]):
        cls = classes.get(pos)
        if cls is None:
            out.append(f"<span>{esc(repr(token))}</span>")
        else:
            attr = f' class="{cls}"' if cls else ""
            out.append(f"<mark{attr}>{esc(repr(token))}</mark>")
    if len(tokens) > limit:
        out.append(f'<span class="muted">... {len(tokens) - limit} more</span>')
    return "".join(out)


def word_diff_html(pieces: Sequence[tuple[str, str]]) -> str:
    """A word diff (:func:`pipeline.compare.textdiff.word_diff`) as escaped HTML.

    ``<del>`` the baseline's words, ``<ins>`` the candidate's, a muted ``[… N words]`` for
    unchanged stretches left out.
    """
    out = []
    for op, text in pieces:
        if op == "=":
            out.append(esc(text))
        elif op == "-":
            out.append(f"<del>{esc(text)}</del>")
        elif op == "+":
            out.append(f"<ins>{esc(text)}</ins>")
        else:
            out.append(f'<span class="gap">[\u2026 {esc(text)} unchanged]</span>')
    return " ".join(out)


def trend_svg(dates: Sequence[str], values: Sequence[float], *, label: str,
              band: float | None = None, level: float | None = None,
              alarms: Sequence[tuple[int, str]] = (), width: int = 420,
              height: int = 150, baseline: float | None = None) -> str:
    """The nightly values of one measure as a line, inline SVG in a ``<figure>``.

    The vertical scale is the nights' values (and the drift level), never the band: a band
    wider than the nights' range is cut at the chart's edge and marked with an arrow there,
    so the line stays readable.

    Args:
        dates: the nights' dates, oldest first (the last one is tonight).
        values: each night's value (NaN: none; the line skips it).
        label: caption (escaped).
        band: tonight's band, in the measure's units: a grey strip ``reference +/- band``
            over tonight's step (from the night before to tonight).
        level: the drift chart's reference level (a dashed line), or None.
        alarms: ``(night index, kind)`` marked with a red point and the kind's initial.
        width: pixels.
        height: pixels (plot area plus a line of axis text).
        baseline: the value tonight is compared with (the band's centre); None: the night
            before's value.

    """
    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    plot_h = height - 18
    finite = v[np.isfinite(v)]
    if n == 0 or finite.size == 0:
        return (f"<figure><p class=\"muted\">no nights</p><figcaption>{esc(label)}"
                "</figcaption></figure>")
    centre = baseline if baseline is not None and math.isfinite(baseline) else (
        float(v[-2]) if n >= 2 and np.isfinite(v[-2]) else None)
    extra = [x for x in (level, centre) if x is not None and math.isfinite(x)]
    lo, hi = min([float(finite.min()), *extra]), max([float(finite.max()), *extra])
    pad = (hi - lo) * 0.08 or abs(hi) * 0.01 or 0.01
    lo, hi = lo - pad, hi + pad

    def x(i: int) -> float:
        return 8 + (width - 16) * (i / max(n - 1, 1))

    def y(value: float) -> float:
        return plot_h - (value - lo) / (hi - lo) * (plot_h - 4) - 2

    body = []
    if band and centre is not None and math.isfinite(band):
        top, bottom = min(centre + band, hi), max(centre - band, lo)
        x0 = x(n - 2) if n >= 2 else x(n - 1) - 6
        x1 = x(n - 1) + 6
        body.append(f'<rect x="{x0:.1f}" y="{y(top):.1f}" width="{x1 - x0:.1f}" '
                    f'height="{y(bottom) - y(top):.1f}" fill="#d6dae0">'
                    f"<title>band: {num(centre, '.4g')} +/- {num(band, '.4g')}</title></rect>")
        body.append(f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{y(centre):.1f}" '
                    f'y2="{y(centre):.1f}" stroke="#5b6472" stroke-width="1"/>')
        mid = (x0 + x1) / 2
        for cut, edge, step in ((centre + band > hi, y(hi), 5), (centre - band < lo, y(lo),
                                                                   -5)):
            if cut:
                body.append(f'<path d="M{mid - 4:.1f},{edge + step:.1f} L{mid:.1f},{edge:.1f} '
                            f'L{mid + 4:.1f},{edge + step:.1f}" fill="none" stroke="#5b6472">'
                            "<title>the band goes on beyond the chart</title></path>")
    if level is not None and math.isfinite(level):
        body.append(f'<line x1="0" x2="{width}" y1="{y(level):.1f}" y2="{y(level):.1f}" '
                    'stroke="#5b6472" stroke-dasharray="4 3"><title>drift reference level '
                    f"{num(level, '.4g')}</title></line>")
    points = [f"{x(i):.1f},{y(float(val)):.1f}" for i, val in enumerate(v) if np.isfinite(val)]
    body.append(f'<polyline points="{" ".join(points)}" fill="none" stroke="#3b6ea5" '
                'stroke-width="1.5"/>')
    marked: dict[int, str] = {}
    for i, kind in alarms:
        marked.setdefault(i, kind)
    for i, val in enumerate(v):
        if not np.isfinite(val):
            continue
        color = "#b3261e" if i in marked else "#3b6ea5"
        r = 3.5 if i in marked else 2
        body.append(f'<circle cx="{x(i):.1f}" cy="{y(float(val)):.1f}" r="{r}" fill="{color}">'
                    f"<title>{esc(dates[i])}: {num(float(val), '.4f')}"
                    f"{' ALARM: ' + esc(marked[i]) if i in marked else ''}</title></circle>")
        if i in marked:
            above = y(float(val)) - 6
            body.append(f'<text x="{x(i):.1f}" '
                        f'y="{above if above > 10 else y(float(val)) + 14:.1f}" font-size="10" '
                        f'fill="#b3261e" text-anchor="middle">{esc(marked[i][:1].upper())}'
                        "</text>")
    axis = (f'<text x="0" y="{height - 3}" font-size="10" fill="#5b6472">{esc(dates[0])}</text>'
            f'<text x="{width}" y="{height - 3}" font-size="10" fill="#5b6472" '
            f'text-anchor="end">{esc(dates[-1])}</text>'
            f'<text x="2" y="10" font-size="10" fill="#5b6472">{num(hi, ".4g")}</text>'
            f'<text x="2" y="{plot_h - 2}" font-size="10" fill="#5b6472">{num(lo, ".4g")}'
            "</text>")
    return (f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{esc(label)}: nightly values of {n} nights">{"".join(body)}{axis}'
            f"</svg><figcaption>{esc(label)}</figcaption></figure>")


__all__ = ["CSP", "TOKENS_SHOWN", "esc", "facts", "histogram_svg", "marked_text",
           "marked_tokens", "num", "page", "table", "trend_svg", "word_diff_html"]
