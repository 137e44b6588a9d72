from datetime import date, timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from accounts.models import Account
from audit.models import AuditEvent
from billing.models import LedgerEntry, Plan
from billing.selectors import account_balance
from billing.services import next_period, plan_change, renew_due_plans


@pytest.fixture
def subscribed(account):
    plan = Plan.objects.create(name="Pro", monthly_minutes=300)
    plan_change(account, plan=plan, renews_on=date(2026, 1, 31), today=date(2026, 1, 10))
    return account


def test_renewal_grants_the_plans_minutes_on_the_renewal_date_once(subscribed):
    assert renew_due_plans(today=date(2026, 1, 30)) == 0
    assert renew_due_plans(today=date(2026, 1, 31)) == 1
    assert renew_due_plans(today=date(2026, 1, 31)) == 0
    subscribed.refresh_from_db()
    assert subscribed.renews_on == date(2026, 2, 28)
    assert account_balance(subscribed.pk) == 600 + 300 * 60


def test_after_missed_days_each_period_is_granted_exactly_once_one_per_run(subscribed):
    assert renew_due_plans(today=date(2026, 3, 2)) == 1  # Jan 31
    assert renew_due_plans(today=date(2026, 3, 2)) == 1  # Feb 28, at the next (hourly) run
    assert renew_due_plans(today=date(2026, 3, 2)) == 0
    periods = LedgerEntry.objects.filter(source="plan").values_list("period", flat=True)
    assert sorted(periods) == [date(2026, 1, 31), date(2026, 2, 28)]


def test_inactive_plans_grant_nothing(subscribed):
    Plan.objects.update(active=False)
    assert renew_due_plans(today=date(2026, 6, 1)) == 0


def test_next_period_keeps_the_day_or_the_months_end():
    assert next_period(date(2026, 1, 31)) == date(2026, 2, 28)
    assert next_period(date(2026, 12, 15)) == date(2027, 1, 15)


def test_grant_minutes_command_adds_a_staff_grant(account, capsys):
    call_command("grant_minutes", account.email, "15", "--reason", "Goodwill after outage")
    entry = LedgerEntry.objects.get(source="staff")
    assert entry.seconds == 900 and entry.reason == "Goodwill after outage"
    assert account_balance(account.pk) == 1500
    assert "25 min" in capsys.readouterr().out


def test_a_renewal_date_long_past_grants_no_period_before_the_plan_was_assigned(subscribed):
    """The finding: renews_on set to 2000-01-01 granted 323 periods in one run."""
    Account.objects.filter(pk=subscribed.pk).update(renews_on=date(2000, 1, 1))  # e.g. from a shell
    assert renew_due_plans(today=date(2026, 3, 20)) == 1
    assert renew_due_plans(today=date(2026, 3, 20)) == 1
    assert renew_due_plans(today=date(2026, 3, 20)) == 0
    periods = sorted(LedgerEntry.objects.filter(source="plan").values_list("period", flat=True))
    assert periods == [date(2026, 2, 1), date(2026, 3, 1)], "only periods after the assignment (Jan 10)"
    assert account_balance(subscribed.pk) == 600 + 2 * 300 * 60


def test_renewal_grants_name_their_plan_cause_and_who_assigned_it(account, support_user):
    today = timezone.localdate()
    plan_change(account, plan=Plan.objects.create(name="Team", monthly_minutes=1000), renews_on=today, by=support_user)
    assert renew_due_plans() == 1
    grant = LedgerEntry.objects.get(source="plan")
    assert grant.created_by == support_user
    assert grant.reason.startswith(f"Team plan renewal: 1000 minutes for the period from {today.isoformat()}")
    assert support_user.email in grant.reason
    renewed = AuditEvent.objects.get(action="plan_renewed")
    assert "Team plan" in renewed.detail and next_period(today).isoformat() in renewed.detail


def admin_change(client, url, **fields):
    """POST the account's change form as a browser would: with the inlines' management forms."""
    context = client.get(url).context
    form = context["adminform"].form
    data = {}
    for inline in context["inline_admin_formsets"]:  # read-only inlines: no rows to send
        data.update({f"{inline.formset.prefix}-TOTAL_FORMS": 0, f"{inline.formset.prefix}-INITIAL_FORMS": 0})
    data.update({name: form.initial.get(name) or "" for name in ("plan", "renews_on")})
    return client.post(url, {**data, **fields})


def test_support_cannot_set_a_renewal_date_in_the_past_and_every_change_is_audited(
    support_client, support_user, account
):
    url = reverse("admin:accounts_account_change", args=[account.pk])
    plan = Plan.objects.create(name="Team", monthly_minutes=1000)
    response = admin_change(support_client, url, plan=plan.pk, renews_on="2000-01-01")
    assert response.status_code == 200
    assert "The renewal date cannot be in the past." in response.content.decode()
    account.refresh_from_db()
    assert (account.plan, account.renews_on) == (None, None)
    assert renew_due_plans() == 0 and account_balance(account.pk) == 600

    today = timezone.localdate()
    tomorrow = today + timedelta(days=1)
    assert admin_change(support_client, url, plan=plan.pk, renews_on=tomorrow.isoformat()).status_code == 302
    events = {e.action: e for e in AuditEvent.objects.filter(account=account)}
    assert events["plan_changed"].actor == support_user
    assert events["plan_changed"].detail == "Plan: no plan → Team (1000 min/month)"
    assert events["renewal_changed"].detail == f"Renewal date: none → {tomorrow.isoformat()}"
    account.refresh_from_db()
    assert (account.plan, account.plan_assigned_on, account.plan_assigned_by) == (plan, today, support_user)

    assert admin_change(support_client, url, renews_on=today.isoformat()).status_code == 302
    changed = AuditEvent.objects.filter(account=account, action="renewal_changed").first()
    assert changed.detail == f"Renewal date: {tomorrow.isoformat()} → {today.isoformat()}"
    assert changed.actor == support_user
    assert AuditEvent.objects.filter(account=account, action="plan_changed").count() == 1
