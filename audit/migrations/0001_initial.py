"""AuditEvent moves here from accounts. Its table, accounts_auditevent, and its rows stay where they
are: only Django's state moves (accounts.0005 drops the model from the accounts app's state). The
content type is renamed rather than replaced, so the permissions on it, the support group's
view_auditevent among them, and the admin's history entries carry over."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def move_content_type(apps, schema_editor, source="accounts", target="audit"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label=target, model="auditevent").exists():
        ContentType.objects.filter(app_label=source, model="auditevent").update(app_label=target)


def move_content_type_back(apps, schema_editor):
    move_content_type(apps, schema_editor, source="audit", target="accounts")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("accounts", "0004_support_group"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AuditEvent",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("action", models.CharField(choices=[("token_issued", "Token issued"), ("token_replaced", "Token replaced"), ("token_revoked", "Token revoked"), ("minutes_granted", "Minutes granted"), ("job_retried", "Job retried"), ("job_cancelled", "Job cancelled")], max_length=20)),
                        ("detail", models.TextField(blank=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        ("account", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="audit_events", to="accounts.account")),
                        ("actor", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="audit_events", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        "db_table": "accounts_auditevent",
                        "ordering": ["-created_at", "-id"],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_type, move_content_type_back),
    ]
