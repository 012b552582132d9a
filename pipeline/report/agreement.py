"""The report's section on agreement with human judgments (an ``agreement.json``).

The verdict lines of ``overlap agree``, a scatter of each system's mean measure against its
mean human score (one small inline SVG per measure and judgment column), and the
coefficients with their intervals per level and subset, as a table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pipeline.report.html import esc, num, table


def scatter_svg(x: Sequence[float], y: Sequence[float], *, label: str, width: int = 240,
                height: int = 170) -> str:
    """System means as points: measure (x) against the human score (y), inline SVG.

    Args:
        x: each system's mean measure.
        y: each system's mean human score (same order).
        label: the caption.
        width: pixels.
        height: pixels.

    Returns:
        A ``<figure>`` with the SVG and its caption (no point for a NaN pair).

    """
    pts = [(a, b) for a, b in zip(x, y, strict=True)
           if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)]
    pad = 18
    parts = [f'<svg width="{width}" height="{height}" role="img" aria-label="{esc(label)}" '
             f'viewBox="0 0 {width} {height}">',
             f'<rect x="{pad}" y="4" width="{width - pad - 4}" height="{height - pad - 4}" '
             'fill="none" stroke="#bbb"/>']
    if pts:
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        x0, x1 = min(xs), max(xs)
        y0, y1 = min(ys), max(ys)
        sx = (width - pad - 12) / ((x1 - x0) or 1.0)
        sy = (height - pad - 12) / ((y1 - y0) or 1.0)
        for a, b in pts:
            cx = pad + 4 + (a - x0) * sx
            cy = height - pad - 4 - (b - y0) * sy
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3" fill="#2a6fb0"/>')
    parts.append("</svg>")
    return (f'<figure class="hist">{"".join(parts)}<figcaption>{esc(label)}</figcaption>'
            "</figure>")


def agreement_section(document: dict[str, Any]) -> list[str]:
    """HTML parts of the agreement section.

    Args:
        document: an ``agreement.json`` document (:func:`pipeline.api.agree`).

    Returns:
        HTML fragments, in order: heading, verdict, scatter plots, the coefficient table.

    """
    from pipeline.agree.tables import summary_text

    out = ["<h2>Agreement with human judgments</h2>",
           f'<p class="muted">overlap agree, signature {esc(document.get("signature"))}</p>']
    verdict = [line for line in summary_text(document).split("\n\n")[0].splitlines()
               if not line.startswith("signature:")]
    out.append("<ul>" + "".join(f"<li>{esc(line)}</li>" for line in verdict) + "</ul>")
    figures = []
    for s in document.get("scatter", []):
        for measure, means in s.get("measures", {}).items():
            figures.append(scatter_svg(means, s["human_means"],
                                       label=f"{measure} (x) vs {s['human']} (y), per system"))
    if figures:
        out.append('<div class="hists">' + "".join(figures) + "</div>")
    rows = []
    for r in document.get("rows", []):
        group = r.get("group")
        rows.append([r["measure"], r["human"], r["level"], r["coefficient"],
                     "(all)" if not group else ", ".join(f"{k}={v}" for k, v in group.items()),
                     num(r.get("value"), ".3f"),
                     f"[{num(r.get('low'), '.3f')}, {num(r.get('high'), '.3f')}]",
                     r.get("reason") or (f"rank {r['rank']}" if r.get("rank") else "")
                     or (f"{num(r.get('delta_vs_rest'), '+.3f')} vs rest, p "
                         f"{num(r.get('p_vs_rest'), '.3g')}" if r.get("p_vs_rest") is not None
                         else "")])
    out.append(table(["measure", "human", "level", "coefficient", "group", "value",
                      "interval", "note"], rows, left=5))
    return out


def read_agreement(path: str) -> dict[str, Any]:
    """Read an ``agreement.json`` written by ``overlap agree``.

    Raises:
        InputError: unreadable, or not written by ``overlap agree``.

    """
    import json

    from pipeline.errors import InputError
    from pipeline.io.runs import filesystem

    try:
        fs, where = filesystem(path)
        with fs.open_input_stream(where) as fh:
            doc = json.loads(fh.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise InputError(f"cannot read the agreement {path}: {err}") from None
    if not isinstance(doc, dict) or doc.get("tool") != "overlap agree":
        raise InputError(f"{path} is not an agreement.json of overlap agree")
    return doc
