"""Support staff for the admin tests: the `support` group of the data migration, and its users."""

from __future__ import annotations

import importlib

import pytest

SUPPORT_MIGRATIONS = (
    "accounts.migrations.0004_support_group",
    "webhooks.migrations.0002_support_group",
    "billing.migrations.0007_support_views_live_streams",
)


def support_group():
    """The migration's group. A transactional test elsewhere may have flushed it: then the
    migration's own function builds it again, so the tests check what the migration makes."""
    from django.apps import apps
    from django.contrib.auth.models import Group

    group = Group.objects.filter(name="support").first()
    if group is None:
        importlib.import_module(SUPPORT_MIGRATIONS[0]).create_support_group(apps, None)
        importlib.import_module(SUPPORT_MIGRATIONS[1]).grant_support(apps, None)
        importlib.import_module(SUPPORT_MIGRATIONS[2]).grant_support(apps, None)
        group = Group.objects.get(name="support")
        # accounts 0004 gave the view of the audit events while they were accounts'; audit 0001
        # moved their content type to `audit`, permission and all, where today's models have it
        from django.contrib.auth.models import Permission

        group.permissions.add(*Permission.objects.filter(content_type__app_label="audit", codename__startswith="view_"))
    return group


def make_support_user(username="sam@support.example", password="staff-pass-4821"):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(username, email=username, password=password, is_staff=True)
    user.groups.add(support_group())
    return user


@pytest.fixture
def support_user(db):
    return make_support_user()


@pytest.fixture
def support_client(client, support_user):
    client.force_login(support_user)
    return client
