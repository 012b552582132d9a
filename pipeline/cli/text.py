"""Text printed to a terminal from data: control and bidirectional-format characters escaped.

Shared by every command that prints group values, ids, paths or texts (light: no command's
machinery is imported with it).
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any


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


def safe_json(document: Any) -> str:
    """``document`` as indented JSON whose strings escape control and format characters.

    ``ensure_ascii=False`` keeps letters readable; the characters :func:`safe` escapes
    (U+202E and the other Cc/Cf characters, U+200D kept) are written as ``\\uXXXX`` escapes,
    so the JSON means the same and a terminal showing it is not turned around.
    """
    text = json.dumps(document, indent=2, allow_nan=False, ensure_ascii=False)
    return "".join(json.dumps(ch)[1:-1] if unicodedata.category(ch) in ("Cc", "Cf")
                   and ch not in "\u200d\n" else ch for ch in text)


__all__ = ["safe", "safe_json"]
