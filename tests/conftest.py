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


# The files that take a minute or more (make test's --durations), heaviest first. bin/test hands
# whole files to its processes in the order collected, so these go out first and the light files
# fill in around them: the processes finish together, not one alone on the last long file.
HEAVY_FILES = (
    "tests/pipeline/test_multilingual_asr.py",
    "tests/fleet/test_fleet.py",
    "tests/api/test_schemathesis.py",
    "tests/e2e/doors/test_openai_sdk.py",
    "tests/e2e/doors/test_lying_media.py",
    "tests/e2e/test_speech_jobs.py",
    "tests/e2e/test_translated_jobs.py",
    "tests/e2e/test_fair_turns.py",
    "tests/e2e/test_killed_worker.py",
    "tests/e2e/test_object_storage.py",
    "tests/test_readme.py",
    "tests/e2e/test_spread_recognition.py",
)


def pytest_collection_modifyitems(config, items):
    """The heavy files first, in HEAVY_FILES' order; then the files that start a worker and the
    model (markers e2e, fleet); then the rest, each as collected (a file's tests stay in order)."""

    def weight(item) -> tuple[int, int]:
        path = item.nodeid.split("::", 1)[0]
        if path in HEAVY_FILES:
            return (0, HEAVY_FILES.index(path))
        return (1, 0) if item.get_closest_marker("e2e") or item.get_closest_marker("fleet") else (2, 0)

    items.sort(key=weight)  # stable: within a weight the collection order holds


@pytest.fixture(scope="session", autouse=True)
def _quick_password_hashes():
    """Passwords hashed with 1,000 PBKDF2 rounds, not Django's 1,000,000 (0.3 s a hash here): the
    same algorithm, so a web process the test starts (its own settings) checks them too."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["tests.support.QuickPBKDF2Hasher", *settings.PASSWORD_HASHERS]):
        yield


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
