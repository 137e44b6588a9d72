"""docs/architecture.md is the map a newcomer trusts: every file or folder it names exists, every
dotted name it gives (`services.job_create`, `transcription.events.signals.job_ended`) is a module or
something a module defines, and every app of INSTALLED_APPS has its room in it."""

from __future__ import annotations

import importlib
import re

from django.apps import apps

from harness.processes import ROOT

DOC = ROOT / "docs" / "architecture.md"
SKIP = {".git", ".venv", "node_modules", "__pycache__", "var", "build"}
# A file or folder: words joined by "/", ending in ".py" or "/", not part of a URL path or a longer name.
PATH = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+(?:\.py|/))(?![\w/])")
# A dotted name: lower-case first part (a module), at least one more part.
DOTTED = re.compile(r"(?<![\w./-])([a-z_][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?![\w(/-])")


def dotted_names(text: str) -> list[str]:
    return [name for name in DOTTED.findall(text) if not name.endswith(".py")]


def project_paths() -> set[str]:
    paths = set()
    for path in ROOT.rglob("*"):
        parts = path.relative_to(ROOT).parts
        if SKIP & set(parts) or parts[0].startswith("."):
            continue
        paths.add("/".join(parts) + ("/" if path.is_dir() else ""))
    return paths


def project_modules(paths: set[str]) -> set[str]:
    modules = set()
    for path in paths:
        if path.endswith(".py") and not path.startswith(("tests/", "bench/", "docs/")):
            modules.add(path[: -len(".py")].removesuffix("/__init__").replace("/", "."))
    return modules


def resolves(name: str, modules: set[str]) -> bool:
    """Whether `name` is a project module, or names what one defines, read from its first part
    (a module's full dotted name, or the end of one: `services.job_create`, `speakers.speech`)."""
    parts = name.split(".")
    for module in sorted(m for m in modules if m == parts[0] or m.endswith("." + parts[0])):
        rest, current = parts[1:], module
        while rest and f"{current}.{rest[0]}" in modules:
            current = f"{current}.{rest.pop(0)}"
        value = importlib.import_module(current)
        try:
            for attribute in rest:
                value = getattr(value, attribute)
        except AttributeError:
            continue
        return True
    return False


def test_every_file_and_folder_the_map_names_exists():
    paths = project_paths()
    named = set(PATH.findall(DOC.read_text()))
    missing = sorted(p for p in named if p not in paths and not any(q.endswith("/" + p) for q in paths))
    assert missing == [], f"docs/architecture.md names what is not there: {missing}"


def test_every_dotted_name_the_map_gives_is_in_the_code():
    modules = project_modules(project_paths())
    text = DOC.read_text()
    first_parts = {m.rsplit(".", 1)[-1] for m in modules}
    named = {name for name in dotted_names(text) if name.split(".")[0] in first_parts}
    assert len(named) > 20, "the pattern reads the map's dotted names"
    missing = sorted(name for name in named if not resolves(name, modules))
    assert missing == [], f"docs/architecture.md gives names the code does not have: {missing}"


def test_every_app_has_its_room_in_the_map():
    rooms = set(re.findall(r"^(\w+)/ ", DOC.read_text(), flags=re.M))
    ours = {config.name for config in apps.get_app_configs() if (ROOT / config.name).is_dir()}
    assert ours - rooms == set(), f"apps without a room in docs/architecture.md: {ours - rooms}"
    count = "zero one two three four five six seven eight nine ten eleven twelve".split()[len(ours)]
    assert f"{count} apps" in DOC.read_text().split("## ")[0], f"the opening counts the {count} apps"


def test_the_checks_catch_a_stale_map():
    modules = project_modules(project_paths())
    assert not resolves("transcription.api.doors.views.parse_body", modules)
    assert not resolves("api.doors.views.parse_body", modules)
    assert resolves("transcription.events.signals.job_ended", modules)
    assert resolves("services.job_create", modules)
    stale = "nowhere/ `transcription.api.doors.views.parse_body` gone.py, see /v1/api/subtitles and docs/x.md"
    assert set(PATH.findall(stale)) == {"nowhere/", "gone.py"}
    assert dotted_names(stale) == ["transcription.api.doors.views.parse_body"]


def test_the_decisions_index_lists_every_topic_and_every_decision():
    """docs/decisions.md is the index of docs/decisions/: every topic file and every decision (a
    `## ` heading outside code) in it is linked, and nothing it links is missing."""
    index = (ROOT / "docs" / "decisions.md").read_text()
    linked = set(re.findall(r"\]\(decisions/([\w.-]+\.md)(?:#[^)]*)?\)", index))
    topics = {path.name for path in (ROOT / "docs" / "decisions").glob("*.md")}
    assert linked == topics
    for topic in topics:
        text, fence, headings = (ROOT / "docs" / "decisions" / topic).read_text(), False, []
        for line in text.splitlines():
            fence = fence != line.startswith("```")
            if not fence and line.startswith("## "):
                headings.append(line[3:].strip())
        missing = [heading for heading in headings if f"[{heading}](decisions/{topic}#" not in index]
        assert missing == [], f"docs/decisions.md does not list these decisions of {topic}: {missing}"
