"""Every HTML page sends a Content-Security-Policy that allows same-origin script only, and keeps to
it: no inline script or style, every script and stylesheet served by this server (issue 16)."""

import re

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders

from accounts.services import account_create
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-42"


def directives(response) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    return {name: values for name, *values in (part.split() for part in policy.split(";") if part.strip())}


def assert_keeps_to_the_policy(client, response, path):
    assert response.status_code in (200, 404), (path, response.status_code)
    assert response["Content-Type"].startswith("text/html"), path
    policy = directives(response)
    assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"], path
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"], path
    assert policy["frame-ancestors"] == ["'none'"], path
    page = response.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page), f"inline script on {path}"
    assert not re.search(r"<style\b|\sstyle=|\son[a-z]+=", page), f"inline style or handler on {path}"
    assets = re.findall(r'<script[^>]*\ssrc="([^"]+)"', page) + re.findall(r'<link[^>]*\shref="([^"]+)"', page)
    for asset in assets:
        assert asset.startswith("/") and not asset.startswith("//"), f"{path} loads {asset} from elsewhere"
        if asset.startswith(settings.STATIC_URL):
            # WhiteNoise serves these from collectstatic's folder, which the tests do not fill.
            assert finders.find(asset.removeprefix(settings.STATIC_URL).split("?")[0]), f"{path}: no {asset}"
        else:
            assert client.get(asset).status_code == 200, f"{path} loads {asset}, which is not served"


def test_the_public_pages_and_the_api_docs(client):
    for path in ("/", "/account/login/", "/account/signup/", "/v1/api/docs", "/admin/login/", "/no"):
        assert_keeps_to_the_policy(client, client.get(path), path)
    resets = ("/account/password/reset/", "/account/password/reset/sent/", "/account/password/reset/done/")
    for path in (*resets, "/account/password/reset/MQ/not-a-token/"):  # the last: the bad link's page
        response = client.get(path, follow=True)
        assert response.status_code == 200, path
        assert_keeps_to_the_policy(client, response, path)


def test_the_docs_run_swagger_ui_from_this_server(client):
    page = client.get("/v1/api/docs").content.decode()
    scripts = re.findall(r'<script[^>]*\ssrc="([^"]+)"', page)
    assert any("swagger-ui-bundle" in src for src in scripts)
    assert all(src.startswith("/static/") or src.startswith("/v1/api/docs") for src in scripts), scripts
    assert "cdn" not in page.lower() and "unpkg" not in page and "jsdelivr" not in page


def test_the_account_holder_pages(client):
    account = account_create("csp@example.com", password=PASSWORD)
    client.force_login(account.user)
    job = JobFactory(account=account, state="done", txt="[00:00:00] Speaker 1: Hello.")
    for path in ("/jobs/", "/jobs/new/", f"/jobs/{job.pk}/", "/live/", "/account/api/", "/account/password/change/"):
        assert_keeps_to_the_policy(client, client.get(path), path)
    # The page that shows a new token (its Copy button was an inline script).
    created = client.post("/account/api/token/")
    assert_keeps_to_the_policy(client, created, "/account/api/token/")
    assert "copy_token.js" in created.content.decode()


def test_the_support_pages(support_client, account):
    for path in ("/admin/", "/admin/accounts/account/", f"/admin/accounts/account/{account.pk}/change/"):
        assert_keeps_to_the_policy(support_client, support_client.get(path), path)


def test_json_answers_carry_the_policy_too(api):
    assert "script-src 'self'" in api.get("/v1/api/openapi.json")["Content-Security-Policy"]
