#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
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
