"""Sign-up and sign-in against abuse: the free minutes and the first token only after the mailed
link is followed; sign-ups and failed sign-ins limited per client address (django-axes for
sign-ins). Django's test client; tests/accounts/test_browser.py drives the same in Chromium."""

import re

import pytest
from django.contrib.auth import get_user_model

from accounts.models import Account
from billing.models import LedgerEntry
from billing.selectors import account_balance

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-42"
API = "/account/api/"


def signup(client, email, password=PASSWORD, **headers):
    return client.post("/account/signup/", {"email": email, "password": password}, **headers)


def mailed_link(mailoutbox, email) -> str:
    message = [m for m in mailoutbox if m.to == [email]][-1]
    return re.search(r"http://testserver(/account/confirm/\S+/)", message.body).group(1)


def test_free_minutes_and_the_api_page_only_after_the_mailed_link(client, mailoutbox):
    response = signup(client, "dave@example.com")
    assert response.status_code == 200 and "We sent a link to" in response.content.decode()
    account = Account.objects.get(user__email="dave@example.com")
    assert not LedgerEntry.objects.filter(account=account).exists(), "no minutes before confirmation"
    assert client.get(API).status_code == 302, "not signed in"
    assert client.post("/account/api/token/").status_code == 302 and not hasattr(account, "api_token")
    refused = client.post("/account/login/", {"username": "dave@example.com", "password": PASSWORD})
    assert "Confirm your email address first" in refused.content.decode()

    link = mailed_link(mailoutbox, "dave@example.com")
    response = client.get(link, follow=True)
    assert response.redirect_chain[-1][0] == API
    assert response.context["user"].email == "dave@example.com" and "10 minutes" in response.content.decode()
    assert account_balance(account.pk) == 600

    client.logout()
    assert client.get(link).status_code == 400, "a link works once"
    assert account_balance(account.pk) == 600
    signed_in = client.post("/account/login/", {"username": "dave@example.com", "password": PASSWORD})
    assert signed_in.status_code == 302 and signed_in["Location"] == API


def test_signing_up_again_before_confirming_mails_a_new_link_and_keeps_the_first_password(client, mailoutbox):
    signup(client, "dave@example.com")
    assert signup(client, "dave@example.com", password="another-horse-battery-7").status_code == 200
    assert len(mailoutbox) == 2 and get_user_model().objects.filter(email="dave@example.com").count() == 1
    client.get(mailed_link(mailoutbox, "dave@example.com"))
    user = get_user_model().objects.get(email="dave@example.com")
    assert user.is_active and user.check_password(PASSWORD)
    again = signup(client.__class__(), "dave@example.com")
    assert "already exists" in again.content.decode()


def test_a_forged_link_confirms_nothing(client, mailoutbox):
    signup(client, "dave@example.com")
    link = mailed_link(mailoutbox, "dave@example.com")
    assert client.get(link[:-3] + "xx/").status_code == 400
    assert not get_user_model().objects.get(email="dave@example.com").is_active


def test_sign_ups_from_one_address_are_limited(client, settings, mailoutbox):
    settings.SIGNUPS_PER_HOUR = 2
    for number in range(2):
        assert signup(client, f"user{number}@example.com").status_code == 200
    # a client's own X-Forwarded-For changes nothing unless TRUST_PROXY_HEADERS
    refused = signup(client, "user2@example.com", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert refused.status_code == 429 and "Too many sign-ups from your address" in refused.content.decode()
    assert Account.objects.count() == 2 and len(mailoutbox) == 2
    assert signup(client, "user3@example.com", REMOTE_ADDR="198.51.100.4").status_code == 200

    settings.TRUST_PROXY_HEADERS = True  # the proxy appends the address it saw
    assert signup(client, "user4@example.com", HTTP_X_FORWARDED_FOR="127.0.0.1, 203.0.113.9").status_code == 200


def test_failed_sign_ins_lock_the_address_out_even_with_the_right_password(client, settings):
    from accounts.services import account_create

    settings.AXES_FAILURE_LIMIT = 3
    account_create("carol@example.com", password=PASSWORD)
    for _ in range(3):
        wrong = client.post("/account/login/", {"username": "carol@example.com", "password": "guess-1234"})
        assert wrong.status_code in (200, 429)
    locked = client.post("/account/login/", {"username": "carol@example.com", "password": PASSWORD})
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.content.decode()
    assert client.get(API).status_code == 302, "not signed in"
    admin = client.post("/admin/login/", {"username": "carol@example.com", "password": PASSWORD})
    assert admin.status_code == 429, "the admin's sign-in is the same door"

    elsewhere = client.post(
        "/account/login/", {"username": "carol@example.com", "password": PASSWORD}, REMOTE_ADDR="198.51.100.4"
    )
    assert elsewhere.status_code == 302, "other addresses are not locked out"
