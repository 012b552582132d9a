"""Imports point one way, read from the source with ast (imports inside functions included).

cli -> api -> engine/aggregate/compare -> io; scoring -> metrics -> tokenizers; the pure
core never imports Ray, fsspec or click.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pipeline"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


MODULES = {_module(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


# (modules under this prefix, may not import anything under these prefixes)
_ABOVE_TOKENIZERS = ("pipeline.metrics", "pipeline.scoring", "pipeline.config", "pipeline.io",
                     "pipeline.engine", "pipeline.api", "pipeline.cli")
RULES = [
    ("pipeline.tokenizers", _ABOVE_TOKENIZERS),
    ("pipeline.metrics", ("pipeline.scoring", "pipeline.config", "pipeline.io",
                          "pipeline.engine", "pipeline.api", "pipeline.cli")),
    ("pipeline.scoring", ("pipeline.config", "pipeline.io", "pipeline.engine", "pipeline.api",
                          "pipeline.cli")),
    ("pipeline.io", ("pipeline.config", "pipeline.scoring", "pipeline.engine", "pipeline.api",
                     "pipeline.cli", "pipeline.aggregate", "pipeline.compare")),
    ("pipeline.engine", ("pipeline.api", "pipeline.cli")),
    ("pipeline.api", ("pipeline.cli",)),
]
CORE = ("pipeline.tokenizers", "pipeline.metrics", "pipeline.scoring", "pipeline.signature",
        "pipeline.config_checks")
NOT_IN_CORE = ("ray", "fsspec", "click")


@pytest.mark.parametrize("prefix, forbidden", RULES, ids=[r[0] for r in RULES])
def test_imports_point_one_way(prefix, forbidden):
    bad = sorted(f"{m} imports {i}" for m, imported in MODULES.items()
                 if _within(m, prefix)
                 for i in imported if any(_within(i, f) for f in forbidden))
    assert not bad, bad


def test_the_core_never_imports_ray_fsspec_or_click():
    bad = sorted(f"{m} imports {i}" for m, imported in MODULES.items()
                 if any(_within(m, c) for c in CORE)
                 for i in imported if any(_within(i, x) for x in NOT_IN_CORE))
    assert not bad, bad


def test_the_rules_see_the_modules():
    assert "pipeline.metrics.rouge.family" in MODULES and "pipeline.io.schema" in MODULES
    assert any(_within(m, "pipeline.tokenizers") for m in MODULES)
