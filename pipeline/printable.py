"""Data made safe to print: control and bidirectional-format characters escaped.

Group values, ids, texts and column names come from the user's data and are printed to a
terminal (``score``'s summary table, ``compare``'s, ``agree``'s summary, error messages); an
escape sequence or a right-to-left override in them must not act on the terminal. Used by
the command line and by the text summaries built below it (:mod:`pipeline.agree.tables`).
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any


def safe(text: Any) -> str:
    """``str(text)`` with control and bidirectional-format characters escaped.

    Every character of Unicode category Cc or Cf except U+200D (the zero-width joiner of
    emoji and Indic scripts) is escaped: a newline becomes ``\\x0a``, ESC ``\\x1b``, U+202E
    ``\\u202e``; other characters are kept.
    """
    out = []
    for ch in str(text):
        if unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\u200d":
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def safe_json(document: Any) -> str:
    """``document`` as indented JSON whose strings escape control and format characters.

    ``ensure_ascii=False`` keeps letters readable; the characters :func:`safe` escapes
    (U+202E and the other Cc/Cf characters, U+200D kept) are written as ``\\uXXXX`` escapes,
    so the JSON means the same and a terminal showing it is not turned around.

    Raises:
        ValueError: a NaN or infinite float in ``document`` (not JSON).
        TypeError: a value JSON cannot hold.

    """
    text = json.dumps(document, indent=2, allow_nan=False, ensure_ascii=False)
    return "".join(json.dumps(ch)[1:-1] if unicodedata.category(ch) in ("Cc", "Cf")
                   and ch not in "\u200d\n" else ch for ch in text)
