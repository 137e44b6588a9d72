"""`make run` installs what the service needs and `make test` what the tests need (pyproject.toml's
dependencies, the Makefile's `--no-deps` wheels, the [test] and [bench] extras): every third-party
module the service imports comes with what `make run` installs, and every one the tests import
with what `make test` adds, never with the [bench] extra alone. Read from the installed metadata,
so a package added to the wrong list fails here, not on a fresh machine."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness.processes import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SERVICE_PACKAGES = PYPROJECT["tool"]["importlinter"]["root_packages"]
FIRST_PARTY = {*SERVICE_PACKAGES, "tests", "bench", "harness", "manage"}


def no_deps_wheels(stamp: str) -> list[str]:
    """The `pip install --no-deps NAME==VERSION` lines of one Makefile stamp's recipe."""
    recipe = re.search(rf"^\$\(VENV\)/{re.escape(stamp)}:.*?\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert recipe, f"the Makefile has no $(VENV)/{stamp} rule"
    return re.findall(r"--no-deps ([A-Za-z0-9_.\-]+)==", recipe.group(1))


def installed_closure(requirements: list[str], with_dependencies: bool = True) -> set[str]:
    """The distributions these requirements install: each one, and (unless --no-deps) what it
    requires in turn, markers evaluated with the extras asked for."""
    seen: set[str] = set()
    pending = [(Requirement(text), with_dependencies) for text in requirements]
    while pending:
        requirement, follow = pending.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        if not follow:
            continue
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue  # not installed here: the import checks below name what it would have brought
        for text in requires:
            child = Requirement(text)
            extras = [""] + sorted(requirement.extras)
            if child.marker is None or any(child.marker.evaluate({"extra": extra}) for extra in extras):
                child.marker = None
                pending.append((child, True))
    return seen


def service_installs() -> set[str]:
    """What `make run` (`make install`) puts in the .venv."""
    return installed_closure(PYPROJECT["project"]["dependencies"]) | installed_closure(
        no_deps_wheels(".installed"), with_dependencies=False
    )


def make_test_installs() -> set[str]:
    """What `make test` (`make install-test`) puts in the .venv: the service's and the [test] extra."""
    return service_installs() | installed_closure(PYPROJECT["project"]["optional-dependencies"]["test"])


def third_party_imports(folders: list[str]) -> dict[str, str]:
    """Top-level module -> a file importing it, for every module the files under these folders
    import that is neither the standard library's nor the project's."""
    found: dict[str, str] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in FIRST_PARTY:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def missing_from(installed: set[str], imports: dict[str, str]) -> list[str]:
    providers = metadata.packages_distributions()
    missing = []
    for module, where in sorted(imports.items()):
        distributions = {canonicalize_name(name) for name in providers.get(module, [])}
        if not distributions & installed:
            missing.append(f"{module} (imported by {where}; from {sorted(distributions) or 'nothing installed'})")
    return missing


def test_make_run_installs_every_module_the_service_imports():
    imports = third_party_imports(SERVICE_PACKAGES)
    assert {"django", "celery", "faster_whisper"} <= imports.keys()
    assert missing_from(service_installs(), imports) == []


def test_make_test_installs_every_module_the_tests_import():
    imports = third_party_imports(["tests"])
    assert {"pytest", "playwright"} <= imports.keys()
    assert missing_from(make_test_installs(), imports) == []


def test_make_run_installs_neither_the_tests_nor_the_benchmarks_packages():
    service = service_installs()
    extras = PYPROJECT["project"]["optional-dependencies"]
    for extra in ("test", "bench"):
        own = {canonicalize_name(Requirement(text).name) for text in extras[extra]}
        assert own & service == set(), f"[{extra}] packages that make run installs anyway"
