"""The Live page (/live/) and its live keys (accounts.authentication, live keys), without a browser: the page is
the signed-in holder's and holds no API token; a key is made for a POST with the CSRF token only;
the live door's front door takes a fresh key, and refuses one expired, one of a deactivated login,
one made before the password changed, and a key anywhere but the live door. The page in Chromium
with a fake microphone is tests/e2e/test_live_page_browser.py."""

import time
import uuid

import pytest
from django.test import Client

from accounts.authentication import LIVE_KEY_PREFIX, LIVE_KEY_SECONDS, new_live_key
from accounts.services import account_deactivate, token_issue
from transcription.api.front import front_door
from transcription.api.wire.error_bodies import AuthenticationFailed

pytestmark = pytest.mark.django_db


def test_the_page_is_the_signed_in_holders_and_holds_no_token(client, account):
    assert client.get("/live/").status_code == 302  # to the sign-in
    token = token_issue(account)
    client.force_login(account.user)
    page = client.get("/live/").content.decode()
    assert 'id="live-toggle"' in page and "live.js" in page
    assert 'href="/live/"' in client.get("/jobs/").content.decode(), "the navigation links to it"
    assert token not in page and "vts_" not in page and LIVE_KEY_PREFIX not in page


def test_a_key_is_made_for_a_post_with_the_csrf_token_and_lasts_minutes(account):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(account.user)
    assert browser.post("/live/key").status_code == 403, "no CSRF token"
    assert browser.get("/live/key").status_code == 405
    csrf = str(browser.get("/live/").context["csrf_token"])
    answer = browser.post("/live/key", HTTP_X_CSRFTOKEN=csrf).json()
    assert answer["value"].startswith(LIVE_KEY_PREFIX)
    assert 0 < answer["expires_at"] - time.time() <= LIVE_KEY_SECONDS
    caller = front_door.caller_from_token(f"Bearer {answer['value']}", "127.0.0.1", front_door.REALTIME)
    assert (caller.account_id, caller.user_id) == (account.pk, account.user_id)
    anonymous = Client()
    assert anonymous.post("/live/key").status_code == 302


def refusal(key: str, transport: str = front_door.REALTIME) -> str:
    with pytest.raises(AuthenticationFailed) as refused:
        front_door.caller_from_token(f"Bearer {key}", "127.0.0.1", transport)
    return str(refused.value.detail)


def test_an_expired_key_is_refused(account):
    key, expires_at = new_live_key(account, made_at=time.time() - LIVE_KEY_SECONDS - 2)
    assert expires_at < time.time()
    assert "expired" in refusal(key)
    assert "Invalid live key" in refusal(key[:-3] + "abc"), "a signature altered"


def test_a_deactivated_logins_key_is_refused(account):
    key, _ = new_live_key(account)
    account_deactivate(account, reason="test")
    assert "deactivated" in refusal(key)


def test_a_key_made_before_the_password_changed_is_refused(account):
    key, _ = new_live_key(account)
    account.user.set_password("a-new-password-42")
    account.user.save()
    assert "password changed" in refusal(key)


def test_only_the_live_door_takes_a_key(account, client):
    key, _ = new_live_key(account)
    assert "Malformed API token" in refusal(key, front_door.REST)
    answer = client.get(f"/v1/api/transcription/{uuid.uuid4()}", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert answer.status_code == 401
