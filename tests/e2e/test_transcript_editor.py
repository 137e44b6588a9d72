"""The job page's transcript editor end to end (issue 46, item 3), in Chromium through Playwright:
a two-voice recording transcribed by the real speech model on a real worker, its owner signs in,
plays and seeks the job's audio, corrects a word, splits a cue at the caret and gives its second
half to the other speaker, saves, and downloads the .srt and .vtt with both changes; a second
browser that read the transcript before that save is told of the conflict when it saves."""

import re

import pytest
from django.core.files.storage import default_storage

from accounts.services import account_create, token_issue
from harness.processes import running_worker
from tests.browser import DESKTOP, Shots
from tests.support import poll_until_done, submit
from transcription.models import Job, JobSegments
from transcription.pipeline.transcripts import transcript_edits
from transcription.storage import files

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery-42"
MARK = "Zeppelinhaven"  # the corrected word: no Dutch recording says it


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker, tmp_path_factory):
    with running_worker(tmp_path_factory.mktemp("editor") / "worker.log", ALLOW_PRIVATE_URLS="true") as process:
        yield process


def _plain(segment: dict) -> bool:
    """A segment whose text is its words, one for one (the editor counts words in the text)."""
    return [w["word"] for w in segment["words"]] == segment["text"].split()


def _choose(segments: list[dict]) -> tuple[int, int, int]:
    """(the segment whose first word is corrected, the segment split, the word it is split at):
    a split whose second half, given to the other speaker, changes the .srt (not every change of
    speaker shows in SRT, which names no speakers: this one must)."""
    for k in range(1, len(segments)):
        words = len(segments[k]["words"])
        if words < 4 or not _plain(segments[k]):
            continue
        for i in range(k):
            if not _plain(segments[i]):
                continue
            edited, moved = _expected(segments, i, k, words // 2)
            if (
                transcript_edits.render(edited, language="nl")["srt"]
                != transcript_edits.render(moved, language="nl")["srt"]
            ):
                return i, k, words // 2
    raise AssertionError(f"no segment to split and move: {[s['text'] for s in segments]}")


def _expected(segments: list[dict], i: int, k: int, word: int) -> tuple[list[dict], list[dict]]:
    """The document after the word's correction and the split, and after the move too."""
    text = " ".join([MARK] + segments[i]["text"].split()[1:])
    edits = [{"op": "text", "index": i, "text": text}, {"op": "split", "index": k, "word": word}]
    edited = transcript_edits.apply_edits(segments, edits, duration=0, original=segments)
    other = 3 - segments[k]["speaker"]
    moved = transcript_edits.apply_edits(
        edited, [{"op": "speaker", "index": k + 1, "speaker": other}], duration=0, original=segments
    )
    return edited, moved


def _sign_in(new_page, base: str):
    page = new_page(**DESKTOP)
    page.goto(f"{base}/account/login/")
    page.get_by_label("Email").fill("editor@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/login/" not in url)
    return page


def test_a_word_and_a_speaker_corrected_in_the_browser_are_in_the_downloads(
    worker, live_server, client, new_page, videos
):
    from playwright.sync_api import expect

    account = account_create("editor@example.com", password=PASSWORD)
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {token_issue(account)}"
    job_id = submit(client, "/v1/api/subtitles", {"url": videos["dialogue"], "language_code": "nl"})
    body, _ = poll_until_done(client, job_id)
    assert body["state"] == "done", body["error"]
    assert default_storage.exists(files.playback_name(job_id)), "the audio is kept for the page's player"
    recognised = JobSegments.objects.get(job_id=job_id).segments
    assert {s["speaker"] for s in recognised} == {1, 2}
    i, k, word = _choose(recognised)
    _, expected = _expected(recognised, i, k, word)

    shot = Shots("transcript_editor")
    page = _sign_in(new_page, live_server.url)
    ranges = []
    page.on("response", lambda r: ranges.append(r.status) if r.url.endswith("/media") else None)
    page.goto(f"{live_server.url}/jobs/{job_id}/")
    stale = _sign_in(new_page, live_server.url)  # a second browser, reading the same version
    stale.goto(f"{live_server.url}/jobs/{job_id}/")
    cues = page.locator("#editor li.cue")
    expect(cues).to_have_count(len(recognised))
    expect(stale.locator("#editor li.cue")).to_have_count(len(recognised))
    expect(page.locator("[data-editor-status]")).to_have_text("Saved (version 1).")

    # the job's audio plays, and a cue's time seeks to it (byte ranges) and highlights it
    _until(page, "player.readyState >= 1")
    assert abs(page.evaluate("document.getElementById('editor-player').duration") - body["duration"]) < 1.5
    cues.nth(k).locator(".cue-time").click()
    expect(cues.nth(k)).to_have_class(re.compile(r"\bplaying\b"))
    assert abs(page.evaluate("document.getElementById('editor-player').currentTime") - recognised[k]["start"]) < 0.05
    expect(page.locator("#editor li.cue.playing")).to_have_count(1)
    page.keyboard.press("Escape")
    _until(page, "!player.paused")
    _until(page, f"player.currentTime > {recognised[k]['start'] + 0.3}")
    page.keyboard.press("Escape")
    _until(page, "player.paused")
    # the highlight followed the playhead: the cue it stopped in, or none between two cues
    stopped = page.evaluate("document.getElementById('editor-player').currentTime")
    under = [n for n, s in enumerate(recognised) if s["start"] <= stopped < s["end"]]
    expect(page.locator("#editor li.cue.playing")).to_have_count(len(under))
    if under:
        expect(cues.nth(under[0])).to_have_class(re.compile(r"\bplaying\b"))
    assert 206 in ranges, ranges
    # Alt+ArrowUp moves to the previous cue (and seeks there)
    cues.nth(k).locator(".cue-text").focus()
    page.keyboard.press("Alt+ArrowUp")
    expect(cues.nth(k - 1).locator(".cue-text")).to_be_focused()
    shot(page, "opened")

    # a word corrected in place
    text = cues.nth(i).locator(".cue-text")
    text.fill(" ".join([MARK] + recognised[i]["text"].split()[1:]))
    text.press("Tab")
    expect(page.locator("[data-editor-status]")).to_have_text("1 change not saved.")
    # cue k split at the caret (before word `word`), and its second half given to the other speaker
    caret = len(" ".join(recognised[k]["text"].split()[:word])) + 1
    cues.nth(k).locator(".cue-text").evaluate(
        f"(area) => {{ area.focus(); area.setSelectionRange({caret}, {caret}); }}"
    )
    page.keyboard.press("Alt+Enter")
    expect(cues).to_have_count(len(recognised) + 1)
    expect(cues.nth(k + 1).locator(".cue-text")).to_be_focused()
    other = expected[k + 1]["speaker"]
    speaker = cues.nth(k + 1).locator(".cue-speaker")
    speaker.fill(f"Speaker {other}")
    speaker.press("Tab")
    expect(page.locator("[data-editor-status]")).to_have_text("3 changes not saved.")

    # undo takes back the last change, which is then made again
    page.get_by_role("button", name="Undo").click()
    expect(page.locator("[data-editor-status]")).to_have_text("2 changes not saved.")
    expect(cues.nth(k + 1).locator(".cue-speaker")).to_have_value(f"Speaker {3 - other}")
    speaker = cues.nth(k + 1).locator(".cue-speaker")
    speaker.fill(f"Speaker {other}")
    speaker.press("Tab")
    shot(page, "edited")

    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("[data-editor-status]")).to_have_text("Saved (version 3).")  # two rounds: the split renumbers
    kept = JobSegments.objects.get(job_id=job_id)
    assert [(s["speaker"], s["text"]) for s in kept.document()] == [(s["speaker"], s["text"]) for s in expected]
    assert [h["door"] for h in kept.history] == ["website", "website"]

    page.reload()
    expect(cues).to_have_count(len(expected))
    expect(cues.nth(i).locator(".cue-text")).to_have_value(re.compile(f"^{MARK} "))
    expect(cues.nth(k + 1).locator(".cue-speaker")).to_have_value(f"Speaker {other}")
    srt = _download(page, "Subtitles (.srt)")
    assert MARK in srt
    assert srt == transcript_edits.render(expected, language="nl")["srt"] == Job.objects.get(pk=job_id).srt
    vtt = _download(page, "Subtitles (.vtt)")
    assert vtt == transcript_edits.render(expected, language="nl")["webvtt"]  # the voices say who speaks
    shot(page, "saved")

    # the second browser still has version 1: its save is refused, and it is told so
    other_text = stale.locator("#editor li.cue").nth(0).locator(".cue-text")
    other_text.fill("Een andere correctie.")
    other_text.press("Tab")
    stale.get_by_role("button", name="Save", exact=True).click()
    conflict = stale.locator("[data-editor-conflict]")
    expect(conflict).to_be_visible()
    expect(conflict).to_contain_text("Someone else saved this transcript after you opened it")
    expect(stale.locator("#editor li.cue").nth(0).locator(".cue-text")).to_have_value("Een andere correctie.")
    shot(stale, "conflict")
    assert JobSegments.objects.get(job_id=job_id).version == 3
    stale.get_by_role("button", name="Load the saved version").click()
    expect(conflict).to_be_hidden()
    expect(stale.locator("#editor li.cue")).to_have_count(len(expected))
    expect(stale.locator("[data-editor-status]")).to_have_text("Saved (version 3).")


def _until(page, condition: str) -> None:
    """Wait until `condition` on the page's `player` holds (a function, not a string Playwright
    would eval: the page's Content-Security-Policy forbids eval)."""
    page.wait_for_function(f"() => {{ const player = document.getElementById('editor-player'); return {condition}; }}")


def _download(page, link: str) -> str:
    with page.expect_download() as download:
        page.get_by_role("link", name=link).click()
    return download.value.path().read_text()
