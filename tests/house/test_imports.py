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


def _edges(path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``path`` names in an import statement, at module level or
    inside a function: ``import a.b`` names ``a.b``; ``from a import b`` names ``a.b`` when
    that is a module, else ``a`` (a package's ``__init__``). A parent package run implicitly
    by Python on the way to a submodule is not counted: every package's ``__init__`` is lazy
    or imports only its own submodules."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                name = f"{node.module}.{a.name}"
                if name in known:
                    out.add(name)
                elif node.module in known:
                    out.add(node.module)
    return out


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The loops of a directed graph: each strongly connected component with more than one
    node (or a node importing itself), its nodes sorted (Tarjan 1972, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(sorted(component))
    return sorted(found)


def test_the_cycle_finder_finds_loops():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}, "f": set()}
    assert import_cycles(graph) == [["a", "b", "c"], ["d"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back():
    """No loop between the package's modules, counting imports inside functions too (issue
    29): a loop means neither module can be read (or changed) without the other."""
    paths = {_module(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    graph = {m: _edges(p, set(paths)) - {m} for m, p in paths.items()}
    assert "pipeline.io.manifest" in graph["pipeline.io.runs"]  # the graph sees the edges
    loops = import_cycles(graph)
    assert not loops, "import loops: " + "; ".join(" <-> ".join(c) for c in loops)
