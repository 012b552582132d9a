"""What pyproject.toml declares is what the code imports, no more and no less.

Imports are read with ast (imports inside functions included) from `pipeline/`, `tests/` and
`scripts/`, mapped to the distributions that provide them with
`importlib.metadata.packages_distributions()`, and checked against the declared lists:
- the package imports only its dependencies and its optional extras (not `test` or `bench`);
- every dependency and every optional extra's entry is imported by the package;
- tests import only what the package and the `test` extra declare, and every `test` entry is
  imported by a test or is a tool `.ci/run` runs (ruff, mypy), a pytest plugin or type stubs;
- scripts import only what the package and any extra declare.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# Extras that are not part of the installed package's own code paths.
DEVELOPER_EXTRAS = ("test", "bench")
TOOLS = {"ruff", "mypy", "pytest"}  # run as commands by .ci/run, not imported by name


def _name(requirement: str) -> str:
    """Distribution name of a requirement string, normalized (PEP 503)."""
    name = re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(*groups: str) -> set[str]:
    """Distribution names of these groups, an extra naming this project's extras expanded."""
    out: set[str] = set()
    for group in groups:
        for requirement in (PYPROJECT["dependencies"] if group == "dependencies"
                            else PYPROJECT["optional-dependencies"][group]):
            if _name(requirement) == _name(PYPROJECT["name"]):
                extras = re.search(r"\[(.*)\]", requirement)
                out |= _declared(*(e.strip() for e in extras.group(1).split(","))) if extras \
                    else set()
            else:
                out.add(_name(requirement))
    return out


@functools.cache  # each folder is read once per session (the tests share the scans)
def _top_level_imports(folder: Path) -> frozenset[str]:
    """Top-level module names imported anywhere under ``folder``, stdlib and local excluded."""
    local = {"pipeline", "tests", "scripts"}
    out: set[str] = set()
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                out.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                out.add(node.module.split(".")[0])
    return frozenset(m for m in out if m not in sys.stdlib_module_names and m not in local
                     and m != "__future__")


@functools.cache  # reads every installed distribution's file list: once per session
def _packages_distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def _distributions(modules: frozenset[str]) -> dict[str, set[str]]:
    """Module -> normalized names of the installed distributions providing it."""
    provided = _packages_distributions()
    return {m: {_name(d) for d in provided.get(m, [])} for m in modules}


OPTIONAL = tuple(g for g in PYPROJECT["optional-dependencies"] if g not in DEVELOPER_EXTRAS)
PACKAGE_DECLARED = _declared("dependencies", *OPTIONAL)


def _undeclared(folder: Path, declared: set[str]) -> list[str]:
    found = _distributions(_top_level_imports(folder))
    return sorted(f"{m} (from {', '.join(sorted(d)) or 'no installed distribution'})"
                  for m, d in found.items() if not d & declared)


def test_the_package_imports_only_what_it_declares():
    assert _undeclared(ROOT / "pipeline", PACKAGE_DECLARED) == []


def test_every_package_dependency_is_imported():
    imported = set().union(*_distributions(_top_level_imports(ROOT / "pipeline")).values())
    assert sorted(PACKAGE_DECLARED - imported) == []


def test_tests_import_only_what_the_test_extra_declares():
    assert _undeclared(ROOT / "tests", PACKAGE_DECLARED | _declared("test")) == []


def test_every_test_dependency_is_used():
    imported = set().union(*_distributions(_top_level_imports(ROOT / "tests")).values())
    own = {_name(r) for r in PYPROJECT["optional-dependencies"]["test"]
           if ";" not in r  # for another Python only (tomli)
           and _name(r) != _name(PYPROJECT["name"])}  # the package's extras: checked above
    unused = {d for d in own - imported - TOOLS
              if not (d.endswith("-stubs") or d.startswith("types-"))}
    assert sorted(unused) == []


def test_scripts_import_only_what_is_declared():
    every_extra = _declared("dependencies", *PYPROJECT["optional-dependencies"])
    missing = [m for m in _undeclared(ROOT / "scripts", every_extra)
               if "no installed distribution" not in m]  # a bench-only peer not installed here
    assert missing == []
