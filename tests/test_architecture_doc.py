"""docs/architecture.md is the map a newcomer trusts: every file or folder it names exists, every
dotted name it gives (`services.job_create`, `transcription.events.signals.job_ended`) is a module or
something a module defines, and every app of INSTALLED_APPS has its room in it."""

from __future__ import annotations

import ast
import importlib
import re
import tomllib

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


# From names to claims: a few sentences of the map that say what the code does, each checked
# against the code it names. A sentence changed in the doc fails `says` until its check follows.


def says(sentence: str, document=DOC) -> None:
    """The doc still makes this claim (line breaks and indentation read as one space)."""
    assert sentence in " ".join(document.read_text().split()), f"{document.name} no longer says: {sentence}"


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def contract(source: str, forbidden: str) -> dict:
    """The import-linter contract that forbids `source` to import `forbidden`."""
    found = [
        c
        for c in pyproject()["tool"]["importlinter"]["contracts"]
        if c.get("type") == "forbidden" and source in c["source_modules"] and forbidden in c["forbidden_modules"]
    ]
    assert found, f"no contract forbids {source} to import {forbidden}"
    return found[0]


def test_the_tasks_are_thin_they_run_a_stage_then_dispatch():
    says("tasks.py (Celery tasks, thin: run a stage, then dispatch)")
    tree = ast.parse((ROOT / "transcription" / "tasks.py").read_text())
    tasks = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any("shared_task" in ast.unparse(decorator) for decorator in node.decorator_list)
    ]
    assert len(tasks) >= 6
    for task in tasks:
        body = [s for s in task.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        assert len(body) == 1 and isinstance(body[0], (ast.Return, ast.Expr)), f"{task.name} is not one call"
        assert isinstance(body[0].value, ast.Call), f"{task.name} does more than call a stage"
    assert "objects" not in ast.unparse(tree) and ".save(" not in ast.unparse(tree), "a task writes a model itself"


def test_every_write_goes_through_the_services_and_a_test_walks_for_it():
    says("every write (no door or stage writes a model itself: tests/test_service_writes.py)")
    tree = ast.parse((ROOT / "tests" / "test_service_writes.py").read_text())
    tests = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert {"test_only_services_write_models", "test_a_state_is_written_only_by_its_one_module"} <= tests


def test_the_pipeline_imports_neither_django_celery_nor_any_app():
    says("`pipeline/` imports neither Django, Celery nor any app.")
    rule = contract("transcription.pipeline", "django")
    ours = {config.name for config in apps.get_app_configs() if (ROOT / config.name).is_dir()} - {"transcription"}
    outside = {
        f"transcription.{path.stem}"
        for path in (ROOT / "transcription").iterdir()
        if path.name not in ("__init__.py", "pipeline", "migrations", "__pycache__")
        and (path.suffix == ".py" or (path / "__init__.py").exists())
    }
    missing = ({"django", "celery", "config"} | ours | outside) - set(rule["forbidden_modules"])
    assert missing == set(), f"the pipeline's contract does not forbid {sorted(missing)}"


def test_only_celery_imports_the_tasks_and_the_service_never_imports_the_tests():
    says("Only Celery imports `tasks.py`")
    says("Nothing of the service imports `harness`, `tests` or `bench`.")
    for source in ("transcription.stages", "transcription.writes", "transcription.api"):
        contract(source, "transcription.tasks")
    ours = {config.name for config in apps.get_app_configs() if (ROOT / config.name).is_dir()}
    for source in ours | {"config"}:
        for forbidden in ("harness", "tests", "bench"):
            contract(source, forbidden)


def test_a_test_proves_the_web_processes_keep_the_speech_stack_out():
    says("`tests/test_web_processes.py` proves that faster_whisper, ctranslate2, av and numpy stay out of them")
    text = (ROOT / "tests" / "test_web_processes.py").read_text()
    assert "def test_a_web_process_never_imports_the_speech_stack" in text
    for module in ("faster_whisper", "ctranslate2", "av", "numpy"):
        assert f'"{module}"' in text, f"tests/test_web_processes.py does not look for {module}"


def test_no_module_is_excused_from_mypy_and_the_doc_names_the_services_not_strict_yet():
    says("mypy (every module passes it, none excused by `ignore_errors`")
    decision = ROOT / "docs" / "decisions" / "project.md"
    says("No module is excused with `ignore_errors`", decision)
    overrides = pyproject()["tool"]["mypy"]["overrides"]
    assert [o["module"] for o in overrides if o.get("ignore_errors")] == []
    strict = next(o["module"] for o in overrides if o.get("disallow_untyped_defs"))
    assert "transcription.pipeline.*" in strict
    services = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in ROOT.glob("*/**/*services.py")
        if path.relative_to(ROOT).parts[0] not in ("build", "tests", "bench")  # build/: a wheel's copy
        and not path.relative_to(ROOT).parts[0].startswith(".")
    }
    named = set(re.findall(r"`([\w.]+)`", decision.read_text().split("Not strict yet", 1)[1].split("No module", 1)[0]))
    assert services - set(strict) == named - {"transcription.writes.claims"}, "the services not strict yet"
    assert "transcription.writes.claims" not in strict


def test_every_setting_is_read_in_settings_but_the_listed_readers():
    says("a row in `docs/operating.md`'s table (`tests/test_readme.py`)")
    says(
        "the few other readers of the environment, each with its reason, are `ALLOWED` in `tests/test_environment_reads.py`"
    )
    tree = ast.parse((ROOT / "tests" / "test_environment_reads.py").read_text())
    allowed = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "ALLOWED" for t in node.targets)
    )
    assert isinstance(allowed, ast.Dict) and "config/settings.py" in [ast.literal_eval(k) for k in allowed.keys]
    assert (
        "def test_every_setting_config_reads_is_in_the_operating_table_once"
        in (ROOT / "tests" / "test_readme.py").read_text()
    )


def test_a_module_is_under_500_lines():
    says("a limit of 500 lines a module")
    assert re.search(r"^MAX_LINES=500$", (ROOT / "bin" / "lint").read_text(), re.M)


def test_a_job_end_is_announced_by_job_finish_and_job_fail_only():
    says("services.job_finish` / `job_fail`, the only senders, send", ROOT / "docs" / "decisions" / "webhooks.md")
    senders = []
    for path in ROOT.glob("*/**/*.py"):
        parts = path.relative_to(ROOT).parts
        if parts[0].startswith((".", "tests", "bench", "harness", "build")) or "migrations" in parts:
            continue
        if "job_ended.send(" in path.read_text():
            senders.append(path.relative_to(ROOT).as_posix())
    assert senders == ["transcription/writes/services.py"]
    tree = ast.parse((ROOT / "transcription" / "writes" / "services.py").read_text())
    callers = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and "_announce_end(job)" in ast.unparse(node)
        and node.name != "_announce_end"
    }
    assert callers == {"job_finish", "job_fail"}


# The claims below are read from the code itself (its imports, its settings), not from the
# contracts that name them: the code does what the sentence says.


def imported_modules(path) -> set[str]:
    """Every module a file imports, at its top or inside a function, relative imports resolved."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def service_files(*folders: str):
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            if "migrations" not in path.parts and "__pycache__" not in path.parts:
                yield path


def test_beat_runs_the_sweeper_each_minute_webhooks_each_30_s_and_renewals_and_retention_hourly():
    says(
        "`celery beat` runs the sweeper (every minute), webhook events that are due (every 30 s), plan "
        "renewals and file retention (hourly)."
    )
    from django.conf import settings

    every = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert every["webhooks.tasks.send_due_messages"] == 30.0
    assert every["billing.tasks.renew_plans"] == 3600.0
    assert every["transcription.tasks.delete_expired_artifacts"] == 3600.0
    sweep = ast.unparse(ast.parse((ROOT / "config" / "settings.py").read_text()))
    assert "'SWEEP_INTERVAL_SECONDS', default=60.0" in sweep, "the sweeper's default interval is a minute"
    assert "transcription.tasks.sweep_stalled_jobs" in every


def test_each_task_runs_on_the_queue_the_table_gives_it():
    """The "Queues and processes" table: each task named in a row is routed to that row's queue."""
    import fnmatch

    from django.conf import settings

    table = DOC.read_text().split("## Queues and processes", 1)[1].split("\n\n", 2)[1]
    rows = [line.split("|")[1:3] for line in table.splitlines()[2:]]
    assert len(rows) == 4

    def queue_of(task: str) -> str:
        return next(route["queue"] for key, route in settings.CELERY_TASK_ROUTES.items() if fnmatch.fnmatch(task, key))

    tasks = importlib.import_module("transcription.tasks")
    webhook_tasks = importlib.import_module("webhooks.tasks")
    seen = 0
    for queue_cell, tasks_cell in rows:
        queue = queue_cell.strip().strip("`")
        for name in re.findall(r"`(\w+)`", tasks_cell):
            module = "transcription.tasks" if hasattr(tasks, name) else "webhooks.tasks"
            assert hasattr(tasks, name) or hasattr(webhook_tasks, name), f"no task {name}"
            assert queue_of(f"{module}.{name}") == queue, f"{name} does not run on {queue}"
            seen += 1
    assert seen == 7, "the table names seven tasks"


def test_tasks_are_sent_by_name_from_dispatch_only():
    says("they send tasks by name (`dispatch.py`)")
    senders, direct = [], []
    for path in service_files("transcription"):
        text = path.read_text()
        if "send_task(" in text:
            senders.append(path.relative_to(ROOT).as_posix())
        if ".delay(" in text or ".apply_async(" in text:
            direct.append(path.relative_to(ROOT).as_posix())
    assert senders == ["transcription/scheduling/dispatch.py"]
    assert direct == [], f"these call a task object instead of sending it by name: {direct}"


def test_no_app_imports_monitoring_or_the_website_in_its_code():
    says("`monitoring` reads every app's rows for /metrics; no app imports it.")
    says("`website` sits above every app")
    says("nothing imports it.")
    for app in ("accounts", "audit", "billing", "transcription", "webhooks", "website"):
        for path in service_files(app):
            names = {name.split(".")[0] for name in imported_modules(path)}
            assert "monitoring" not in names, f"{path.relative_to(ROOT)} imports monitoring"
            if app != "website":
                assert "website" not in names, f"{path.relative_to(ROOT)} imports the website"


def test_audit_depends_on_no_other_app():
    says("`audit` depends on no other app")
    others = {"accounts", "billing", "transcription", "webhooks", "website", "monitoring"}
    for path in service_files("audit"):
        names = {name.split(".")[0] for name in imported_modules(path)}
        assert names & others == set(), f"{path.relative_to(ROOT)} imports {sorted(names & others)}"


def test_inside_the_api_doors_lead_to_front_and_front_to_wire_never_back():
    says("inside `transcription/api/`: doors -> front -> wire")
    above = {"front": {"transcription.api.doors"}, "wire": {"transcription.api.doors", "transcription.api.front"}}
    for layer, forbidden in above.items():
        for path in service_files(f"transcription/api/{layer}"):
            back = {n for n in imported_modules(path) if any(n == f or n.startswith(f + ".") for f in forbidden)}
            assert back == set(), f"{path.relative_to(ROOT)} imports upward: {sorted(back)}"


def test_the_voice_print_model_imports_nothing_and_names_the_encoders_space():
    says("voice_print_model.py (which encoder made the voice prints, importing nothing, for the web process)")
    path = ROOT / "transcription" / "pipeline" / "voice_print_model.py"
    assert imported_modules(path) - {"__future__", "__future__.annotations"} == set()
    from transcription.pipeline import voice_print_model
    from transcription.pipeline.speakers.encoding import campplus

    assert voice_print_model.VOICE_PRINT_MODEL == campplus.VOICE_PRINT_MODEL


def test_the_upload_probe_needs_the_standard_library_only():
    """What the web process runs on an upload reaches no third-party module, however deep."""
    says("media_probe.py (is an upload audio or video we can transcribe: standard library only, the web runs it)")
    import sys

    todo, seen = ["transcription.pipeline.media.media_probe"], set()
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = ROOT / (module.replace(".", "/") + ".py")
        for name in imported_modules(path):
            top = name.split(".")[0]
            if top == "__future__" or top in sys.stdlib_module_names:
                continue
            assert top == "transcription", f"{module} imports {name}, not the standard library"
            if (ROOT / (name.replace(".", "/") + ".py")).exists():
                todo.append(name)
    assert "transcription.pipeline.media.ffmpeg_commands" in seen


def test_the_suite_runs_after_lint_on_redis_database_15_by_default():
    says("`make test` = `make lint`, then pytest on the real PostgreSQL and Redis (database 15 of its own by default)")
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\ntest: ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert [line.strip().split()[0] for line in recipe] == ["bin/lint", "bin/test"]
    assert re.search(
        r'^export REDIS_URL="\$\{REDIS_URL:-redis://127\.0\.0\.1:6379/15\}"$', (ROOT / "bin" / "test").read_text(), re.M
    )


def test_no_package_keeps_more_than_16_modules_loose_at_its_root():
    says("No folder keeps more than 16 modules loose beside its `__init__.py`")
    crowded = {}
    for init in ROOT.rglob("__init__.py"):
        folder = init.parent
        parts = folder.relative_to(ROOT).parts
        if not parts or SKIP & set(parts) or parts[0].startswith((".", "tests", "bench")) or "migrations" in parts:
            continue
        loose = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(loose) > 16:
            crowded["/".join(parts)] = len(loose)
    assert not crowded, crowded
    assert any((ROOT / "transcription" / name / "__init__.py").exists() for name in ("writes", "scheduling"))
