"""Where two predictions differ: a word diff, with long unchanged stretches elided.

The moved examples of a comparison are read by a person; their first 160 characters hide a
cut at the end. :func:`word_diff` aligns the two texts' whitespace-separated words with
:class:`difflib.SequenceMatcher` (Ratcliff/Obershelp matching, the standard library's) and
keeps every changed word, with ``context`` unchanged words around each change.
"""

from __future__ import annotations

import difflib

ELLIPSIS = "\u2026"


def word_diff(baseline: str, candidate: str, *, context: int = 6
              ) -> list[tuple[str, str]]:
    """The word diff of two texts.

    Args:
        baseline: the baseline text.
        candidate: the candidate text.
        context: unchanged words kept on each side of a change (>= 0); a longer unchanged
            stretch is cut to its ends with an ``…`` piece between.

    Returns:
        ``[(op, text)]`` with op ``=`` (in both), ``-`` (baseline only), ``+`` (candidate
        only) or ``…`` (unchanged words left out); texts are words joined by one space.
        Identical texts give ``[("=", text)]`` (elided beyond ``2 * context`` words).

    """
    a, b = baseline.split(), candidate.split()
    out: list[tuple[str, str]] = []
    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    for i, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            words = a[i1:i2]
            first, last = i == 0, i == len(ops) - 1
            keep_head = 0 if first else context
            keep_tail = 0 if last else context
            if first and last:
                keep_head = keep_tail = context
            if len(words) > keep_head + keep_tail + 1:
                if keep_head:
                    out.append(("=", " ".join(words[:keep_head])))
                out.append((ELLIPSIS, f"{len(words) - keep_head - keep_tail} words"))
                if keep_tail:
                    out.append(("=", " ".join(words[-keep_tail:])))
            elif words:
                out.append(("=", " ".join(words)))
            continue
        if i2 > i1:
            out.append(("-", " ".join(a[i1:i2])))
        if j2 > j1:
            out.append(("+", " ".join(b[j1:j2])))
    return out


def render_word_diff(pieces: list[tuple[str, str]]) -> str:
    """Plain-text form of :func:`word_diff`: ``[-removed-]``, ``{+added+}``, ``[…N words]``."""
    out = []
    for op, text in pieces:
        out.append(text if op == "=" else f"[-{text}-]" if op == "-" else
                   f"{{+{text}+}}" if op == "+" else f"[{ELLIPSIS}{text}]")
    return " ".join(out)


__all__ = ["ELLIPSIS", "render_word_diff", "word_diff"]
