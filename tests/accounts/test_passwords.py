"""Password reset by mail and password change while signed in (issue 41), Django's test client:
the reset form says nothing about who has an account, its mails are limited per recipient and
per client address, the change form's current-password check is a sign-in attempt (django-axes
counts it and locks the address out). tests/accounts/test_password_browser.py drives the whole
path in Chromium: the mail's link, used twice, expired, other browsers signed out."""

import base64
import json
import re

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts import tasks
from accounts.services import account_create

# The reset mail is the hooks worker's (accounts.tasks); here it runs as it is queued.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("tasks_at_once")]

PASSWORD = "correct-horse-battery-42"
NEW_PASSWORD = "stapled-lantern-orbit-77"
RESET = "/account/password/reset/"


def ask_reset(client, email, **headers):
    return client.post(RESET, {"email": email}, **headers)


def without_csrf(response) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", response.content.decode())


def reset_path(mailoutbox, email) -> str:
    message = [m for m in mailoutbox if m.to == [email]][-1]
    link = re.search(re.escape(settings.PUBLIC_BASE_URL) + r"(/account/password/reset/\S+/\S+/)", str(message.body))
    assert link, message.body
    return link.group(1)


def test_the_reset_answer_is_the_same_whether_or_not_the_address_has_an_account(client, mailoutbox):
    account_create("holder@example.com", password=PASSWORD)
    known = ask_reset(client, "holder@example.com", follow=True)
    unknown = ask_reset(client, "nobody@example.com", follow=True)
    assert known.status_code == unknown.status_code == 200
    assert known.redirect_chain == unknown.redirect_chain == [("/account/password/reset/sent/", 302)]
    assert without_csrf(known) == without_csrf(unknown)
    assert [m.to for m in mailoutbox] == [["holder@example.com"]], "a mail to the holder only"
    assert "expires in an hour" in mailoutbox[0].body


def statements(queries) -> list[str]:
    """The SQL run, its literals blanked: the same statements whatever the address asked for."""
    return [re.sub(r"'[^']*'|\"s\d+_x\d+\"|\b\d+\b", "?", query["sql"]) for query in queries]


def test_the_reset_answer_does_the_same_work_whether_or_not_the_address_has_an_account(client, broker, mailoutbox):
    """Issue 56: the answer's timing told who has an account (only a holder's request waited on
    an SMTP exchange). Each request now counts and queues the same one task, and sends nothing."""
    from config.celery import app

    app.conf.task_always_eager = False  # the web's part alone: the queued task is read back below
    account_create("holder@example.com", password=PASSWORD)
    work = {}
    for email in ("holder@example.com", "nobody@example.com"):
        with CaptureQueriesContext(connection) as queries:
            assert ask_reset(client, email).status_code == 302
        work[email] = statements(queries.captured_queries)
    assert work["holder@example.com"] == work["nobody@example.com"], "the same statements either way"
    assert mailoutbox == [], "no mail sent while the answer waits"
    queued = [json.loads(raw) for raw in reversed(broker.lrange("hooks", 0, -1))]
    assert [m["headers"]["task"] for m in queued] == ["accounts.tasks.mail_password_reset"] * 2
    for message in queued:  # what the hooks worker does with them: one mail, to the holder only
        args, kwargs, _ = json.loads(base64.b64decode(message["body"]))
        tasks.mail_password_reset(*args, **kwargs)
    assert [m.to for m in mailoutbox] == [["holder@example.com"]]


def test_the_reset_link_is_built_on_the_public_address_never_the_requests_host(client, mailoutbox, settings):
    """Issue 56: the link took its host and port from the `Host` header, which a sender picks (any
    port of an allowed host passes Django's check): it begins with PUBLIC_BASE_URL."""
    settings.PUBLIC_BASE_URL = "https://transcribe.example.org"
    account_create("holder@example.com", password=PASSWORD)
    assert ask_reset(client, "holder@example.com", HTTP_HOST="testserver:6666").status_code == 302
    [message] = mailoutbox
    assert re.search(r"https://transcribe\.example\.org/account/password/reset/\S+/\S+/", message.body), message.body
    assert "6666" not in message.body and "testserver" not in message.body


def test_a_reset_link_sets_a_new_password_once(client, mailoutbox):
    account_create("once@example.com", password=PASSWORD)
    ask_reset(client, "ONCE@example.com")  # the address as typed, in any case
    link = reset_path(mailoutbox, "once@example.com")
    form = client.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    set_password = form.redirect_chain[-1][0]
    done = client.post(set_password, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert done.status_code == 302 and done["Location"] == "/account/password/reset/done/"
    user = get_user_model().objects.get(email="once@example.com")
    assert user.check_password(NEW_PASSWORD)
    again = client.get(link, follow=True)
    assert "This link does not work" in again.content.decode()


def test_reset_mails_are_limited_per_recipient_whoever_asks_and_alike_for_unknown_addresses(
    client, mailoutbox, settings
):
    settings.PASSWORD_RESET_MAILS_PER_HOUR = 3
    account_create("target@example.com", password=PASSWORD)
    answers = [ask_reset(client, "target@example.com", REMOTE_ADDR=f"198.51.100.{n}") for n in range(5)]
    assert [a.status_code for a in answers] == [302, 302, 302, 429, 429]
    assert len([m for m in mailoutbox if m.to == ["target@example.com"]]) == 3
    unknown = [ask_reset(client, "ghost@example.com", REMOTE_ADDR=f"203.0.113.{n}") for n in range(5)]
    assert [a.status_code for a in unknown] == [302, 302, 302, 429, 429], "no account: the same limit"
    assert without_csrf(unknown[-1]).replace("ghost", "") == without_csrf(answers[-1]).replace("target", "")
    assert "Several reset links" in answers[-1].content.decode()


def test_reset_requests_are_limited_per_client_address(client, mailoutbox, settings):
    from accounts.models import PasswordResetRequest

    settings.PASSWORD_RESETS_PER_HOUR = 2
    for n in range(3):
        account_create(f"user{n}@example.com", password=PASSWORD)
    answers = [ask_reset(client, f"user{n}@example.com", REMOTE_ADDR="198.51.100.7").status_code for n in range(3)]
    assert answers == [302, 302, 429]
    assert ask_reset(client, "user2@example.com", REMOTE_ADDR="198.51.100.8").status_code == 302
    assert sorted(m.to[0] for m in mailoutbox) == ["user0@example.com", "user1@example.com", "user2@example.com"]
    assert PasswordResetRequest.objects.count() == 3, "a refused request is not counted"


def test_a_deactivated_login_gets_no_mail_and_an_operators_passwordless_account_does(client, mailoutbox):
    from accounts.services import account_deactivate

    account_deactivate(account_create("closed@example.com", password=PASSWORD))
    account_create("api-only@example.com")  # create_account without --password
    assert ask_reset(client, "closed@example.com").status_code == 302
    assert ask_reset(client, "api-only@example.com").status_code == 302
    assert [m.to for m in mailoutbox] == [["api-only@example.com"]]


def test_the_change_forms_current_password_counts_as_a_sign_in_attempt(client, settings):
    settings.AXES_FAILURE_LIMIT = 3
    account_create("changer@example.com", password=PASSWORD)
    assert client.post("/account/login/", {"username": "changer@example.com", "password": PASSWORD}).status_code == 302
    change = {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    for attempt in range(2):
        wrong = client.post("/account/password/change/", {"old_password": f"guess-{attempt}-horse", **change})
        assert wrong.status_code == 200 and "incorrectly" in wrong.content.decode()
    locked = client.post("/account/password/change/", {"old_password": "guess-3-horse", **change})
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.content.decode()
    refused = client.post("/account/password/change/", {"old_password": PASSWORD, **change})
    assert refused.status_code == 429, "the right password too, while the address is locked out"
    assert get_user_model().objects.get(email="changer@example.com").check_password(PASSWORD)


def test_the_pages_link_to_reset_and_change(client):
    assert 'href="/account/password/reset/"' in client.get("/account/login/").content.decode()
    account_create("linked@example.com", password=PASSWORD)
    client.post("/account/login/", {"username": "linked@example.com", "password": PASSWORD})
    assert 'href="/account/password/change/"' in client.get("/account/api/").content.decode()
