"""The website's job form takes a file, in Chromium with real files, against bin/web and a real
worker: a progress bar while it is sent, then the job; and clear messages for a file that is too big
(refused in the page, and by the server) or that is not audio or video."""

import re
import subprocess
import sys

import pytest

from accounts.services import account_create
from harness.processes import ROOT, running_web
from transcription.models import Job

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery-42"
MAX_BYTES = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def site(web, tmp_path_factory):
    """bin/web with an 8 MB cap on uploads, beside the package's worker (the `web` fixture); its
    static files collected first, as bin/run does before it serves."""
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    with running_web(tmp_path_factory.mktemp("site") / "web.log", UPLOAD_MAX_BYTES=str(MAX_BYTES)) as base:
        yield base


def signed_in(new_page, site, email: str):
    account_create(email, password=PASSWORD)
    page = new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{site}/account/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.goto(f"{site}/jobs/new/")
    return page


def test_a_recording_from_the_computer_becomes_a_job_with_a_progress_bar(site, new_page, recordings):
    from playwright.sync_api import expect

    page = signed_in(new_page, site, "journalist@example.com")
    page.get_by_label(re.compile("Or a recording from your computer")).set_input_files(str(recordings["mp4"]))
    expect(page.locator("#upload-status")).to_contain_text("reading.mp4")
    page.get_by_label("Subtitles: SRT and WebVTT files").check()
    # what the bar showed, kept across the page change that follows
    page.evaluate(
        """() => new MutationObserver(() => {
             const seen = JSON.parse(sessionStorage.getItem('bar') || '[]');
             seen.push(document.getElementById('upload-progress').value);
             sessionStorage.setItem('bar', JSON.stringify(seen));
           }).observe(document.getElementById('upload-progress'), {attributes: true})"""
    )
    page.get_by_role("button", name="Queue").click()

    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f-]{36}/$"), timeout=60_000)
    bar = page.evaluate("JSON.parse(sessionStorage.getItem('bar') || '[]')")
    assert bar and bar[-1] == 100, bar
    job = Job.objects.get(pk=page.url.rstrip("/").rsplit("/", 1)[1])
    assert job.url.startswith("upload:") and job.upload.filename == "reading.mp4"
    # when the job ends, the page reloads itself once to show the transcript
    expect(page.locator("#transcript")).to_contain_text(re.compile("Dashwood", re.I), timeout=300_000)


def test_too_big_and_not_media_are_said_plainly(site, new_page, tmp_path):
    from playwright.sync_api import expect

    page = signed_in(new_page, site, "meeting@example.com")
    big = tmp_path / "all-hands.wav"
    big.write_bytes(b"\0" * (MAX_BYTES + 1))
    picker = page.get_by_label(re.compile("Or a recording from your computer"))
    picker.set_input_files(str(big))
    expect(page.locator("#upload-error")).to_have_text("This file is too big: 8.0 MB, and the most is 8 MB.")

    # the same file past the page's own check: the server's 413, worded as it says it
    page.evaluate("document.getElementById('job-form').setAttribute('data-max-bytes', '999999999')")
    picker.set_input_files(str(big))
    page.get_by_role("button", name="Queue").click()
    expect(page.locator("#upload-error")).to_have_text("The file is larger than 8.0 MB, the most one upload may carry.")

    notes = tmp_path / "minutes.mp3"
    notes.write_text("Minutes of the meeting, not a recording.\n" * 50)
    picker.set_input_files(str(notes))
    page.get_by_role("button", name="Queue").click()
    expect(page.locator("#upload-error")).to_have_text("The file is not audio or video that ffprobe can read.")
    expect(page).to_have_url(f"{site}/jobs/new/")
    assert not Job.objects.exists()
