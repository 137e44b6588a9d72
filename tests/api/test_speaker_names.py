"""POST /v1/api/transcription/{id}/speakers: the account holder's names laid over `txt`, the WebVTT
voice spans and the translations', on a job whose text the pipeline's own functions made."""

import html
import json
import re
import uuid

import pysubs2
import pytest
from django.conf import settings

from billing.selectors import account_balance
from tests.factories import JobFactory
from transcription.pipeline.transcripts import captions
from transcription.pipeline.transcripts.results import build_results
from transcription.pipeline.types import Segment, SpeakerTurn, Word


def _segment(text: str, start: float, step: float = 0.4) -> Segment:
    words, t = [], start
    for part in text.split():
        words.append(Word(round(t, 2), round(t + step * 0.9, 2), " " + part))
        t += step
    return Segment(start, round(t, 2), " " + text, words)


def _conversation() -> dict:
    """txt, srt, webvtt of a three-turn exchange (speakers 1, 2, 1), made by the speech stage's code."""
    segments = [
        _segment("Good morning, how are you today?", 3.0),
        _segment("I am fine, thank you very much.", 7.0),
        _segment("Glad to hear it, shall we start?", 11.0),
    ]
    turns = [SpeakerTurn(3.0, 6.5, 7), SpeakerTurn(7.0, 10.5, 4), SpeakerTurn(11.0, 14.5, 7)]
    results = build_results(segments, turns, language="en")
    assert results["speaker_names"] == {}
    return results


@pytest.fixture
def done_job(account):
    results = _conversation()
    job = JobFactory(
        account=account, type="subtitles", state="done", progress=100, target_languages=["es"], duration=15,
        txt=results["txt"], srt=results["srt"], webvtt=results["webvtt"],
    )  # fmt: skip
    spanish = job.translations.get()
    cues = captions.with_voices(captions.from_srt(job.srt), job.webvtt)
    translated = [captions.Cue(c.start, c.end, [f"(es) {line}" for line in c.lines], c.speakers) for c in cues]
    spanish.state, spanish.srt, spanish.webvtt = "done", captions.to_srt(translated), captions.to_webvtt(translated)
    spanish.cues = captions.cue_records(translated)
    spanish.save()
    return job


def rename(api, job_id, names):
    return api.post(
        f"/v1/api/transcription/{job_id}/speakers", data=json.dumps({"names": names}), content_type="application/json"
    )


def _cue_voices(webvtt: str) -> list[str]:
    return re.findall(r"<v ([^>]+)>", webvtt)


def test_names_are_laid_over_the_txt_the_webvtt_and_the_translations(api, account, done_job):
    before = api.get(f"/v1/api/transcription/{done_job.id}").json()  # now cached
    assert before["txt"].startswith("[00:00:03] Speaker 1: Good morning")
    assert set(_cue_voices(before["webvtt"])) == {"Speaker 1", "Speaker 2"}
    balance = account_balance(account.pk)

    response = rename(api, done_job.id, {"1": "Alice", "2": "Bob & Co"})
    assert response.status_code == 200, response.json()
    assert response["X-RateLimit-Limit"] == str(settings.RATE_LIMIT_JOBS_PER_MINUTE), "a job request"
    body = response.json()
    assert body["id"] == str(done_job.id) and body["state"] == "done"
    assert body["txt"].split("\n\n")[0].startswith("[00:00:03] Alice: Good morning")
    assert [line.split("] ")[1].split(":")[0] for line in body["txt"].strip().split("\n\n")] == [
        "Alice",
        "Bob & Co",
        "Alice",
    ]
    cues = [block for block in body["webvtt"].split("\n\n") if "-->" in block]
    assert cues and all("<v " in cue for cue in cues), "every cue carries a voice span"
    assert set(_cue_voices(body["webvtt"])) == {"Alice", "Bob &amp; Co"}
    spanish = body["translations"][0]["webvtt"]
    assert set(_cue_voices(spanish)) == {"Alice", "Bob &amp; Co"} and "(es) " in spanish
    assert body["srt"] == before["srt"], "SRT has no speaker labels to rename"

    after = api.get(f"/v1/api/transcription/{done_job.id}").json()
    assert after == body, "the cached poll was dropped"
    assert account_balance(account.pk) == balance, "free of minutes"


def test_names_are_kept_changed_shared_and_given_back(api, done_job):
    rename(api, done_job.id, {"1": "Alice", "2": "Bob"})
    body = rename(api, done_job.id, {"2": "Alice"}).json()
    assert "Speaker" not in body["txt"] and set(_cue_voices(body["webvtt"])) == {"Alice"}
    # the numbers stay under the names: two speakers called alike are renamed apart later
    body = rename(api, done_job.id, {"2": None}).json()
    assert body["txt"].split("\n\n")[1].startswith("[00:00:07] Speaker 2: I am fine")
    assert set(_cue_voices(body["webvtt"])) == {"Alice", "Speaker 2"}


def test_bad_names_and_unknown_speakers_are_422s_naming_each(api, done_job):
    response = rename(api, done_job.id, {"1": "", "2": "Dr: Who", "3": "x" * 41, "x": "Y", "5": "<b>", "6": "a\nb"})
    assert response.status_code == 422
    errors = {tuple(entry["loc"]): entry["msg"] for entry in response.json()["detail"]}
    assert set(errors) == {("body", "names", key) for key in (1, 2, 3, "x", 5, 6)}
    assert "1 to 40 characters" in errors[("body", "names", 3)]
    assert "':'" in errors[("body", "names", 2)] and "line break" in errors[("body", "names", 6)]

    response = rename(api, done_job.id, {"1": "Alice", "3": "Carol", "9": "Dan"})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert [entry["loc"] for entry in detail] == [["body", "names", 3], ["body", "names", 9]]
    assert detail[0]["msg"] == "This job's transcript has no Speaker 3; it has Speaker 1, Speaker 2."
    assert "Speaker 1: " in api.get(f"/v1/api/transcription/{done_job.id}").json()["txt"], "nothing saved"

    for body in ({}, {"names": {}}, {"names": ["Alice"]}, {"names": {"1": 7}}):
        response = api.post(
            f"/v1/api/transcription/{done_job.id}/speakers", data=json.dumps(body), content_type="application/json"
        )
        assert response.status_code == 422 and response.json()["detail"][0]["loc"][:2] == ["body", "names"], body


def test_a_job_not_done_is_a_409_and_one_without_speech_has_no_speaker_to_name(api, account):
    job = JobFactory(account=account, state="processing")
    response = rename(api, job.id, {"1": "Alice"})
    assert response.status_code == 409
    assert response.json() == {"detail": "This job is processing: its speakers can be named once it is done."}
    silent = JobFactory(account=account, state="done", txt="", webvtt="WEBVTT\n")
    response = rename(api, silent.id, {"1": "Alice"})
    assert response.status_code == 422 and "no speakers (no speech was found)" in response.json()["detail"][0]["msg"]


def test_another_accounts_job_is_a_404_and_a_malformed_id_a_422(api, other_account, done_job):
    foreign = JobFactory(account=other_account, state="done", txt=done_job.txt, webvtt=done_job.webvtt)
    response = rename(api, foreign.id, {"1": "Alice"})
    assert response.status_code == 404 and response.json() == {"detail": "No job with that id on this account."}
    foreign.refresh_from_db()
    assert foreign.speaker_names == {}
    assert rename(api, uuid.uuid4(), {"1": "Alice"}).status_code == 404
    response = rename(api, "not-a-uuid", {"1": "Alice"})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["path", "id"]


def test_names_reach_the_website_downloads(client, account, done_job):
    client.force_login(account.user)
    response = client.post(f"/jobs/{done_job.id}/speakers", {"speaker-1": "Alice", "speaker-2": ""})
    assert response.status_code == 302
    txt = client.get(f"/jobs/{done_job.id}/files/transcript.txt").content.decode()
    assert txt.startswith("[00:00:03] Alice: Good morning") and "Speaker 2: I am fine" in txt
    vtt = client.get(f"/jobs/{done_job.id}/files/subtitles.es.vtt").content.decode()
    assert set(_cue_voices(vtt)) == {"Alice", "Speaker 2"}
    response = client.post(f"/jobs/{done_job.id}/speakers", {"speaker-1": "A:B"}, HTTP_ACCEPT="application/json")
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "names", 1]


# --- names cannot end a cue (issue 41) ----------------------------------------------------------

TIMING = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}( .*)?$")


def webvtt_read(webvtt: str) -> list[tuple[str, list[str]]]:
    """The cues as the WebVTT spec's parser reads them: (timing line, voice annotations). The file
    parser ends a cue's text at the first line holding "-->" and reads that line as the next cue's
    timings; a voice span's annotation runs from "<v " to the first ">", its spaces collapsed and
    trimmed, its character references decoded (the cue text tokenizer). pysubs2 and ffmpeg, which
    the caption tests also use, drop tags without reading them, so this follows the spec itself."""
    cues = []
    for block in webvtt.split("\n\n")[1:]:
        lines = [line for line in block.split("\n") if line]
        timings = [index for index, line in enumerate(lines) if "-->" in line]
        if not timings:
            continue
        for index in timings:
            assert TIMING.match(lines[index]), f"cue text read as timings: {lines[index]!r}"
        text = "\n".join(lines[timings[0] + 1 :])
        voices = [html.unescape(" ".join(m.split())) for m in re.findall(r"<v[ \t]([^>]*)>", text)]
        cues.append((lines[timings[0]], voices))
    return cues


def check_webvtt_voices(webvtt: str, names: set[str]) -> None:
    cues = webvtt_read(webvtt)
    assert cues and all(voices for _, voices in cues)
    assert {voice for _, voices in cues for voice in voices} == names
    assert len(pysubs2.SSAFile.from_string(webvtt, format_="vtt").events) == len(cues)


def test_a_name_ending_in_dashes_is_a_422_naming_it(api, done_job):
    response = rename(api, done_job.id, {"1": "Q&A --", "2": "Bob - - "})
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "names", 1] and "'--'" in error["msg"]
    response = api.post("/v1/api/voices", data=json.dumps({"name": "Host--"}), content_type="application/json")
    assert response.status_code == 422 and ["body", "name"] in [e["loc"] for e in response.json()["detail"]]
    assert rename(api, done_job.id, {"1": "A--B", "2": "Bob - -"}).status_code == 200


def test_every_voice_span_reads_back_as_its_name_even_one_stored_ending_in_dashes(api, done_job):
    """A name stored before names ending in "--" were refused still makes a valid cue."""
    JobFactory._meta.model.objects.filter(pk=done_job.pk).update(speaker_names={"1": "Q&A --", "2": "Bob -"})
    body = api.get(f"/v1/api/transcription/{done_job.id}").json()
    check_webvtt_voices(body["webvtt"], {"Q&A --", "Bob -"})
    check_webvtt_voices(body["translations"][0]["webvtt"], {"Q&A --", "Bob -"})
