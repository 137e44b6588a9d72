from datetime import date

import pytest
from django.core.management import call_command

from billing.models import LedgerEntry, Plan
from billing.selectors import account_balance
from billing.services import next_period, renew_due_plans


@pytest.fixture
def subscribed(account):
    account.plan = Plan.objects.create(name="Pro", monthly_minutes=300)
    account.renews_on = date(2026, 1, 31)
    account.save()
    return account


def test_renewal_grants_the_plans_minutes_on_the_renewal_date_once(subscribed):
    assert renew_due_plans(today=date(2026, 1, 30)) == 0
    assert renew_due_plans(today=date(2026, 1, 31)) == 1
    assert renew_due_plans(today=date(2026, 1, 31)) == 0
    subscribed.refresh_from_db()
    assert subscribed.renews_on == date(2026, 2, 28)
    assert account_balance(subscribed.pk) == 600 + 300 * 60


def test_after_missed_days_each_period_is_granted_exactly_once(subscribed):
    assert renew_due_plans(today=date(2026, 3, 2)) == 2  # Jan 31 and Feb 28 periods
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
