"""pipeline.agree is pure: no file, terminal or cluster (read from the source with ast)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pipeline" / "agree"
FORBIDDEN = ("pipeline.io", "pipeline.engine", "pipeline.api", "pipeline.cli", "click", "ray",
             "fsspec", "pyarrow.fs")


def test_agree_imports_nothing_that_touches_files_or_the_terminal():
    bad = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            bad += [f"{path.name}: {n}" for n in names
                    if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)]
    assert bad == []
