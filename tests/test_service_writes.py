"""Services own every write (docs/architecture.md): no `.save()`, `.create()`, `.update()`,
`.delete()` or their bulk forms on a project model outside a `services.py` or `<topic>_services.py` (and migrations). The
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
            # a services module of its own (edit_services.py: a transcript's corrections) is a service too
            if "/migrations/" in relative or path.name.endswith("services.py"):
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
