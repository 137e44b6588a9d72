"""Shared fixtures. The suite runs on the real PostgreSQL and Redis of the machine (bin/test sets
DATABASE_URL and REDIS_URL); it stops at once, loudly, if either is missing or down."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.browser import browser, chromium_executable, new_page  # noqa: F401 (fixtures for every test module)
from tests.staff import support_client, support_user  # noqa: F401 (fixtures for every test module)


def pytest_configure(config):
    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine:
        pytest.exit(f"The tests need PostgreSQL (DATABASE_URL); got {engine}. Run them with `make test`.", returncode=3)
    if not settings.REDIS_URL:
        pytest.exit("The tests need Redis (REDIS_URL). Run them with `make test`.", returncode=3)
    import psycopg
    import redis

    db = settings.DATABASES["default"]
    try:
        psycopg.connect(
            host=db["HOST"] or None,
            port=db["PORT"] or None,
            user=db["USER"] or None,
            password=db["PASSWORD"] or None,
            dbname=db["NAME"],
            connect_timeout=5,
        ).close()
    except psycopg.Error as error:
        pytest.exit(f"PostgreSQL is not reachable at {db['HOST']}:{db['PORT']}: {error}", returncode=3)
    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=5).ping()
    except redis.RedisError as error:
        pytest.exit(f"Redis is not reachable at {settings.REDIS_URL}: {error}", returncode=3)


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Each test starts with empty rate-limit windows and waiting lines, and lists playlists afresh (the API keeps a
    listing for a minute, and tests reuse feed addresses with other contents); and with Redis taken as
    up: a test that made this process's Redis calls fail (a dead address) leaves no outage pause
    (config.shared_cache.mark_down) to the next test, whichever file it is in."""
    import redis

    from config import shared_cache

    shared_cache._down_until = 0.0

    client = redis.Redis.from_url(settings.REDIS_URL)
    keys = [*client.scan_iter("ratelimit:*"), *client.scan_iter("cache:playlist:*"), *client.scan_iter("line:*")]
    if keys:
        client.delete(*keys)
    yield


@pytest.fixture
def broker():
    """The Celery broker's queues in Redis, emptied before and after (read them with support.queued)."""
    import redis

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queues = ("media", "asr", "burn", "hooks")
    client.delete(*queues)
    yield client
    client.delete(*queues)


@pytest.fixture
def tasks_at_once():
    """Celery tasks run where they are queued (the password-reset mail of the hooks worker), for the
    tests that read what a task does in the same breath as the request that queued it."""
    from config.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = False


@pytest.fixture
def account(db):
    from accounts.services import account_create

    return account_create("alice@example.com")


@pytest.fixture
def token(account):
    from accounts.services import token_issue

    return token_issue(account)


@pytest.fixture
def api(client, token):
    """Django's test client that sends the account's bearer token."""
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return client


@pytest.fixture
def other_account(db):
    from accounts.services import account_create

    return account_create("bob@example.com")


@pytest.fixture(scope="session")
def media_server(tmp_path_factory):
    """A MediaServer on 127.0.0.1 serving test media made once per session (see harness/media_files.py)."""
    from harness.media_files import build_media
    from harness.media_server import MediaServer

    folder = tmp_path_factory.mktemp("media")
    build_media(folder)
    with MediaServer(folder) as server:
        yield server
