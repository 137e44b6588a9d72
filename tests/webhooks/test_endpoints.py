"""Setting an account's webhook: the account holder on the API page, operators with
`manage.py set_webhook`, support staff in the admin. The secret is shown once; a private address
is refused wherever it is typed in; every change is audited; attempts are shown to the holder and
to support, who can send an event again."""

import base64
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from django.urls import reverse

from accounts.services import account_create
from audit.models import AuditEvent
from tests.webhooks.support import fail_job, message_of
from transcription.pipeline.fetch import errors as fetch_errors
from webhooks.models import Endpoint, Message
from webhooks.services import endpoint_set, message_deliver

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-42"
API = "/account/api/"
EDIT = "/account/api/webhook/"
SECRET = re.compile(r"whsec_[A-Za-z0-9+/=]{44}")
# With private addresses allowed the guard does not resolve host names: this machine has no DNS,
# and hooks.example.com stands for a receiver on the internet. The tests of refusals run without.
PRIVATE_OK = override_settings(ALLOW_PRIVATE_URLS=True)


@pytest.fixture
def holder(client):
    account = account_create("carol@example.com", password=PASSWORD)
    client.force_login(account.user)
    return account


def shown_secret(response) -> str | None:
    match = re.search(r'id="new-secret"[^>]*value="(whsec_[^"]+)"', response.content.decode())
    return match.group(1) if match else None


def audit(account) -> list[tuple[str, str]]:
    return [(e.action, e.detail) for e in AuditEvent.objects.filter(account=account).order_by("id")]


# --- the API page -----------------------------------------------------------------------------


@PRIVATE_OK
def test_a_new_webhook_shows_its_secret_once(client, holder):
    assert 'id="no-webhook"' in client.get(API).content.decode()
    response = client.post(EDIT, {"url": "https://hooks.example.com/transcription"})
    secret = shown_secret(response)
    assert secret and SECRET.fullmatch(secret) and len(base64.b64decode(secret[6:])) == 32
    assert "no-store" in response["Cache-Control"]
    assert Endpoint.objects.get(account=holder).secret == secret
    page = client.get(API).content.decode()
    assert secret not in page and secret[:10] in page and "https://hooks.example.com/transcription" in page
    assert audit(holder) == [("webhook_set", "Webhook URL set to https://hooks.example.com/transcription")]
    assert AuditEvent.objects.get(account=holder).actor == holder.user


@PRIVATE_OK
def test_changing_the_url_keeps_the_secret(client, holder):
    secret = endpoint_set(holder, "https://hooks.example.com/a")
    response = client.post(EDIT, {"url": "https://hooks.example.com/b"}, follow=True)
    assert shown_secret(response) is None and "Webhook URL saved." in response.content.decode()
    endpoint = Endpoint.objects.get(account=holder)
    assert (endpoint.url, endpoint.secret) == ("https://hooks.example.com/b", secret)


@pytest.mark.parametrize(
    "url,error",
    [
        ("http://127.0.0.1:8000/hook", fetch_errors.MSG_PRIVATE),
        ("http://10.1.2.3/hook", fetch_errors.MSG_PRIVATE),
        ("http://169.254.169.254/latest/meta-data", fetch_errors.MSG_PRIVATE),
        ("ftp://hooks.example.com/", fetch_errors.MSG_SCHEME),
        ("not a url", fetch_errors.MSG_SCHEME),
    ],
)
def test_a_private_or_odd_address_is_refused_with_the_reason(client, holder, url, error):
    response = client.post(EDIT, {"url": url})
    assert response.status_code == 200 and error in response.content.decode()
    assert 'id="url-errors"' in response.content.decode()
    assert not Endpoint.objects.exists() and not AuditEvent.objects.filter(account=holder).exists()


@PRIVATE_OK
def test_rotating_shows_the_new_secret_once_and_both_sign_for_a_day(client, holder):
    old = endpoint_set(holder, "https://hooks.example.com/a")
    confirm = client.get(f"{EDIT}rotate/")
    assert 'name="confirm" value="yes"' in confirm.content.decode() and old[:10] in confirm.content.decode()
    assert client.post(f"{EDIT}rotate/").status_code == 200 and Endpoint.objects.get().secret == old
    new = shown_secret(client.post(f"{EDIT}rotate/", {"confirm": "yes"}))
    endpoint = Endpoint.objects.get()
    assert new and new != old and endpoint.secret == new and endpoint.previous_secret == old
    assert "previous secret signs too until" in client.get(API).content.decode()
    assert audit(holder)[-1][0] == "webhook_rotated" and new not in audit(holder)[-1][1]


@PRIVATE_OK
def test_removing_needs_confirmation_and_drops_what_was_waiting(client, holder):
    endpoint_set(holder, "https://hooks.example.com/a")
    waiting = message_of(fail_job(holder))
    assert client.post(f"{EDIT}remove/").status_code == 200 and Endpoint.objects.exists()
    response = client.post(f"{EDIT}remove/", {"confirm": "yes"}, follow=True)
    assert "Webhook removed." in response.content.decode() and not Endpoint.objects.exists()
    waiting.refresh_from_db()
    assert (waiting.state, waiting.error) == ("failed", "The webhook was removed.")
    assert audit(holder)[-1] == ("webhook_removed", "Webhook https://hooks.example.com/a removed")


@PRIVATE_OK
def test_webhook_forms_are_csrf_protected(holder):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(holder.user)
    assert strict.post(EDIT, {"url": "https://hooks.example.com/a"}).status_code == 403
    assert not Endpoint.objects.exists()


@PRIVATE_OK
def test_a_login_without_an_account_is_sent_back(client):
    from django.contrib.auth import get_user_model

    staff = get_user_model().objects.create_user("staff@example.com", email="staff@example.com", is_staff=True)
    client.force_login(staff)
    assert client.post(EDIT, {"url": "https://hooks.example.com/a"})["Location"] == API
    assert not Endpoint.objects.exists()


@PRIVATE_OK
def test_the_page_lists_events_with_every_attempt(client, holder, receiver):
    receiver.secrets = [endpoint_set(holder, receiver.url())]
    receiver.script = [(503, "busy, come back later")]
    job = fail_job(holder)
    message = message_of(job)
    message_deliver(message.id)
    html = client.get(API).content.decode()
    assert 'id="webhook-events"' in html and "job.failed" in html and str(job.id) in html and message.webhook_id in html
    assert "HTTP 503" in html and "busy, come back later" in html and "next attempt" in html
    receiver.script = [(410, "gone")]
    Message.objects.filter(pk=message.pk).update(next_attempt_at=message.created_at)
    message_deliver(message.id)
    html = client.get(API).content.decode()
    assert "HTTP 410" in html and "disabled" in html and "Turn back on" in html


# --- the operator command ---------------------------------------------------------------------


def run_command(*args) -> list[str]:
    out = StringIO()
    call_command("set_webhook", *args, stdout=out)
    return out.getvalue().splitlines()


@PRIVATE_OK
def test_set_webhook_prints_the_secret_alone_on_the_last_line(account):
    lines = run_command("Alice@Example.com", "https://hooks.example.com/a")
    assert SECRET.fullmatch(lines[-1]) and Endpoint.objects.get(account=account).secret == lines[-1]
    again = run_command("alice@example.com", "https://hooks.example.com/b")
    endpoint = Endpoint.objects.get(account=account)
    assert again[-1] != lines[-1] and SECRET.fullmatch(again[-1]), "a secret is never printed twice"
    assert (endpoint.url, endpoint.secret, endpoint.previous_secret) == (
        "https://hooks.example.com/b",
        again[-1],
        lines[-1],
    )
    assert [action for action, _ in audit(account)] == ["webhook_set", "webhook_set", "webhook_rotated"]
    assert run_command("alice@example.com", "--remove") == ["Removed the webhook of alice@example.com."]
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize(
    "args,error",
    [
        (("alice@example.com", "http://192.168.1.20/hook"), fetch_errors.MSG_PRIVATE),
        (("nobody@example.com", "https://hooks.example.com/a"), "No account for nobody@example.com."),
        (("alice@example.com",), "Give the webhook URL"),
        (("alice@example.com", "--remove"), "has no webhook"),
    ],
)
def test_set_webhook_refuses_with_a_reason(account, args, error):
    with pytest.raises(CommandError, match=re.escape(error)):
        run_command(*args)
    assert not Endpoint.objects.exists()


# --- the admin ---------------------------------------------------------------------------------


def page_messages(response):
    return [str(m) for m in response.context["messages"]]


@PRIVATE_OK
def test_support_sets_a_webhook_and_sees_the_secret_once(support_client, support_user, account):
    response = support_client.post(
        reverse("admin:webhooks_endpoint_add"),
        {"account": account.pk, "url": "https://hooks.example.com/a"},
        follow=True,
    )
    [secret] = [found.group(0) for found in map(SECRET.search, page_messages(response)) if found]
    endpoint = Endpoint.objects.get(account=account)
    assert endpoint.secret == secret
    assert (AuditEvent.objects.get(account=account).action, AuditEvent.objects.get(account=account).actor) == (
        "webhook_set",
        support_user,
    )
    page = support_client.get(reverse("admin:webhooks_endpoint_change", args=[endpoint.pk])).content.decode()
    assert secret not in page and secret[:10] in page


def test_support_is_refused_a_private_address(support_client, account):
    response = support_client.post(
        reverse("admin:webhooks_endpoint_add"), {"account": account.pk, "url": "http://127.0.0.1/hook"}
    )
    assert response.status_code == 200 and fetch_errors.MSG_PRIVATE in response.content.decode()
    assert not Endpoint.objects.exists()


@PRIVATE_OK
def test_support_rotates_a_secret(support_client, account):
    old = endpoint_set(account, "https://hooks.example.com/a")
    endpoint = Endpoint.objects.get()
    response = support_client.post(
        reverse("admin:webhooks_endpoint_changelist"),
        {"action": "rotate_secret", "_selected_action": [endpoint.pk]},
        follow=True,
    )
    new = SECRET.search(page_messages(response)[0]).group(0)
    endpoint.refresh_from_db()
    assert new != old and endpoint.secret == new and endpoint.signing_secrets(endpoint.updated_at) == [new, old]


@PRIVATE_OK
def test_support_reads_every_attempt_and_sends_an_event_again(support_client, support_user, account, receiver):
    receiver.secrets = [endpoint_set(account, receiver.url())]
    receiver.script = [(410, "gone for now")]
    message = message_of(fail_job(account))
    message_deliver(message.id)
    changelist = reverse("admin:webhooks_message_changelist")
    listed = support_client.get(changelist, {"q": str(message.job_id)})
    assert listed.context["cl"].result_count == 1 and "HTTP 410" in listed.content.decode()
    assert support_client.get(changelist, {"q": message.webhook_id}).context["cl"].result_count == 1
    detail = support_client.get(reverse("admin:webhooks_message_change", args=[message.pk])).content.decode()
    assert "gone for now" in detail and message.webhook_id in detail and "&quot;job.failed&quot;" in detail

    refused = support_client.post(changelist, {"action": "send_again", "_selected_action": [message.pk]}, follow=True)
    assert "no enabled webhook" in page_messages(refused)[0], "a disabled webhook is turned on by its URL first"
    endpoint_set(account, receiver.url())
    support_client.post(changelist, {"action": "send_again", "_selected_action": [message.pk]}, follow=True)
    message.refresh_from_db()
    assert message.state == "pending" and message.error == ""
    message_deliver(message.id)
    first, second = receiver.wait_for(2)
    assert second.payload == first.payload and second.headers["webhook-id"] == first.headers["webhook-id"]
    assert Message.objects.get(pk=message.pk).state == "delivered"
    event = AuditEvent.objects.filter(account=account).latest("id")
    assert (event.action, event.actor) == ("webhook_resent", support_user)
