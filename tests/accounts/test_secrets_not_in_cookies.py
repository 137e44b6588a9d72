"""A token or a webhook signing secret is never sent in a cookie (issue 55): not as written, not
base64- or signed-and-compressed as Django's cookie message storage would write it. Every page that
makes one is walked: the holder's API page (token, webhook) and support's admin actions, whose
secret is shown in a message after the redirect (MESSAGE_STORAGE keeps messages in the session)."""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from urllib.parse import unquote

import pytest
from django.test import override_settings
from django.urls import reverse

from tests.staff import support_client, support_user  # noqa: F401 (fixtures)
from webhooks.models import Endpoint

SECRET = re.compile(r"(vts|whsec)_[A-Za-z0-9_+/=-]+")
PRIVATE_OK = override_settings(ALLOW_PRIVATE_URLS=True)


def readable(value: str) -> str:
    """A cookie's value as written, and each of its pieces base64-decoded (and inflated, as a
    signed and compressed value of django.core.signing is): what anyone holding it can read."""
    value = unquote(value).strip('"')
    texts = [value]
    for piece in re.split(r"[:.]", value):
        try:
            raw = base64.urlsafe_b64decode(piece + "=" * (-len(piece) % 4))
        except (binascii.Error, ValueError):
            continue
        try:
            raw = zlib.decompress(raw)
        except zlib.error:
            pass
        texts.append(raw.decode("utf-8", "replace"))
    return "\n".join(texts)


def assert_not_in_cookies(response, client, secret: str) -> None:
    cookies = [*response.cookies.values(), *client.cookies.values()]
    for cookie in cookies:
        assert secret not in readable(cookie.value), f"{secret[:8]}… travels in the {cookie.key} cookie"
    assert secret[8:] not in str([readable(c.value) for c in cookies])  # not even without its prefix


def test_readable_reads_what_the_cookie_storage_would_write(rf):
    """The check can fail: a message in Django's default cookie storage is read back."""
    from django.contrib.messages.storage.base import Message
    from django.contrib.messages.storage.cookie import CookieStorage

    secret = "vts_" + "s3cret" * 8
    encoded = CookieStorage(rf.get("/"))._encode([Message(25, f"New API token: {secret} " * 20)])
    assert secret not in encoded and secret in readable(encoded)


def _follow(client, response):
    assert response.status_code == 302, response.status_code
    return client.get(response["Location"])


@pytest.mark.parametrize("action", ["issue_token", "replace_token"])
def test_a_token_support_makes_is_shown_but_never_in_a_cookie(support_client, account, token, action):  # noqa: F811
    if action == "issue_token":
        from accounts.services import token_revoke

        token_revoke(account)
    changelist = reverse("admin:accounts_account_changelist")
    response = support_client.post(changelist, {"action": action, "_selected_action": [account.pk]})
    page = _follow(support_client, response)
    new = SECRET.search(page.content.decode()).group(0)  # shown once, on the page the action lands on
    assert new != token
    assert_not_in_cookies(response, support_client, new)
    assert_not_in_cookies(page, support_client, new)


@PRIVATE_OK
def test_a_signing_secret_support_makes_is_shown_but_never_in_a_cookie(support_client, account):  # noqa: F811
    response = support_client.post(
        reverse("admin:webhooks_endpoint_add"), {"account": account.pk, "url": "https://hooks.example.com/a"}
    )
    page = _follow(support_client, response)
    made = SECRET.search(page.content.decode()).group(0)
    assert made == Endpoint.objects.get().secret
    assert_not_in_cookies(response, support_client, made)
    response = support_client.post(
        reverse("admin:webhooks_endpoint_changelist"),
        {"action": "rotate_secret", "_selected_action": [Endpoint.objects.get().pk]},
    )
    page = _follow(support_client, response)
    rotated = SECRET.search(page.content.decode()).group(0)
    assert rotated != made and rotated == Endpoint.objects.get().secret
    assert_not_in_cookies(response, support_client, rotated)


@PRIVATE_OK
def test_the_holders_own_token_and_secret_are_shown_but_never_in_a_cookie(client, account):
    client.force_login(account.user)
    response = client.post(reverse("accounts:token-create"))
    made = SECRET.search(response.content.decode()).group(0)
    assert_not_in_cookies(response, client, made)
    response = client.post(reverse("webhooks:edit"), {"url": "https://hooks.example.com/b"})
    secret = SECRET.search(response.content.decode()).group(0)
    assert secret == Endpoint.objects.get().secret
    assert_not_in_cookies(response, client, secret)
