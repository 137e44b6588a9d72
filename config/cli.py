"""The installed package's commands (pyproject.toml [project.scripts]):

transcription-service ...       manage.py for an installed wheel (no checkout): migrate, check, ...
transcription-models fetch      the speaker models' weights (config.models_cli)
"""

from __future__ import annotations

import os
import sys


def manage() -> None:
    """manage.py: the settings loaded first, so a missing SECRET_KEY is said plainly."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 (load the settings now)
    except ImproperlyConfigured as error:
        # Django would carry on without settings and fail later with an unrelated message
        # ("Models aren't loaded yet"); say what is wrong instead (e.g. no SECRET_KEY).
        sys.exit(f"ImproperlyConfigured: {error}")
    execute_from_command_line(sys.argv)


def models() -> int:
    """Imported here: the speakers' package is heavy, and manage() has no use for it."""
    from . import models_cli

    return models_cli.main()
