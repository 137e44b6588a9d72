"""Sign-up and sign-in against abuse: the free minutes and the first token only after the mailed
link is followed and its page's button pressed; nothing an unconfirmed sign-up leaves behind is
inherited by the address's holder; sign-ups, confirmation mails and failed sign-ins limited
(django-axes for sign-ins). Each attack of issue 32 is written as the attack. Django's test client;
tests/accounts/test_browser.py drives the same in Chromium, tests/accounts/test_client_address.py
through bin/web."""

import re

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Account, Signup
from accounts.services import account_create
from billing.selectors import account_balance

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-42"
ATTACKER_PASSWORD = "attacker-chosen-pass-99"
API = "/account/api/"


def signup(client, email, password=PASSWORD, **headers):
    return client.post("/account/signup/", {"email": email, "password": password}, **headers)


def mailed_link(mailoutbox, email) -> str:
    message = [m for m in mailoutbox if m.to == [email]][-1]
    link = re.search(re.escape(settings.PUBLIC_BASE_URL) + r"(/account/confirm/\S+/)", str(message.body))
    assert link, message.body
    return link.group(1)


def confirm(client, link, password=PASSWORD):
    """What a person does with a mailed link: open it, and press the page's button if it has one
    (entering the sign-up's password where asked)."""
    page = client.get(link)
    if page.status_code != 200 or b'method="post"' not in page.content:
        return page
    return client.post(link, {"password": password})


def sign_in(client, email, password=PASSWORD, **headers):
    return client.post("/account/login/", {"username": email, "password": password}, **headers)


def login_of(email):
    return get_user_model().objects.filter(email=email).first()


def test_free_minutes_and_the_api_page_only_after_the_mailed_link_and_its_button(client, mailoutbox):
    response = signup(client, "dave@example.com")
    assert response.status_code == 200 and "We sent a link to" in response.content.decode()
    assert login_of("dave@example.com") is None, "an unconfirmed sign-up holds no login and no account"
    assert client.get(API).status_code == 302, "not signed in"
    refused = sign_in(client, "dave@example.com")
    assert "Confirm your email address first" in refused.content.decode()

    link = mailed_link(mailoutbox, "dave@example.com")
    page = client.get(link)
    assert page.status_code == 200 and "dave@example.com" in page.content.decode()
    assert login_of("dave@example.com") is None, "opening the link (a GET) confirms nothing"
    response = client.post(link, {"password": PASSWORD}, follow=True)
    assert response.redirect_chain[-1][0] == API
    assert response.context["user"].email == "dave@example.com" and "10 minutes" in response.content.decode()
    account = Account.objects.get(user__email="dave@example.com")
    assert account_balance(account.pk) == 600

    client.logout()
    assert client.get(link).status_code == 400, "a link works once"
    assert client.post(link, {"password": PASSWORD}).status_code == 400
    assert account_balance(account.pk) == 600
    signed_in = sign_in(client, "dave@example.com")
    assert signed_in.status_code == 302 and signed_in["Location"] == API


def test_pre_account_hijacking_the_confirmed_holders_password_wins(client, mailoutbox):
    attacker, victim = Client(), Client()
    assert signup(attacker, "victim@example.com", ATTACKER_PASSWORD).status_code == 200  # never confirmed
    attackers_link = mailed_link(mailoutbox, "victim@example.com")
    assert signup(victim, "victim@example.com", PASSWORD).status_code == 200
    confirm(victim, mailed_link(mailoutbox, "victim@example.com"), PASSWORD)

    assert sign_in(Client(), "victim@example.com", ATTACKER_PASSWORD).status_code == 200, "refused: a form again"
    assert "_auth_user_id" not in attacker.session
    assert sign_in(Client(), "victim@example.com", PASSWORD).status_code == 302, "the holder's own password works"
    assert login_of("victim@example.com").check_password(PASSWORD)
    assert confirm(Client(), attackers_link, ATTACKER_PASSWORD).status_code == 400, "earlier sign-ups are discarded"


def test_the_holder_opening_an_attackers_link_does_not_get_the_attackers_password(mailoutbox):
    signup(Client(), "victim@example.com", ATTACKER_PASSWORD)
    victim = Client()
    response = confirm(victim, mailed_link(mailoutbox, "victim@example.com"), PASSWORD)  # the victim's own
    assert response.status_code == 400 and "not the password" in response.content.decode()
    assert login_of("victim@example.com") is None, "nothing confirmed"
    assert sign_in(Client(), "victim@example.com", ATTACKER_PASSWORD).status_code == 200, "refused"


@pytest.mark.parametrize("signed_in_before", [False, True], ids=["api-only", "signed-in-before"])
def test_a_deactivated_account_stays_deactivated_whatever_its_holder_does(client, mailoutbox, signed_in_before):
    account = account_create("api.customer@example.com", password=PASSWORD if signed_in_before else None)
    if signed_in_before:
        assert sign_in(Client(), "api.customer@example.com").status_code == 302
    user = account.user
    user.is_active = False  # deactivated by staff
    user.save(update_fields=["is_active"])

    answer = signup(client, "api.customer@example.com", "holder-new-pass-3141")
    assert answer.status_code == 200 and "We sent a link to" in answer.content.decode(), "the same as any address"
    assert signup(client, "API.Customer@Example.com", "holder-new-pass-3141").status_code == 200
    assert [m.subject for m in mailoutbox] == ["Someone tried to sign up with your address"] * 2, "no link to follow"
    assert "/account/confirm/" not in mailoutbox[0].body
    user.refresh_from_db()
    assert not user.is_active and not user.check_password("holder-new-pass-3141")
    assert sign_in(Client(), "api.customer@example.com", "holder-new-pass-3141").status_code == 200, "refused"


def test_a_sign_up_pending_when_staff_made_the_login_confirms_nothing(client, mailoutbox):
    signup(client, "late@example.com")
    link = mailed_link(mailoutbox, "late@example.com")
    account = account_create("late@example.com")  # an operator made it meanwhile, then deactivated it
    account.user.is_active = False
    account.user.save(update_fields=["is_active"])
    response = confirm(client, link)
    assert response.status_code == 400 and "already exists" in response.content.decode()
    account.user.refresh_from_db()
    assert not account.user.is_active and not account.user.has_usable_password()
    assert "_auth_user_id" not in client.session


def test_a_confirmation_link_never_switches_a_signed_in_session(client, mailoutbox):
    """Login CSRF: the attacker signs up with their own mailbox and sends the victim the link."""
    signup(Client(), "attacker@example.com", ATTACKER_PASSWORD)
    link = mailed_link(mailoutbox, "attacker@example.com")
    victim = account_create("victim@example.com", password=PASSWORD).user
    client.force_login(victim)

    page = client.get(link)
    assert page.status_code == 409 and "Sign out first" in page.content.decode()
    assert int(client.session["_auth_user_id"]) == victim.pk
    pressed = client.post(link, {"password": ATTACKER_PASSWORD})
    assert pressed.status_code == 409 and int(client.session["_auth_user_id"]) == victim.pk
    assert login_of("attacker@example.com") is None, "the link is still unused"
    assert client.get(API).context["user"] == victim


def test_the_confirmation_button_is_csrf_protected(mailoutbox):
    signup(Client(), "dave@example.com")
    link = mailed_link(mailoutbox, "dave@example.com")
    browser = Client(enforce_csrf_checks=True)
    assert browser.post(link, {"password": PASSWORD}).status_code == 403
    assert login_of("dave@example.com") is None


def test_a_link_expires(client, mailoutbox, settings):
    signup(client, "dave@example.com")
    link = mailed_link(mailoutbox, "dave@example.com")
    settings.EMAIL_CONFIRMATION_SECONDS = 0
    assert client.get(link).status_code == 400
    assert confirm(client, link).status_code == 400 and login_of("dave@example.com") is None


def test_a_forged_link_confirms_nothing(client, mailoutbox):
    signup(client, "dave@example.com")
    link = mailed_link(mailoutbox, "dave@example.com")
    for forged in (link[:-3] + "xx/", "/account/confirm/MQ/abc-def/", "/account/confirm/999999/x/"):
        assert client.get(forged).status_code == 400
        assert client.post(forged, {"password": PASSWORD}).status_code == 400
    assert login_of("dave@example.com") is None


def test_confirmation_mail_to_one_recipient_is_limited(client, settings, mailoutbox):
    """12 sign-up POSTs for one unconfirmed address, each from a new client address."""
    settings.CONFIRMATION_MAILS_PER_HOUR = 3
    answers = [signup(client, "target@example.com", REMOTE_ADDR=f"198.51.100.{n}").status_code for n in range(12)]
    assert answers == [200] * 3 + [429] * 9
    assert len(mailoutbox) == 3


def test_sign_ups_from_one_address_are_limited(client, settings, mailoutbox):
    settings.SIGNUPS_PER_HOUR = 2
    for number in range(2):
        assert signup(client, f"user{number}@example.com").status_code == 200
    # a client's own X-Forwarded-For changes nothing unless TRUST_PROXY_HEADERS
    refused = signup(client, "user2@example.com", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert refused.status_code == 429 and "Too many sign-ups from your address" in refused.content.decode()
    again = signup(client, "user0@example.com")  # the same recipient again: a mail all the same
    assert again.status_code == 429 and len(mailoutbox) == 2
    assert signup(client, "user3@example.com", REMOTE_ADDR="198.51.100.4").status_code == 200

    settings.TRUST_PROXY_HEADERS = True  # the proxy (loopback, one of TRUSTED_PROXIES) appends the address it saw
    assert signup(client, "user4@example.com", HTTP_X_FORWARDED_FOR="127.0.0.1, 203.0.113.9").status_code == 200


def test_failed_sign_ins_lock_the_address_out_even_with_the_right_password(client, settings):
    settings.AXES_FAILURE_LIMIT = 3
    account_create("carol@example.com", password=PASSWORD)
    for _ in range(3):
        wrong = sign_in(client, "carol@example.com", "guess-1234")
        assert wrong.status_code in (200, 429)
    locked = sign_in(client, "carol@example.com")
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.content.decode()
    assert client.get(API).status_code == 302, "not signed in"
    admin = client.post("/admin/login/", {"username": "carol@example.com", "password": PASSWORD})
    assert admin.status_code == 429, "the admin's sign-in is the same door"

    elsewhere = sign_in(client, "carol@example.com", REMOTE_ADDR="198.51.100.4")
    assert elsewhere.status_code == 302, "other addresses are not locked out"


def test_a_mail_server_that_is_down_is_a_503_that_holds_nothing(client, settings):
    from harness.processes import free_port

    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", free_port(), 2  # nobody listens
    response = signup(client, "dave@example.com")
    assert response.status_code == 503 and "could not send the confirmation mail" in response.content.decode()
    assert not Signup.objects.exists(), "it does not count against the limits, nor hold a link"


def test_the_confirmation_link_is_built_on_the_public_address_never_the_requests_host(client, mailoutbox, settings):
    """Like the reset link (issue 56): the `Host` header is the sender's choice, so the mailed link
    begins with PUBLIC_BASE_URL, for a new address and for one that has an account."""
    settings.PUBLIC_BASE_URL = "https://transcribe.example.org"
    account_create("taken@example.com", password=PASSWORD)
    for email in ("fresh@example.com", "taken@example.com"):
        assert signup(client, email, HTTP_HOST="testserver:6666").status_code == 200
    fresh, taken = mailoutbox
    assert re.search(r"https://transcribe\.example\.org/account/confirm/\S+/\S+/", fresh.body), fresh.body
    assert "https://transcribe.example.org/account/login/" in taken.body, taken.body
    assert not any("6666" in m.body or "testserver" in m.body for m in mailoutbox)
