"""Sign-ups made before pending sign-ups had their own table (inactive logins that never signed
in) are dropped by the migration when they hold nothing, so that they no longer hold the address;
a deactivated account, and anything with minutes, is left as it is."""

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("accounts", "0008_signup")]

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def old_database():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    executor.loader.build_graph()
    yield executor.loader.project_state(BEFORE[0]).apps
    call_command("migrate", verbosity=0)


def test_legacy_unconfirmed_sign_ups_stop_holding_their_address(old_database):
    User = old_database.get_model("auth", "User")
    Account = old_database.get_model("accounts", "Account")
    LedgerEntry = old_database.get_model("billing", "LedgerEntry")

    def login(email, *, active, address=None):
        user = User.objects.create(username=email, email=email, is_active=active, password="!")
        return Account.objects.create(user=user, signup_address=address)

    login("pending@example.com", active=False, address="198.51.100.1")
    login("api.only@example.com", active=False)  # create_account, then deactivated by staff
    paid = login("paid@example.com", active=False, address="198.51.100.2")
    LedgerEntry.objects.create(account=paid, kind="grant", source="staff", seconds=60, reason="kept")
    login("active@example.com", active=True, address="198.51.100.3")

    call_command("migrate", verbosity=0)

    from django.contrib.auth import get_user_model

    remaining = set(get_user_model().objects.values_list("email", flat=True))
    assert remaining == {"api.only@example.com", "paid@example.com", "active@example.com"}
