"""The admin for support staff: the support group's permissions, the read-only ledger, token
actions and grants (each audited)."""

import re

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.test import RequestFactory
from django.urls import reverse

from accounts.models import Account, ApiToken
from accounts.services import token_issue
from accounts.tokens import token_digest
from audit.models import AuditEvent
from billing.models import LedgerEntry
from billing.selectors import account_balance
from billing.services import grant_staff_minutes
from tests.factories import JobFactory
from tests.staff import support_group
from transcription.models import Job

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/accounts/account/"


def run_action(client, action, *accounts):
    return client.post(CHANGELIST, {"action": action, "_selected_action": [a.pk for a in accounts]}, follow=True)


def page_messages(response):
    return [str(m) for m in response.context["messages"]]


# --- the support group ----------------------------------------------------------------------


def test_the_support_group_has_no_delete_permission_at_all():
    codenames = set(support_group().permissions.values_list("codename", flat=True))
    assert codenames, "the migration gave the group permissions"
    assert not [c for c in codenames if c.startswith("delete_")]


def test_the_support_group_views_everything_and_changes_only_what_it_needs():
    perms = {
        f"{p.content_type.app_label}.{p.codename}" for p in support_group().permissions.select_related("content_type")
    }
    for app_label, model in [
        ("accounts", "account"),
        ("accounts", "apitoken"),
        ("audit", "auditevent"),
        ("billing", "plan"),
        ("billing", "ledgerentry"),
        ("transcription", "job"),
        ("transcription", "batch"),
        ("transcription", "translation"),
        ("webhooks", "endpoint"),
        ("webhooks", "message"),
        ("webhooks", "attempt"),
    ]:
        assert f"{app_label}.view_{model}" in perms
    writes = {p for p in perms if not p.split(".")[1].startswith("view_")}
    assert writes == {
        "billing.add_ledgerentry",
        "accounts.change_account",
        "transcription.change_job",
        "webhooks.add_endpoint",
        "webhooks.change_endpoint",
        "webhooks.change_message",
    }


def test_a_support_user_cannot_delete_through_the_admin(support_user):
    request = RequestFactory().get("/admin/")
    request.user = support_user
    for model in [Account, LedgerEntry, Job, AuditEvent]:
        model_admin = admin.site._registry[model]
        assert not model_admin.has_delete_permission(request)
        assert "delete_selected" not in model_admin.get_actions(request)
    assert not support_user.has_perm("accounts.delete_account")


def test_not_even_a_superuser_can_delete_accounts_jobs_or_ledger_entries(admin_user):
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    for model in [Account, LedgerEntry, Job, AuditEvent]:
        assert not admin.site._registry[model].has_delete_permission(request)


def test_the_admin_is_for_staff_only(client, account):
    user = account.user
    user.set_password("pw-for-holder-77")
    user.save()
    client.force_login(user)
    response = client.get(CHANGELIST)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


# --- ledger: read-only ------------------------------------------------------------------------


def test_ledger_entries_cannot_be_changed_in_the_admin(admin_client, account):
    entry = LedgerEntry.objects.filter(account=account).get()
    url = reverse("admin:billing_ledgerentry_change", args=[entry.pk])
    page = admin_client.get(url)
    assert page.status_code == 200
    assert page.context["has_change_permission"] is False and 'name="seconds"' not in page.content.decode()
    response = admin_client.post(url, {"seconds": 999999, "kind": "grant", "source": "staff", "account": account.pk})
    assert response.status_code == 403
    assert (
        admin_client.post(reverse("admin:billing_ledgerentry_delete", args=[entry.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert admin_client.get(reverse("admin:billing_ledgerentry_add")).status_code == 403
    entry.refresh_from_db()
    assert entry.seconds == 600


def test_the_ledger_inline_on_an_account_is_read_only(support_client, account):
    page = support_client.get(reverse("admin:accounts_account_change", args=[account.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Sign-up allowance" in html and "+10 minutes" in html
    for editable in ['name="ledger-0-reason"', 'name="ledger-0-seconds"', 'name="ledger-0-DELETE"']:
        assert editable not in html


# --- token actions ------------------------------------------------------------------------------


def test_issue_shows_the_token_once_and_audits_it(support_client, support_user, account):
    response = run_action(support_client, "issue_token", account)
    [message] = page_messages(response)
    token = re.search(r"vts_[A-Za-z0-9_-]+", message).group(0)
    assert ApiToken.objects.get(account=account).digest == token_digest(token)
    event = AuditEvent.objects.get(account=account)
    assert (event.action, event.actor) == ("token_issued", support_user)
    assert token not in event.detail  # only the prefix is kept
    # never shown again
    again = support_client.get(reverse("admin:accounts_account_change", args=[account.pk]))
    assert token not in again.content.decode() and token[:12] in again.content.decode()
    assert token not in support_client.get(CHANGELIST).content.decode()


def test_issue_skips_an_account_that_has_a_token(support_client, account, token):
    response = run_action(support_client, "issue_token", account)
    assert "already has a token" in page_messages(response)[0]
    assert ApiToken.objects.get(account=account).digest == token_digest(token)


def test_replace_and_revoke_are_audited_with_the_staff_user(support_client, support_user, account, token, api):
    response = run_action(support_client, "replace_token", account)
    new = re.search(r"vts_[A-Za-z0-9_-]+", page_messages(response)[0]).group(0)
    assert new != token
    run_action(support_client, "revoke_token", account)
    assert not ApiToken.objects.filter(account=account).exists()
    events = list(AuditEvent.objects.filter(account=account).order_by("created_at", "id"))
    assert [(e.action, e.actor) for e in events] == [
        ("token_issued", None),  # the `token` fixture: token_issue without a person
        ("token_replaced", support_user),
        ("token_revoked", support_user),
    ]
    assert api.get("/v1/api/transcription/00000000-0000-0000-0000-000000000000").status_code == 401


def test_the_account_list_shows_balance_token_and_job_counts(support_client, account, token):
    JobFactory(account=account, state="failed")
    JobFactory(account=account)
    response = support_client.get(CHANGELIST, {"q": "alice"})
    html = response.content.decode()
    row = response.context["cl"].result_list.get()
    assert (row.balance_seconds, row.jobs_total_count, row.jobs_active_count, row.jobs_failed_count) == (600, 2, 1, 1)
    assert "10 minutes" in html and token[:12] in html and "never" in html
    assert support_client.get(CHANGELIST, {"q": "nobody"}).context["cl"].result_count == 0


# --- grants ---------------------------------------------------------------------------------------


def test_a_grant_from_the_account_page_is_recorded_with_who_and_why(support_client, support_user, account):
    url = reverse("admin:accounts_account_grant", args=[account.pk])
    assert (
        support_client.get(reverse("admin:accounts_account_change", args=[account.pk])).content.decode().count(url) == 1
    )
    assert support_client.post(url, {"minutes": "15", "reason": ""}).status_code == 200  # reason required
    assert account_balance(account.pk) == 600
    response = support_client.post(url, {"minutes": "15", "reason": "Refund for a slow week"}, follow=True)
    assert "Granted 15 minutes" in page_messages(response)[0]
    entry = LedgerEntry.objects.get(account=account, source="staff")
    assert (entry.seconds, entry.reason, entry.created_by) == (900, "Refund for a slow week", support_user)
    event = AuditEvent.objects.get(account=account, action="minutes_granted")
    assert event.actor == support_user and "Refund for a slow week" in event.detail
    assert account_balance(account.pk) == 1500


def test_the_grant_action_leads_to_the_grant_form(support_client, account):
    response = run_action(support_client, "grant_minutes", account)
    assert response.redirect_chain[-1][0] == reverse("admin:accounts_account_grant", args=[account.pk])


def test_granting_needs_the_add_ledger_permission(client, account):
    from django.contrib.auth import get_user_model

    viewer = get_user_model().objects.create_user("viewer@support.example", password="x-pass-9981", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_account"))
    client.force_login(viewer)
    url = reverse("admin:accounts_account_grant", args=[account.pk])
    assert client.post(url, {"minutes": "5", "reason": "please"}).status_code == 403
    assert account_balance(account.pk) == 600


def test_grant_staff_minutes_audits_even_outside_the_admin(account):
    grant_staff_minutes(account, 3, reason="Goodwill")
    assert AuditEvent.objects.get(account=account).action == "minutes_granted"


def test_audit_events_are_read_only_in_the_admin(admin_client, account):
    token_issue(account)
    event = AuditEvent.objects.get()
    assert admin_client.get(reverse("admin:audit_auditevent_changelist")).status_code == 200
    page = admin_client.get(reverse("admin:audit_auditevent_change", args=[event.pk]))
    assert page.status_code == 200 and page.context["has_change_permission"] is False
    assert (
        admin_client.post(reverse("admin:audit_auditevent_delete", args=[event.pk]), {"post": "yes"}).status_code == 403
    )


def test_every_admin_page_renders_for_support(support_client, account, token):
    job = JobFactory(account=account, type="subtitles")
    for name in [
        "accounts_account",
        "audit_auditevent",
        "billing_plan",
        "billing_ledgerentry",
        "transcription_job",
        "transcription_batch",
        "transcription_translation",
    ]:
        assert support_client.get(reverse(f"admin:{name}_changelist")).status_code == 200, name
    assert support_client.get(reverse("admin:transcription_job_change", args=[job.pk])).status_code == 200
    assert support_client.get("/admin/").status_code == 200
