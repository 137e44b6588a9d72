"""The account holder's API page, through Django's test client (the browser tests drive it for real)."""

import re

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import ApiToken
from accounts.services import account_create, token_issue
from accounts.tokens import token_digest
from audit.models import AuditEvent
from billing.services import grant_staff_minutes
from transcription.writes import services

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-42"
API = "/account/api/"


@pytest.fixture
def holder(client):
    account = account_create("carol@example.com", password=PASSWORD)
    client.force_login(account.user)
    return account


def shown_token(response):
    match = re.search(r'id="new-token"[^>]*value="(vts_[^"]+)"', response.content.decode())
    return match.group(1) if match else None


@pytest.mark.parametrize(
    "body,error",
    [
        ({"email": "eve@example.com", "password": "password"}, "too common"),
        ({"email": "eve@example.com", "password": "x1"}, "too short"),
        ({"email": "eve.smith@example.com", "password": "eve.smith@example.com"}, "too similar to the"),
        ({"email": "eve@example.com", "password": " " * 8}, "only spaces"),
        ({"email": "eve@example.com", "password": "aaaabbbbaaaa"}, "at least 4 different characters"),
        ({"email": "eve@example.com", "password": "4815162342108"}, "entirely numeric"),
        ({"email": "not-an-email", "password": PASSWORD}, "valid email"),
    ],
)
def test_sign_up_refuses_bad_input(client, body, error):
    account_create("carol@example.com", password=PASSWORD)
    response = client.post("/account/signup/", body)
    assert response.status_code == 200 and error in response.content.decode().replace("&#x27;", "'")
    assert get_user_model().objects.count() == 1


def test_sign_in_with_email_and_password_and_out(client):
    account_create("carol@example.com", password=PASSWORD)
    response = client.post("/account/login/", {"username": "carol@example.com", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == API
    assert client.post("/account/logout/").status_code == 302
    assert client.get(API)["Location"].startswith("/account/login/?next=")


def test_the_page_needs_a_login(client):
    response = client.get(API)
    assert response.status_code == 302 and response["Location"] == "/account/login/?next=/account/api/"


def test_forms_are_csrf_protected(holder):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(holder.user)
    assert strict.post("/account/api/token/").status_code == 403
    assert not ApiToken.objects.exists()


def test_a_created_token_is_shown_once_and_works(client, holder):
    response = client.post("/account/api/token/")
    token = shown_token(response)
    assert token and ApiToken.objects.get(account=holder).digest == token_digest(token)
    assert "no-store" in response["Cache-Control"]
    assert 'aria-live="polite"' in response.content.decode() and "Copy token" in response.content.decode()
    page = client.get(API).content.decode()
    assert token not in page and token[:12] in page
    assert (
        client.get(
            "/v1/api/transcription/00000000-0000-0000-0000-000000000000", HTTP_AUTHORIZATION=f"Bearer {token}"
        ).status_code
        == 404
    )
    event = AuditEvent.objects.get()
    assert (event.action, event.actor) == ("token_issued", holder.user)


def test_create_never_replaces_an_existing_token(client, holder):
    token = token_issue(holder)
    response = client.post("/account/api/token/", follow=True)
    assert shown_token(response) is None and "already have a token" in response.content.decode()
    assert ApiToken.objects.get(account=holder).digest == token_digest(token)


@pytest.mark.parametrize("action", ["replace", "revoke"])
def test_replace_and_revoke_need_confirmation(client, holder, action):
    token = token_issue(holder)
    url = f"/account/api/token/{action}/"
    confirm_page = client.get(url)
    assert confirm_page.status_code == 200 and 'name="confirm" value="yes"' in confirm_page.content.decode()
    assert client.post(url).status_code == 200  # no confirm field: the question again, nothing done
    assert client.post(url, {"confirm": "no"}).status_code == 200
    assert ApiToken.objects.get(account=holder).digest == token_digest(token)

    response = client.post(url, {"confirm": "yes"}, follow=True)
    if action == "replace":
        new = shown_token(response)
        assert new and new != token and ApiToken.objects.get(account=holder).digest == token_digest(new)
    else:
        assert not ApiToken.objects.filter(account=holder).exists() and "revoked" in response.content.decode()
    event = AuditEvent.objects.latest("id")
    assert (event.action, event.actor) == (f"token_{action}d", holder.user)


def test_the_page_shows_balance_usage_and_recent_jobs(client, holder):
    grant_staff_minutes(holder, 5, reason="Thanks for the bug report")
    jobs = [services.job_create(holder, url=f"https://example.com/{n}", type="transcript") for n in range(22)]
    services.job_fail(jobs[-1].id, "The video is private.")
    response = client.get(API)
    html = response.content.decode()
    assert re.search(r'id="balance">\s*15 minutes', html)
    assert "Thanks for the bug report" in html and "+5 minutes" in html and "Sign-up allowance" in html
    assert len(response.context["jobs"]) == 20 and response.context["jobs"][0] == jobs[-1]
    assert "The video is private." in html and str(jobs[0].id) not in html


def test_a_staff_login_without_an_account_gets_a_friendly_page(client):
    staff = get_user_model().objects.create_user("staff@example.com", email="staff@example.com", is_staff=True)
    client.force_login(staff)
    response = client.get(API)
    assert response.status_code == 200 and "has no API account" in response.content.decode()
    assert client.post("/account/api/token/").status_code == 302
    assert client.get("/account/api/token/revoke/").status_code == 302
    assert not ApiToken.objects.exists()


def test_the_page_is_readable_on_a_phone(client, holder):
    html = client.get(API).content.decode()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert "/static/website/base.css" in html  # the frame's stylesheet, with its phone layout
    assert "@media (max-width: 40rem)" in (settings.BASE_DIR / "website/static/website/base.css").read_text()
    assert not re.search(r'(src|href)="(https?:)?//', html), "nothing loads from elsewhere"
