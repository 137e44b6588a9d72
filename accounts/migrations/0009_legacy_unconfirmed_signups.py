"""Sign-ups made before pending sign-ups had their own table were inactive logins that never
signed in, with a sign-up address and nothing else. They held the address (issue 32: the next
sign-up inherited the first password, and a deactivated account could be re-activated through
them), and their links no longer work: drop those that hold nothing, so that their holders can
sign up again. Anything with minutes, jobs, a token or an audit entry is left alone."""

from django.db import migrations
from django.db.models import Exists, OuterRef


def drop_unconfirmed_logins(apps, schema_editor):
    Account = apps.get_model("accounts", "Account")
    LedgerEntry = apps.get_model("billing", "LedgerEntry")
    Job = apps.get_model("transcription", "Job")
    Batch = apps.get_model("transcription", "Batch")
    AuditEvent = apps.get_model("audit", "AuditEvent")
    ApiToken = apps.get_model("accounts", "ApiToken")
    Message = apps.get_model("webhooks", "Message")
    holding = [
        Exists(model.objects.filter(account=OuterRef("pk")))
        for model in (LedgerEntry, Job, Batch, AuditEvent, ApiToken, Message)
    ]
    pending = Account.objects.filter(
        signup_address__isnull=False, user__is_active=False, user__last_login__isnull=True
    ).exclude(user__is_staff=True)
    for held in holding:
        pending = pending.exclude(held)
    for account in pending.select_related("user"):
        user = account.user
        account.delete()
        user.delete()


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_signup"),
        ("billing", "0001_initial"),
        ("transcription", "0004_job_detected_language_probability"),
        ("audit", "0003_plan_actions"),
        ("webhooks", "0002_support_group"),
    ]

    operations = [migrations.RunPython(drop_unconfirmed_logins, migrations.RunPython.noop)]
