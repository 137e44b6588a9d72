"""Real-browser fixtures the browser tests share: Debian's Chromium (installed with apt-get when
missing, never `playwright install`), driven by Playwright, and screenshots a person can look at
under tests/artifacts/screenshots/.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parent / "artifacts" / "screenshots"
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True, "has_touch": True}
DESKTOP = {"viewport": {"width": 1280, "height": 900}}


@pytest.fixture(scope="session")
def chromium_executable():
    """Debian's Chromium, installed now if it is missing. Never `playwright install`."""
    if not os.path.exists(CHROMIUM):
        if os.geteuid() != 0:
            pytest.fail(
                f"{CHROMIUM} is missing and installing it needs root: run `apt-get install -y chromium`.", pytrace=False
            )
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
            result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
            if result.returncode != 0:
                pytest.fail(
                    f"`{' '.join(command)}` failed ({result.returncode}):\n{result.stdout[-2000:]}\n"
                    f"{result.stderr[-2000:]}",
                    pytrace=False,
                )
        if not os.path.exists(CHROMIUM):
            pytest.fail(f"apt-get installed chromium but {CHROMIUM} is still missing.", pytrace=False)
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium_executable, django_db_setup):
    """One Chromium for this module (a module that needs Chromium's own switches, a fake
    microphone, overrides this fixture with `launched(chromium_executable, *switches)`)."""
    with launched(chromium_executable) as chromium:
        yield chromium


@contextlib.contextmanager
def launched(executable: str, *switches: str):
    """Chromium with CHROMIUM_ARGS and `switches`. The test database is made first (the fixture
    asks for django_db_setup): Playwright's sync API keeps an asyncio loop in this thread, next to
    which Django refuses ORM calls unless DJANGO_ALLOW_ASYNC_UNSAFE is set; it is, while the
    browser runs (the tests use the ORM between browser steps, and their database teardown runs
    while the browser is open)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "The browser tests need Playwright: pip install playwright (never `playwright install`).", pytrace=False
        )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=[*CHROMIUM_ARGS, *switches])
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def new_page(browser):
    """new_page(**context options) -> a page with its own cookies; closed after the test."""
    contexts = []

    def make(**options):
        context = browser.new_context(**options)
        context.set_default_timeout(15_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


class Shots:
    """Saves a full-page screenshot of each page visited: <test>_<nn>_<step>.png."""

    def __init__(self, prefix: str):
        self.prefix, self.count = prefix, 0
        for old in SCREENSHOTS.glob(f"{prefix}_*.png"):
            old.unlink()

    def __call__(self, page, step: str) -> Path:
        self.count += 1
        path = SCREENSHOTS / f"{self.prefix}_{self.count:02d}_{step}.png"
        page.screenshot(path=str(path), full_page=True)
        return path
