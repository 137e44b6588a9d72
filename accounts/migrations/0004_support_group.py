"""The `support` group: staff who help customers.

They can view everything of the service (accounts, tokens, audit, plans, ledger, jobs, batches,
translations, logins, task results), add ledger grants, change accounts (token actions) and jobs
(retry, cancel), and delete nothing. Permissions are created here first: on a fresh database they
do not exist until post_migrate, after every migration has run.
"""
from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUP = "support"
VIEW_APPS = ("accounts", "billing", "transcription", "auth", "django_celery_results")
EXTRA = (
    ("billing", "add_ledgerentry"),
    ("accounts", "change_account"),
    ("transcription", "change_job"),
)


def create_support_group(apps, schema_editor):
    for app_config in apps.get_app_configs():
        original = getattr(app_config, "models_module", None)
        app_config.models_module = original or True  # create_permissions skips apps without models
        try:
            create_permissions(app_config, apps=apps, verbosity=0)
        finally:
            app_config.models_module = original
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=GROUP)
    wanted = list(Permission.objects.filter(content_type__app_label__in=VIEW_APPS, codename__startswith="view_"))
    for app_label, codename in EXTRA:
        wanted.append(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    group.permissions.set(wanted)


def remove_support_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=GROUP).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0003_auditevent"),
        ("billing", "0001_initial"),
        ("transcription", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("django_celery_results", "0014_alter_taskresult_status"),
    ]

    operations = [migrations.RunPython(create_support_group, remove_support_group)]
