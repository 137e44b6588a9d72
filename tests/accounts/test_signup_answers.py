"""Sign-up tells nobody whether an address has an account (issue 41): the page answers alike, the
mail goes to the address either way (a link to confirm, or a notice to the holder that someone
tried), under the same limits. And the per-address limits of sign-up and sign-in count an IPv6
client by its /64, which one client usually holds whole (accounts.client)."""

import re

import pytest

from accounts.models import Signup
from accounts.services import account_create

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-42"


def signup(client, email, password=PASSWORD, **headers):
    return client.post("/account/signup/", {"email": email, "password": password}, **headers)


def sign_in(client, email, password=PASSWORD, **headers):
    return client.post("/account/login/", {"username": email, "password": password}, **headers)


def page_for(response, email) -> str:
    """The page as a visitor sees it, the address they typed taken out."""
    return response.content.decode().replace(email, "ADDRESS")


def test_sign_up_answers_alike_whether_or_not_the_address_has_an_account(client, mailoutbox):
    account_create("carol@example.com", password=PASSWORD)
    known = signup(client, "carol@example.com", "another-pass-9876")
    unknown = signup(client, "dave@example.com", "another-pass-9876")
    assert known.status_code == unknown.status_code == 200
    assert page_for(known, "carol@example.com") == page_for(unknown, "dave@example.com")
    assert "already exists" not in known.content.decode()

    [notice] = [m for m in mailoutbox if m.to == ["carol@example.com"]]
    assert notice.subject == "Someone tried to sign up with your address"
    assert "already has an account" in notice.body and "/account/login/" in notice.body
    assert "/account/confirm/" not in notice.body, "no link that could do anything"
    [link] = [m for m in mailoutbox if m.to == ["dave@example.com"]]
    assert "/account/confirm/" in link.body

    carol = Signup.objects.get(email="carol@example.com")
    assert carol.used_at is not None and not carol.password, "it holds no password and no working link"


def test_the_notices_count_against_the_same_limits(client, settings, mailoutbox):
    settings.CONFIRMATION_MAILS_PER_HOUR = 2
    account_create("carol@example.com", password=PASSWORD)
    known = [signup(client, "carol@example.com", REMOTE_ADDR=f"198.51.100.{n}").status_code for n in range(4)]
    unknown = [signup(client, "dave@example.com", REMOTE_ADDR=f"198.51.100.{n}").status_code for n in range(4)]
    assert known == unknown == [200, 200, 429, 429]
    assert len(mailoutbox) == 4

    settings.SIGNUPS_PER_HOUR = 1
    account_create("frank@example.com")
    account_create("henry@example.com")
    assert signup(client, "frank@example.com", REMOTE_ADDR="203.0.113.5").status_code == 200
    assert signup(client, "erin@example.com", REMOTE_ADDR="203.0.113.5").status_code == 429
    assert signup(client, "gina@example.com", REMOTE_ADDR="203.0.113.6").status_code == 200
    assert signup(client, "henry@example.com", REMOTE_ADDR="203.0.113.6").status_code == 429


def test_sign_ups_from_one_ipv6_64_count_as_one_client(client, settings, mailoutbox):
    settings.SIGNUPS_PER_HOUR = 2
    answers = [signup(client, f"user{n}@example.com", REMOTE_ADDR=f"2001:db8:1:2::{n:x}").status_code for n in range(3)]
    assert answers == [200, 200, 429]
    assert signup(client, "user9@example.com", REMOTE_ADDR="2001:db8:1:2:ffff:1:2:3").status_code == 429
    assert signup(client, "user8@example.com", REMOTE_ADDR="2001:db8:1:3::1").status_code == 200, "another /64"
    assert len(mailoutbox) == 3


def test_failed_sign_ins_from_one_ipv6_64_lock_it_out(client, settings):
    settings.AXES_FAILURE_LIMIT = 3
    account_create("carol@example.com", password=PASSWORD)
    for n in range(3):
        sign_in(client, "carol@example.com", "guess-1234", REMOTE_ADDR=f"2001:db8:5:6::{n + 1:x}")
    locked = sign_in(client, "carol@example.com", REMOTE_ADDR="2001:db8:5:6:abcd::9")
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.content.decode()
    assert sign_in(client, "carol@example.com", REMOTE_ADDR="2001:db8:5:7::1").status_code == 302, "another /64"


def test_the_page_for_a_taken_address_names_no_account(client, mailoutbox):
    account_create("carol@example.com", password=PASSWORD)
    body = signup(client, "CAROL@example.com").content.decode()
    assert re.search(r"We sent a link to", body) and "Sign in instead" not in body
