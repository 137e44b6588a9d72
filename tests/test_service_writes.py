"""Services own every write (docs/architecture.md): no `.save()`, `.create()`, `.update()`,
`.delete()` or their bulk forms on a project model outside a service module (`services.py`, or
`<topic>_services.py` where an app's services.py would grow past its size) and migrations. The
few places that write elsewhere are listed here, each with why; a new one fails this test."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("accounts", "audit", "billing", "config", "monitoring", "transcription", "webhooks", "website")
WRITES = {"save", "create", "update", "delete", "bulk_create", "bulk_update", "get_or_create", "update_or_create"}

# (file, the call as written) -> why it may write outside a service
ALLOWED = {
    ("accounts/authentication.py", "ApiToken.objects.filter(pk=api_token.pk).update(last_used_at=now)"): (
        "bookkeeping of a token's last use on authentication's hot path, at most once a minute; no rule "
        "of the account depends on it, and accounts' services sit above authentication"
    ),
    ("billing/models.py", "super().save(*args, **kwargs)"): "the ledger's own append-only guard around save",
}
# Calls named like writes on things that are not models.
NOT_MODELS = {"default_storage", "subs"}


def _receiver_names(node: ast.AST) -> set[str]:
    names = set()
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        node = node.func if isinstance(node, ast.Call) else node.value
    if isinstance(node, ast.Name):
        names.add(node.id)
    return names


def model_writes_outside_services() -> list[tuple[str, str]]:
    found = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "/migrations/" in relative or path.name == "services.py" or path.name.endswith("_services.py"):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                if node.func.attr not in WRITES:
                    continue
                receiver = _receiver_names(node.func.value)
                if receiver & NOT_MODELS:
                    continue
                if "objects" in receiver or node.func.attr == "save":
                    found.append((relative, ast.unparse(node)))
    return found


def test_only_services_write_models():
    stray = [write for write in model_writes_outside_services() if write not in ALLOWED]
    assert not stray, "model writes outside a service (move them into one, or list why here):\n" + "\n".join(
        f"{path}: {call}" for path, call in stray
    )


def test_every_listed_exception_still_exists():
    found = set(model_writes_outside_services())
    assert set(ALLOWED) <= found, set(ALLOWED) - found


# One path for each kind of write (issue 55): a record's state field is written by one module,
# which applies its rules, and nowhere else (not by a `.save()` after an attribute write, an
# `.update(state=...)`, a `create(state=...)` or a setattr). Jobs' and translations' `state` (and
# uploads') is written by transcription/writes/services.py under transcription/states.py's rules, the
# rework paths included (job_move / translation_move with rework=True); a recognition chunk's
# state is `done` with its claim's `lease_until`, compare-and-set in chunk_services.py (a job's
# claim, in services.py). Every module that ships or runs beside it is walked; tests build their
# rows as they need.
STATE_WRITERS = {
    "state": {"transcription/writes/services.py"},
    "done": {"transcription/writes/chunk_services.py"},
    "lease_until": {"transcription/writes/services.py", "transcription/writes/chunk_services.py"},
}
# (file, field) -> why another module writes it: not a job's, translation's or chunk's state
# changing, or rows made in a state as the tests' factories make them
OTHER_WRITERS = {
    ("webhooks/services.py", "state"): "a webhook message's delivery (the outbox): its own machine, one writer",
    (
        "transcription/pipeline/speakers/encoding/campplus.py",
        "state",
    ): "a graph builder's state dict of weights, no model",
    ("transcription/api/wire/error_bodies.py", "state"): "a 429's rate-limit window, no model",
    ("bench/edits/patch.py", "state"): "a benchmark's fixture: a done job made to be edited, never run",
    ("bench/polls/fixture.py", "state"): "a benchmark's fixture: jobs and translations made to be polled, never run",
}
SKIPPED = ("tests", ".venv", "node_modules", "build", "var")  # build/: a wheel's copy (tests/packaging)
CREATES = {"create", "get_or_create", "update_or_create", "update", "bulk_update"}


def _project_modules():
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in SKIPPED or relative.parts[0].startswith(".") or "migrations" in relative.parts:
            continue
        yield relative.as_posix(), ast.parse(path.read_text())


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    else:
        return []
    flat: list[ast.expr] = []
    for target in targets:
        flat.extend(target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target])
    return flat


def _constants(node: ast.AST) -> set[str]:
    """The field names a list, tuple or set of names (or a dict's keys) gives."""
    items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", [node])
    return {n.value for n in items if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def state_writes(tree: ast.AST) -> list[tuple[str, int, str]]:
    """(field, line, the code) for each write of a STATE_WRITERS field in `tree`."""
    found = []
    for node in ast.walk(tree):
        for target in _targets(node):
            if isinstance(target, ast.Attribute) and target.attr in STATE_WRITERS:
                found.append((target.attr, target.lineno, ast.unparse(node)))
        if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        fields = set()
        # update(state=...), create(state=...), defaults={"state": ...}, bulk_update(rows, ["state"])
        if name in CREATES:
            fields |= {k.arg for k in node.keywords if k.arg in STATE_WRITERS}
            for keyword in node.keywords:
                if keyword.arg in ("defaults", "create_defaults", "fields"):
                    fields |= _constants(keyword.value) & set(STATE_WRITERS)
            if name == "bulk_update" and len(node.args) > 1:
                fields |= _constants(node.args[1]) & set(STATE_WRITERS)
        if name == "save":  # save(update_fields=[..., "state"])
            fields |= {c for k in node.keywords if k.arg == "update_fields" for c in _constants(k.value)}
        if name == "setattr" and len(node.args) > 1:
            fields |= _constants(node.args[1])
        for field in sorted(fields & set(STATE_WRITERS)):
            found.append((field, node.lineno, ast.unparse(node)))
    return found


def stray_state_writes() -> list[str]:
    stray = []
    for relative, tree in _project_modules():
        for field, line, code in state_writes(tree):
            if relative in STATE_WRITERS[field] or (relative, field) in OTHER_WRITERS:
                continue
            stray.append(f"{relative}:{line}: {field}: {code}")
    return stray


def test_a_state_is_written_only_by_its_one_module():
    stray = stray_state_writes()
    assert not stray, "state written outside its one module (go through services.job_move/translation_move):\n" + (
        "\n".join(stray)
    )


def test_the_walk_finds_each_kind_of_state_write():
    """The walk itself can fail: each way of writing a state is found, and a read is not."""
    tree = ast.parse(
        "job.state = 'done'\n"
        "translation.state, translation.error = 'failed', 'x'\n"
        "Job.objects.filter(pk=1).update(state='done')\n"
        "Job.objects.create(account=a, state='done')\n"
        "Job.objects.update_or_create(pk=1, defaults={'state': 'done'})\n"
        "Job.objects.bulk_update(jobs, ['state'])\n"
        "job.save(update_fields=['state', 'updated_at'])\n"
        "setattr(job, 'state', 'done')\n"
        "RecognitionChunk.objects.filter(pk=1).update(done=True)\n"
        "Job.objects.filter(state='done').update(progress=3)\n"  # a read of state, a write of progress
        "if job.state == 'done': pass\n"
    )
    assert [(field, line) for field, line, _ in state_writes(tree)] == [
        ("state", 1),
        ("state", 2),
        ("state", 3),
        ("state", 4),
        ("state", 5),
        ("state", 6),
        ("state", 7),
        ("state", 8),
        ("done", 9),
    ]


def test_every_other_writer_listed_still_writes_its_state():
    found = {(relative, field) for relative, tree in _project_modules() for field, _, _ in state_writes(tree)}
    assert set(OTHER_WRITERS) <= found, set(OTHER_WRITERS) - found
