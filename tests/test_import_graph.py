"""The import graph has no circles: none between modules (a package and its own modules included,
which import-linter's acyclic_siblings contract does not look at), and none between the apps'
domain modules (models, services, selectors, signals...), where one app calling "upward" into
another that already depends on it (accounts.services -> billing.services -> accounts.models)
makes the two one app in disguise. Read from the code by grimp, the graph import-linter checks.
And no module of the service, the benchmarks or the harness imports another module's private name
(one starting with ``_``): a name used by two modules is public, or the helper moves to its user."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

APPS = ["accounts", "audit", "billing", "transcription", "webhooks"]
# Above every app by design (architecture.md): they show and queue through the apps; nothing
# imports them, so they can close no circle between apps.
ABOVE = ["website", "monitoring", "config"]
# The layers that show or drive an app, rather than hold its rules.
NOT_DOMAIN = {"admin", "views", "urls", "forms", "management", "api", "templatetags", "migrations", "apps"}


ROOT = Path(__file__).resolve().parents[1]
# the packages whose modules may not import private names: the service's, the benchmarks', the harness's
OWN_PACKAGES = [*APPS, *ABOVE, "bench", "harness"]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph(*APPS, *ABOVE, cache_dir=None)


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_circles_finds_a_circle_and_only_circles():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back_through_others(graph):
    edges = {module: set(graph.find_modules_directly_imported_by(module)) & graph.modules for module in graph.modules}
    assert circles(edges) == []


def test_no_two_apps_domain_modules_import_each_other(graph):
    def app_of_domain_module(module: str) -> str | None:
        parts = module.split(".")
        return parts[0] if parts[0] in APPS and not NOT_DOMAIN & set(parts[1:]) else None

    edges: dict[str, set[str]] = {app: set() for app in APPS}
    why: dict[tuple[str, str], str] = {}
    for module in graph.modules:
        source = app_of_domain_module(module)
        for imported in graph.find_modules_directly_imported_by(module) if source else ():
            target = app_of_domain_module(imported)
            if target and target != source:
                edges[source].add(target)
                why.setdefault((source, target), f"{module} -> {imported}")
    found = circles(edges)
    assert found == [], [[why[a, b] for a in circle for b in circle if (a, b) in why] for circle in found]


def private_imports(source: str) -> list[str]:
    """The private names ``source`` imports from other modules: ``from m import _x`` and
    ``import m._x`` (dunder names such as ``__version__`` and ``from __future__`` are not private)."""

    def private(name: str) -> bool:
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            module = "." * node.level + (node.module or "")
            found += [f"{module}.{a.name}" for a in node.names if private(a.name)]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if any(private(part) for part in a.name.split("."))]
    return found


def test_private_imports_finds_private_names_only():
    source = (
        "from __future__ import annotations\nfrom .turns import _renumber, viterbi\n"
        "from m import __version__\nimport a._b\nimport a.b\n"
        "def f():\n    from .changes import _merge\n"
    )
    assert private_imports(source) == [".turns._renumber", "a._b", ".changes._merge"]


def test_no_module_imports_a_private_name_of_another():
    found = {
        str(path.relative_to(ROOT)): names
        for package in OWN_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts and (names := private_imports(path.read_text()))
    }
    assert found == {}
