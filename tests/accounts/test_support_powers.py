"""What support staff may do to a customer's account, and that the customer hears of it (issue 32,
tried as a support engineer would): a grant above SUPPORT_GRANT_MAX_MINUTES, or past
SUPPORT_GRANT_DAILY_MINUTES in 24 hours, needs a superuser; the holder is mailed when support
issues, replaces or revokes their token, changes their webhook or grants minutes; the audit entry of
a token support was shown names who saw it."""

import re

import pytest
from django.test import override_settings
from django.urls import reverse

from accounts.services import token_issue
from audit.models import AuditEvent
from billing.models import LedgerEntry
from billing.selectors import account_balance
from webhooks.models import Endpoint
from webhooks.services import endpoint_set

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/accounts/account/"
TOKEN = re.compile(r"vts_[A-Za-z0-9_-]+")


def grant(client, account, minutes, reason="Goodwill for a slow week"):
    return client.post(
        reverse("admin:accounts_account_grant", args=[account.pk]), {"minutes": str(minutes), "reason": reason}
    )


def action(client, name, account):
    return client.post(CHANGELIST, {"action": name, "_selected_action": [account.pk]}, follow=True)


def mails_to(mailoutbox, email):
    return [message for message in mailoutbox if message.to == [email]]


def test_a_support_user_cannot_grant_a_million_minutes(support_client, account):
    refused = grant(support_client, account, 1_000_000)
    assert refused.status_code == 200 and "needs a superuser" in refused.content.decode()
    assert grant(support_client, account, 10_001).status_code == 200
    assert not LedgerEntry.objects.filter(account=account, source="staff").exists()
    assert account_balance(account.pk) == 600
    assert grant(support_client, account, 10_000).status_code == 302, "the limit itself is allowed"


@override_settings(SUPPORT_GRANT_MAX_MINUTES=10_000, SUPPORT_GRANT_DAILY_MINUTES=25_000)
def test_repeated_grants_stop_at_the_daily_total(support_client, support_user, account, other_account):
    assert [grant(support_client, account, 10_000).status_code for _ in range(2)] == [302, 302]
    refused = grant(support_client, other_account, 5_001)  # spread over accounts: the same person's total
    assert refused.status_code == 200 and "20,000 minutes in the last 24 hours" in refused.content.decode()
    assert grant(support_client, other_account, 5_000).status_code == 302
    assert grant(support_client, account, 1).status_code == 200
    granted = LedgerEntry.objects.filter(source="staff", created_by=support_user)
    assert sum(entry.seconds for entry in granted) == 25_000 * 60


def test_a_superuser_may_grant_above_the_limits(admin_client, account):
    assert grant(admin_client, account, 1_000_000).status_code == 302
    assert account_balance(account.pk) == 600 + 1_000_000 * 60


def test_the_holder_is_told_of_a_grant(support_client, account, mailoutbox, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert grant(support_client, account, 90, "Refund for job 42").status_code == 302
    [notice] = mails_to(mailoutbox, "alice@example.com")
    assert notice.subject == "Minutes were added to your account"
    assert "90 minutes: Refund for job 42" in notice.body


def test_a_token_support_replaced_works_and_its_holder_is_told(
    support_client, support_user, account, token, client, mailoutbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = action(support_client, "replace_token", account)
    new = TOKEN.search(str(list(response.context["messages"])[0])).group(0)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {new}"}
    assert client.get("/v1/api/transcription/00000000-0000-0000-0000-000000000000", **headers).status_code == 404
    event = AuditEvent.objects.get(account=account, action="token_replaced")
    assert event.actor == support_user and event.detail.endswith("shown to sam@support.example")
    [notice] = mails_to(mailoutbox, "alice@example.com")
    assert notice.subject == "Your API token was replaced" and new[:12] in notice.body and new not in notice.body

    with django_capture_on_commit_callbacks(execute=True):
        action(support_client, "revoke_token", account)
        action(support_client, "issue_token", account)
    subjects = [message.subject for message in mails_to(mailoutbox, "alice@example.com")]
    assert subjects[1:] == ["Your API token was revoked", "An API token was issued for your account"]
    assert AuditEvent.objects.get(account=account, action="token_issued", actor=support_user).detail.endswith(
        "shown to sam@support.example"
    )


def test_the_holders_own_token_changes_mail_nobody(client, account, mailoutbox, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        token_issue(account, by=account.user)
        token_issue(account, by=account.user)
        token_issue(account)  # an operator's command on the server (create_account)
    assert mailoutbox == []
    assert "shown to" not in AuditEvent.objects.filter(account=account).first().detail


@override_settings(ALLOW_PRIVATE_URLS=True)
def test_a_webhook_support_re_pointed_is_told_to_its_holder(
    support_client, account, mailoutbox, django_capture_on_commit_callbacks
):
    endpoint_set(account, "https://hooks.example.com/mine", by=account.user)
    endpoint = Endpoint.objects.get(account=account)
    with django_capture_on_commit_callbacks(execute=True):
        response = support_client.post(
            reverse("admin:webhooks_endpoint_change", args=[endpoint.pk]),
            {"account": account.pk, "url": "https://elsewhere.example.net/hook"},
        )
    assert response.status_code == 302
    [notice] = mails_to(mailoutbox, "alice@example.com")
    assert notice.subject == "Your webhook was changed"
    assert "from https://hooks.example.com/mine to https://elsewhere.example.net/hook" in notice.body
