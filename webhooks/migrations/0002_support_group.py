"""The `support` group (accounts 0004) also sees webhooks, sets an account's webhook URL, rotates
its secret and sends events again; it deletes nothing."""
from django.contrib.auth.management import create_permissions
from django.db import migrations

CODENAMES = ("view_endpoint", "add_endpoint", "change_endpoint", "view_message", "change_message", "view_attempt")


def grant_support(apps, schema_editor):
    app_config = apps.get_app_config("webhooks")
    original = getattr(app_config, "models_module", None)
    app_config.models_module = original or True  # create_permissions skips apps without models
    try:
        create_permissions(app_config, apps=apps, verbosity=0)
    finally:
        app_config.models_module = original
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name="support")
    group.permissions.add(*Permission.objects.filter(content_type__app_label="webhooks", codename__in=CODENAMES))


def revoke_support(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    for group in apps.get_model("auth", "Group").objects.filter(name="support"):
        group.permissions.remove(*Permission.objects.filter(content_type__app_label="webhooks", codename__in=CODENAMES))


class Migration(migrations.Migration):

    dependencies = [
        ("webhooks", "0001_initial"),
        ("accounts", "0004_support_group"),
    ]

    operations = [migrations.RunPython(grant_support, revoke_support)]
