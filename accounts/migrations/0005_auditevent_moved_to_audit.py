"""AuditEvent now belongs to the audit app (audit.0001 takes over its table and rows): it leaves
the accounts app's state only; nothing in the database changes."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0004_support_group"),
        ("audit", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="AuditEvent")],
            database_operations=[],
        ),
    ]
