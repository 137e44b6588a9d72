"""A pytest plugin (pyproject's addopts: `-p config.pytest_secret_key`): the suite's own SECRET_KEY,
set before pytest-django reads the settings, which refuse to load without one. It lives here, not
in tests/, because -p plugins are imported before tests/ is on the path. bin/test sets one too;
this covers `pytest` run by hand. Subprocesses the tests start (workers, gunicorn, manage.py)
inherit it."""

import os
import secrets

os.environ.setdefault("SECRET_KEY", "test-suite-" + secrets.token_urlsafe(48))
