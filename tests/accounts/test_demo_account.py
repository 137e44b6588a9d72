"""`make run`'s demo token survives restarts, without the token itself in the database."""

import io
import stat
import uuid

import pytest
from django.core.management import call_command
from django.test import override_settings

from accounts.models import ApiToken
from accounts.services import token_revoke

pytestmark = pytest.mark.django_db


def demo_token() -> str:
    out = io.StringIO()
    call_command("demo_account", stdout=out)
    return out.getvalue().strip().splitlines()[-1]


def authenticates(client, token: str) -> bool:
    response = client.get(f"/v1/api/transcription/{uuid.uuid4()}", HTTP_AUTHORIZATION=f"Bearer {token}")
    return response.status_code == 404  # known token, unknown job (a bad token is a 401)


def test_it_prints_the_same_working_token_on_every_start(tmp_path, client):
    with override_settings(DATA_DIR=tmp_path):
        first = demo_token()
        second = demo_token()
    assert first == second and first.startswith("vts_")
    assert authenticates(client, second)
    kept = tmp_path / "demo-token"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600, "only the owner may read the kept token"
    assert not ApiToken.objects.filter(digest=first).exists(), "the database holds a digest, not the token"


def test_a_revoked_demo_token_is_replaced_by_a_new_one_that_works(tmp_path, client):
    with override_settings(DATA_DIR=tmp_path):
        old = demo_token()
        token_revoke(ApiToken.objects.get().account)
        new = demo_token()
    assert new != old
    assert authenticates(client, new) and not authenticates(client, old)
    assert (tmp_path / "demo-token").read_text().strip() == new
