"""AuditEvent moved from accounts to its own app: a database migrated before the move keeps its
audit rows, and the support group keeps its right to read them."""

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("accounts", "0004_support_group"), ("audit", None)]

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def old_database():
    """The database as it was before the move; migrated to the latest state again afterwards."""
    executor = MigrationExecutor(connection)
    executor.migrate([("accounts", "0003_auditevent"), ("audit", None)])  # so the support group is made afresh
    executor.loader.build_graph()
    executor.migrate(BEFORE)
    executor.loader.build_graph()
    yield executor.loader.project_state(BEFORE[0]).apps
    call_command("migrate", verbosity=0)


def test_an_existing_audit_log_survives_the_move(old_database):
    User = old_database.get_model("auth", "User")
    Account = old_database.get_model("accounts", "Account")
    OldEvent = old_database.get_model("accounts", "AuditEvent")
    user = User.objects.create(username="old@example.com", email="old@example.com")
    account = Account.objects.create(user=user)
    OldEvent.objects.create(account=account, action="token_issued", detail="New token vts_abcdefgh…")
    OldEvent.objects.create(account=account, action="minutes_granted", actor=user, detail="5 minutes: goodwill")
    group = old_database.get_model("auth", "Group").objects.get(name="support")
    assert group.permissions.filter(content_type__app_label="accounts", codename="view_auditevent").exists()

    call_command("migrate", verbosity=0)

    from django.contrib.auth.models import Group

    from audit.models import AuditEvent

    events = list(AuditEvent.objects.filter(account_id=account.pk).order_by("id"))
    assert [(e.action, e.detail, e.actor_id) for e in events] == [
        ("token_issued", "New token vts_abcdefgh…", None),
        ("minutes_granted", "5 minutes: goodwill", user.pk),
    ]
    assert (
        Group.objects.get(name="support")
        .permissions.filter(content_type__app_label="audit", codename="view_auditevent")
        .exists()
    )
    AuditEvent.objects.create(account_id=account.pk, action="token_revoked")  # the table takes new rows
    assert AuditEvent.objects.filter(account_id=account.pk).count() == 3
