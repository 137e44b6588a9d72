"""Every path by which support staff add minutes obeys the grant limits (issue 41, item 3), driven
through the real admin as a support user: a plan assigned, a renewal date moved earlier and a plan's
minutes raised each count as a grant of the minutes the next renewal adds (at most
SUPPORT_GRANT_MAX_MINUTES at once, SUPPORT_GRANT_DAILY_MINUTES a day with the direct grants, or a
superuser); each is audited and mailed to the holder.

The finding: a support user assigned an existing 500,000-minute plan renewing today; the hourly
renewal took the customer from 10 to 500,010 minutes, with no mail, while the same user's direct
grant of 20,000 was refused."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from accounts.services import account_create
from audit.models import AuditEvent
from billing.models import LedgerEntry, Plan
from billing.selectors import account_balance
from billing.services import plan_change, renew_due_plans

pytestmark = pytest.mark.django_db

REFUSED = "needs a superuser"


def change_account(client, account, **fields):
    """POST the account's change form as a browser would: with the inlines' management forms."""
    url = reverse("admin:accounts_account_change", args=[account.pk])
    context = client.get(url).context
    form = context["adminform"].form
    data = {}
    for inline in context["inline_admin_formsets"]:  # read-only inlines: no rows to send
        data.update({f"{inline.formset.prefix}-TOTAL_FORMS": 0, f"{inline.formset.prefix}-INITIAL_FORMS": 0})
    data.update({name: form.initial.get(name) or "" for name in ("plan", "renews_on")})
    return client.post(url, {**data, **fields})


def edit_plan(client, plan, monthly_minutes):
    url = reverse("admin:billing_plan_change", args=[plan.pk])
    return client.post(url, {"name": plan.name, "monthly_minutes": str(monthly_minutes), "active": "on"})


def grant(client, account, minutes):
    url = reverse("admin:accounts_account_grant", args=[account.pk])
    return client.post(url, {"minutes": str(minutes), "reason": "Goodwill"})


def mails_to(mailoutbox, email):
    return [message for message in mailoutbox if message.to == [email]]


def test_a_support_user_cannot_assign_a_plan_above_the_grant_limit(support_client, admin_client, account):
    """The finding, as it was reproduced: 500,000 minutes at the next hourly renewal."""
    huge = Plan.objects.create(name="Enterprise", monthly_minutes=500_000)
    today = timezone.localdate().isoformat()
    refused = change_account(support_client, account, plan=huge.pk, renews_on=today)
    assert refused.status_code == 200 and REFUSED in refused.content.decode()
    account.refresh_from_db()
    assert account.plan is None
    assert renew_due_plans() == 0 and account_balance(account.pk) == 600

    assert change_account(admin_client, account, plan=huge.pk, renews_on=today).status_code == 302
    assert renew_due_plans() == 1 and account_balance(account.pk) == 600 + 500_000 * 60


def test_a_plan_assigned_by_support_is_audited_and_mailed_to_the_holder(
    support_client, support_user, account, mailoutbox, django_capture_on_commit_callbacks
):
    team = Plan.objects.create(name="Team", monthly_minutes=1000)
    with django_capture_on_commit_callbacks(execute=True):
        response = change_account(support_client, account, plan=team.pk, renews_on=timezone.localdate().isoformat())
    assert response.status_code == 302
    event = AuditEvent.objects.get(account=account, action="plan_changed")
    assert event.actor == support_user and event.minutes == 1000
    subjects = [message.subject for message in mails_to(mailoutbox, "alice@example.com")]
    assert "Your plan was changed" in subjects
    [notice] = [m for m in mailoutbox if m.subject == "Your plan was changed"]
    assert "Team (1000 min/month)" in notice.body


@override_settings(SUPPORT_GRANT_MAX_MINUTES=10_000, SUPPORT_GRANT_DAILY_MINUTES=25_000)
def test_plans_assigned_and_minutes_granted_share_the_daily_total(support_client, account, other_account):
    third = account_create("carol@example.com")
    plan = Plan.objects.create(name="Pro", monthly_minutes=10_000)
    today = timezone.localdate().isoformat()
    assert grant(support_client, account, 10_000).status_code == 302
    assert change_account(support_client, other_account, plan=plan.pk, renews_on=today).status_code == 302
    refused = change_account(support_client, third, plan=plan.pk, renews_on=today)
    assert refused.status_code == 200 and "20,000 minutes in the last 24 hours" in refused.content.decode()
    third.refresh_from_db()
    assert third.plan is None
    assert grant(support_client, third, 5_001).status_code == 200, "the plan counted in the direct grants' total"
    assert grant(support_client, third, 5_000).status_code == 302


@override_settings(SUPPORT_GRANT_MAX_MINUTES=10_000, SUPPORT_GRANT_DAILY_MINUTES=15_000)
def test_moving_the_renewal_date_earlier_counts_as_a_grant(
    support_client, support_user, admin_user, account, mailoutbox, django_capture_on_commit_callbacks
):
    """Each move of the renewal date to today or tomorrow brought one more period forward."""
    today = timezone.localdate()
    plan = Plan.objects.create(name="Pro", monthly_minutes=8_000)
    plan_change(account, plan=plan, renews_on=today + timedelta(days=20), by=admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        assert change_account(support_client, account, renews_on=today.isoformat()).status_code == 302
    moved = AuditEvent.objects.get(account=account, action="renewal_changed", actor=support_user)
    assert moved.minutes == 8_000
    assert "Your plan's renewal date was changed" in [m.subject for m in mails_to(mailoutbox, "alice@example.com")]
    assert renew_due_plans() == 1
    account.refresh_from_db()
    assert account.renews_on > today

    tomorrow = (today + timedelta(days=1)).isoformat()
    refused = change_account(support_client, account, renews_on=tomorrow)
    assert refused.status_code == 200 and "8,000 minutes in the last 24 hours" in refused.content.decode()
    account.refresh_from_db()
    assert account.renews_on > today + timedelta(days=1)
    later = (account.renews_on + timedelta(days=3)).isoformat()
    assert change_account(support_client, account, renews_on=later).status_code == 302, "a later date adds nothing"
    assert LedgerEntry.objects.filter(account=account, source="plan").count() == 1


@override_settings(SUPPORT_GRANT_MAX_MINUTES=10_000, SUPPORT_GRANT_DAILY_MINUTES=15_000)
def test_raising_a_plans_minutes_counts_for_every_account_on_it(
    support_client, support_user, admin_user, account, other_account, mailoutbox, django_capture_on_commit_callbacks
):
    """A staff user allowed to change plans (not a superuser) raises the minutes of a plan that
    accounts are on: each account's next renewal grows by the raise."""
    support_user.user_permissions.add(Permission.objects.get(codename="change_plan"))
    plan = Plan.objects.create(name="Pro", monthly_minutes=300)
    renews = timezone.localdate() + timedelta(days=5)
    for holder in (account, other_account):
        plan_change(holder, plan=plan, renews_on=renews, by=admin_user)

    refused = edit_plan(support_client, plan, 500_000)
    assert refused.status_code == 200 and REFUSED in refused.content.decode()
    refused = edit_plan(support_client, plan, 300 + 7_501)  # twice 7,501 is over the day's 15,000
    assert refused.status_code == 200 and "in the last 24 hours" in refused.content.decode()
    plan.refresh_from_db()
    assert plan.monthly_minutes == 300

    with django_capture_on_commit_callbacks(execute=True):
        assert edit_plan(support_client, plan, 300 + 7_500).status_code == 302
    plan.refresh_from_db()
    assert plan.monthly_minutes == 7_800
    events = AuditEvent.objects.filter(action="plan_changed", actor=support_user)
    assert sorted(e.account_id for e in events) == sorted([account.pk, other_account.pk])
    assert all(e.minutes == 7_500 and "Pro: 300 min/month → 7800 min/month" in e.detail for e in events)
    for email in ("alice@example.com", "bob@example.com"):
        assert "Your plan was changed" in [m.subject for m in mails_to(mailoutbox, email)]
    assert grant(support_client, account, 1).status_code == 200, "the day's total is spent"
    assert edit_plan(support_client, plan, 300).status_code == 302, "lowering adds nothing"
