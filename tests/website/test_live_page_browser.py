"""The Live page in Chromium (issue 52 item 6): the browser's microphone is Chromium's fake capture
device playing a WAV of espeak-ng's speech (--use-file-for-fake-audio-capture), the page streams it
to the real door of bin/web (the embedded default: the live worker in the web process, the real
speech model) and the spoken words appear on the page, the utterance still heard set apart until
it is completed; and a stream the door refuses (the plan's cap) is said on the page. No mocks: the
page asks the site for its live key as a person's browser does."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
from django.test import Client

from billing.models import LedgerEntry, LiveStream, Plan
from harness.processes import ROOT, running_web
from tests.browser import DESKTOP, Shots, launched
from tests.support import wait_until
from transcription.models import Job

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SENTENCE = "The quick brown fox jumps over the lazy dog."


@pytest.fixture(scope="module")
def speech(tmp_path_factory):
    """espeak-ng saying SENTENCE, a second of silence before it and three after (server VAD ends
    the utterance on silence), as 48 kHz mono PCM16: the fake capture device plays it once."""
    work = tmp_path_factory.mktemp("live-speech")
    raw, wav = work / "raw.wav", work / "speech.wav"
    subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(raw), SENTENCE], check=True, timeout=30)
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(raw), "-af", "adelay=1000,apad=pad_dur=3"]
        + ["-ar", "48000", "-ac", "1", "-c:a", "pcm_s16le", str(wav)],
        check=True,
        timeout=30,
    )
    return wav


@pytest.fixture(scope="module")
def browser(chromium_executable, django_db_setup, speech):
    """This module's Chromium: its microphone is the recording, allowed without asking."""
    switches = (
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
        f"--use-file-for-fake-audio-capture={speech}%noloop",
        "--autoplay-policy=no-user-gesture-required",
    )
    with launched(chromium_executable, *switches) as chromium:
        yield chromium


@pytest.fixture(scope="module")
def site(django_db_setup, django_db_blocker, tmp_path_factory):
    """bin/web without REDIS_URL (`make run`'s default: the live worker's threads in the web
    process), its static files collected first, as bin/run does before it serves."""
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    with running_web(tmp_path_factory.mktemp("live-site") / "web.log", REDIS_URL="") as base:
        yield base


def signed_in(new_page, site: str, account):
    client = Client()
    client.force_login(account.user)
    page = new_page(**DESKTOP, permissions=["microphone"])
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": site}])
    return page


def test_the_words_spoken_into_the_microphone_appear_on_the_page(site, new_page, account):
    from playwright.sync_api import expect

    page = signed_in(new_page, site, account)
    shot = Shots("live_page")
    page.goto(f"{site}/jobs/")
    page.get_by_role("link", name="Live", exact=True).click()
    expect(page).to_have_url(f"{site}/live/")
    # what the page showed while it listened: the paragraph still heard, and any words in it
    page.evaluate(
        """() => { window.seenHearing = []; new MutationObserver(() => {
             document.querySelectorAll('#live-transcript p.hearing').forEach(p => {
               window.seenHearing.push(p.querySelector('.said').textContent); });
           }).observe(document.getElementById('live-transcript'), {subtree: true, childList: true,
                      characterData: true}); }"""
    )
    started = time.monotonic()
    page.get_by_role("button", name="Start").click()
    expect(page.locator("#live-status")).to_contain_text("Listening", timeout=15_000)
    transcript = page.locator("#live-transcript")
    expect(transcript.locator("p.said")).to_contain_text(re.compile(r"brown fox", re.I), timeout=25_000)
    heard_after = time.monotonic() - started
    shot(page, "words")
    page.get_by_role("button", name="Stop").click()
    expect(page.locator("#live-status")).to_have_text("Stopped.", timeout=20_000)
    expect(transcript.locator("p.hearing")).to_have_count(0)
    text = transcript.inner_text().lower()
    assert "quick" in text and "lazy dog" in text, text
    seen = page.evaluate("window.seenHearing")
    assert seen, "the utterance was shown as still heard before it was completed"
    print(f"words on the page {heard_after:.1f} s after Start; while heard: {sorted(set(seen))[-3:]}")
    shot(page, "stopped")
    assert "vts_" not in page.content(), "no API token in the page"
    # the door announced the job the stream is kept as (transcription_session.job): linked once stopped
    expect(page.locator("#live-job")).to_be_visible()
    kept = Job.objects.get(account=account)
    expect(page.locator("#live-job-link")).to_have_attribute("href", f"/jobs/{kept.pk}/")
    wait_until(lambda: not LiveStream.objects.filter(settled_at__isnull=True).exists(), "settled", timeout=20)
    assert LedgerEntry.objects.filter(account=account, source=LedgerEntry.Source.LIVE).count() == 1


def test_a_stream_the_door_refuses_is_said_on_the_page(site, new_page, account):
    # the plan's cap of streams at once applies to the page's live key as to a token
    from playwright.sync_api import expect

    account.plan = Plan.objects.create(name="no live", monthly_minutes=10, live_streams=0)
    account.save(update_fields=["plan"])
    page = signed_in(new_page, site, account)
    page.goto(f"{site}/live/")
    page.get_by_role("button", name="Start").click()
    expect(page.locator("#live-error")).to_contain_text("at once (0)")
    expect(page.locator("#live-status")).to_have_text("The stream ended.")
    expect(page.get_by_role("button", name="Start")).to_be_enabled()
    assert not LiveStream.objects.filter(account=account).exists()
