"""The website in a real browser (Debian's Chromium through Playwright) against the live server, a
real Celery worker and media served on 127.0.0.1: a newcomer lands on `/`, signs up, queues a
video in the form, watches its progress without reloading, reads the transcript, downloads the SRT
and plays the burned video; and the API docs render their operations with the network cut off.

Every step is photographed at phone (390 px) and desktop (1366 px) widths under
tests/artifacts/screenshots/ for a person to look at.
"""

from __future__ import annotations

import re

import pytest

from harness.processes import running_worker
from tests.browser import Shots

PASSWORD = "correct-horse-battery-42"
PHONE_WIDTH, DESKTOP_WIDTH = 390, 1366
# Committed transactions (the worker and the live server read what the test wrote);
# serialized_rollback puts back what the migrations wrote, for the tests after these.
browser_db = pytest.mark.django_db(transaction=True, serialized_rollback=True)


class BothWidths(Shots):
    """Each step photographed at phone and desktop widths, full page."""

    def __call__(self, page, step: str):
        for width, label in ((PHONE_WIDTH, "phone"), (DESKTOP_WIDTH, "desktop")):
            page.set_viewport_size({"width": width, "height": 844 if width == PHONE_WIDTH else 900})
            super().__call__(page, f"{step}_{label}")
        page.set_viewport_size({"width": PHONE_WIDTH, "height": 844})


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker, tmp_path_factory):
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    with running_worker(log, ALLOW_PRIVATE_URLS="true") as process:
        yield process


def confirm_email_if_asked(page, email: str) -> None:
    """Sign-up may ask the new holder to confirm their address first: follow the link it mailed
    (Django's outbox: the live server runs in this process) and press its page's button."""
    from django.core import mail

    for message in mail.outbox:
        if email in message.to:
            link = re.search(r"https?://\S+", str(message.body))
            assert link, message.body
            page.goto(link.group(0))
            button = page.get_by_role("button", name="Confirm and sign in")
            if button.count():
                page.get_by_label("Password").fill(PASSWORD)
                button.click()
                page.wait_for_load_state()
            return


@browser_db
def test_a_newcomer_signs_up_queues_a_video_and_watches_the_result(
    live_server, new_page, worker, media_server, settings
):
    from playwright.sync_api import expect

    settings.PUBLIC_BASE_URL = live_server.url  # where the mailed link points

    shot = BothWidths("website")
    page = new_page(viewport={"width": PHONE_WIDTH, "height": 844}, accept_downloads=True)
    page.goto(f"{live_server.url}/")
    expect(page.get_by_role("heading", name=re.compile("Transcripts, subtitles"))).to_be_visible()
    expect(page.locator("#prices")).to_contain_text("5× the video's length")
    expect(page.locator("#mcp-config")).to_contain_text(f"{live_server.url}/mcp")
    shot(page, "landing")

    page.get_by_role("link", name=re.compile("Sign up")).first.click()
    email = "newcomer@example.com"
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    confirm_email_if_asked(page, email)
    page.goto(f"{live_server.url}/")
    if not page.get_by_role("button", name="Sign out").count():  # confirmed, but not signed in yet
        page.goto(f"{live_server.url}/account/login/")
        page.get_by_label("Email").fill(email)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="Queue a video").click()
    expect(page).to_have_url(f"{live_server.url}/jobs/new/")
    page.get_by_label("Video, playlist or channel URL").fill(media_server.url("/files/speech.mp4"))
    page.get_by_label("Video with the subtitles burned in").check()
    expect(page.get_by_label("Video quality")).to_be_visible()
    expect(page.locator("#estimate")).to_have_text("Costs 3 minutes of your balance per minute of video.")
    shot(page, "form")
    page.get_by_role("button", name="Queue").click()

    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f-]{36}/$"))
    job_id = page.url.rstrip("/").rsplit("/", 1)[1]
    page.evaluate("window.notReloaded = true")
    shot(page, "job_queued")
    state = page.locator(f'[data-job-state="{job_id}"] [data-state]')
    # The poller moves the state on while the page stays the same page.
    page.wait_for_function(
        "() => window.notReloaded && !['waiting', 'preparing'].includes("
        "document.querySelector('[data-state]').textContent.trim())",
        timeout=180_000,
    )
    seen = state.inner_text()
    assert seen not in ("waiting", "preparing")
    shot(page, "job_running")

    # When the job ends, the page reloads itself once to show the results.
    page.wait_for_function("() => !window.notReloaded", timeout=300_000)
    expect(state).to_have_text("done")
    transcript = page.locator("#transcript")
    expect(transcript).to_contain_text("Speaker 1")
    # CTranslate2's int8 kernels differ by CPU (AVX2, AVX-512): with AVX2 the base model hears "the quick round fox"
    expect(transcript).to_contain_text(re.compile("lazy dog", re.I))
    expect(page.locator(".transcript .time").first).to_have_text(re.compile(r"\d\d:\d\d:\d\d"))

    with page.expect_download() as download:
        page.get_by_role("link", name="Subtitles (.srt)").click()
    srt = open(download.value.path(), encoding="utf-8").read()
    assert download.value.suggested_filename.endswith(".srt")
    assert re.search(r"00:00:\d\d,\d{3} --> 00:00:\d\d,\d{3}", srt) and "fox" in srt.lower()

    video = page.locator("video#video")
    expect(video).to_be_visible()
    assert page.evaluate("document.querySelector('video#video').canPlayType('video/mp4; codecs=\"avc1.42E01E\"')")
    page.evaluate("document.querySelector('video#video').muted = true")
    page.evaluate("document.querySelector('video#video').play()")
    page.wait_for_function("() => document.querySelector('video#video').currentTime > 0.5", timeout=30_000)
    page.evaluate("document.querySelector('video#video').pause()")
    page.evaluate("document.querySelector('video#video').currentTime = 6")
    page.wait_for_function(
        "() => { const v = document.querySelector('video#video'); return !v.seeking && Math.abs(v.currentTime - 6) < 0.5 }",
        timeout=30_000,
    )
    duration = page.evaluate("document.querySelector('video#video').duration")
    assert 8 <= duration <= 12, duration
    shot(page, "job_done")

    page.get_by_role("link", name="Your jobs").click()
    row = page.locator(f'tr[data-job-id="{job_id}"]')
    expect(row).to_contain_text("done")
    expect(row.locator("[data-charged]")).to_have_text(re.compile(r"minute"))
    shot(page, "jobs")


@browser_db
def test_the_api_docs_render_every_operation_with_the_network_cut_off(live_server, new_page):
    from playwright.sync_api import expect

    page = new_page(viewport={"width": PHONE_WIDTH, "height": 844})
    outside = []

    def only_this_server(route):
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort("internetdisconnected")

    page.context.route("**/*", only_this_server)
    refused = []  # what the Content-Security-Policy blocked, as Chromium reports it
    page.on("console", lambda message: "Content Security Policy" in message.text and refused.append(message.text))
    page.goto(f"{live_server.url}/v1/api/docs")
    operations = page.locator(".opblock")
    # the contract's seven, and our seven extensions (speakers' names, enrolled voices, the segments'
    # GET and PATCH, burning again)
    expect(operations).to_have_count(14, timeout=30_000)
    expect(page.locator(".opblock-summary-description").first).not_to_be_empty()
    expect(page.get_by_text("Queue a video for a transcript")).to_be_visible()
    expect(page.get_by_text("Enrol a voice from a sample (extension)")).to_be_visible()
    expect(page.locator(".info")).to_contain_text("Prices")
    page.locator(".opblock-summary", has_text="/v1/api/subtitles").click()
    expect(page.locator(".opblock-body").first).to_contain_text("target_languages")
    BothWidths("docs")(page, "offline")
    assert outside == [], f"the docs page reached outside the server: {outside}"
    assert refused == [], f"the docs page breaks its Content-Security-Policy: {refused}"
