"""The job page renames speakers in place, in a real browser (Debian's Chromium through
Playwright) against the live server: the names are saved as the API saves them and every paragraph
of the transcript shows them without the page being loaded again."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.browser import Shots
from tests.factories import JobFactory
from transcription.pipeline.transcripts.results import build_results
from transcription.pipeline.types import Segment, SpeakerTurn, Word

browser_db = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def _segment(text: str, start: float) -> Segment:
    words = [Word(start + i * 0.4, start + i * 0.4 + 0.35, " " + word) for i, word in enumerate(text.split())]
    return Segment(start, words[-1].end, " " + text, words)


@browser_db
def test_the_job_page_renames_speakers_in_place(live_server, new_page, account):
    from playwright.sync_api import expect

    segments = [_segment("Welcome to the show.", 1.0), _segment("Thanks for having me.", 4.0)]
    segments.append(_segment("Let us begin then.", 7.0))
    turns = [SpeakerTurn(0.5, 3.5, 1), SpeakerTurn(3.8, 6.5, 2), SpeakerTurn(6.8, 9.0, 1)]
    results = build_results(segments, turns, language="en")
    job = JobFactory(
        account=account, type="subtitles", state="done", progress=100, title="Interview",
        txt=results["txt"], srt=results["srt"], webvtt=results["webvtt"],
    )  # fmt: skip
    signed_in = Client()
    signed_in.force_login(account.user)
    page = new_page(viewport={"width": 1280, "height": 900})
    page.context.add_cookies(
        [{"name": "sessionid", "value": signed_in.cookies["sessionid"].value, "url": live_server.url}]
    )
    shot = Shots("speaker_names")
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    speakers = page.locator("#transcript [data-speaker]")
    expect(speakers).to_have_text(["Speaker 1", "Speaker 2", "Speaker 1"])
    page.evaluate("window.notReloaded = true")

    page.get_by_label("Speaker 1").fill("Alice")
    page.get_by_label("Speaker 2").fill("Bob")
    page.get_by_role("button", name="Save names").click()
    expect(speakers).to_have_text(["Alice", "Bob", "Alice"])
    expect(page.locator("[data-speakers-saved]")).to_be_visible()
    assert page.evaluate("window.notReloaded") is True, "renamed in place, not by loading the page again"
    shot(page, "renamed")
    job.refresh_from_db()
    assert job.speaker_names == {"1": "Alice", "2": "Bob"}

    page.get_by_label("Speaker 2").fill("Dr: Who")
    page.get_by_role("button", name="Save names").click()
    expect(page.locator("[data-speakers-error]")).to_contain_text("A name may not hold a line break, ':'")
    expect(speakers).to_have_text(["Alice", "Bob", "Alice"])

    page.get_by_label("Speaker 2").fill("")
    page.get_by_role("button", name="Save names").click()
    expect(speakers).to_have_text(["Alice", "Speaker 2", "Alice"])
    shot(page, "one_named")
    page.reload()
    expect(page.locator("#transcript [data-speaker]")).to_have_text(["Alice", "Speaker 2", "Alice"])
