"""The `support` group (accounts 0004) also views live streams (the admin's read-only list), which
came after it: it was given the view of every billing model there was then."""
from django.contrib.auth.management import create_permissions
from django.db import migrations


def grant_support(apps, schema_editor):
    app_config = apps.get_app_config("billing")
    original = getattr(app_config, "models_module", None)
    app_config.models_module = original or True  # create_permissions skips apps without models
    try:
        create_permissions(app_config, apps=apps, verbosity=0)
    finally:
        app_config.models_module = original
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for group in Group.objects.filter(name="support"):
        group.permissions.add(Permission.objects.get(content_type__app_label="billing", codename="view_livestream"))


def revoke_support(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    for group in apps.get_model("auth", "Group").objects.filter(name="support"):
        group.permissions.remove(*Permission.objects.filter(content_type__app_label="billing", codename="view_livestream"))


class Migration(migrations.Migration):

    dependencies = [
        ("billing", "0006_live_stream_job"),
        ("accounts", "0004_support_group"),
    ]

    operations = [migrations.RunPython(grant_support, revoke_support)]
