"""GET/PATCH /v1/api/transcription/{id}/segments: a done job's transcript corrected by its owner,
and its txt, srt and webvtt made again from the edit (issue 46)."""

import json
import math
import random

import pysubs2
import pytest
import srt
import webvtt
from django.test import override_settings

from billing.models import LedgerEntry
from billing.selectors import account_balance
from tests.factories import done_job_with_segments
from transcription.models import JobSegments, Translation
from transcription.pipeline.transcripts import captions, transcript_edits


def make_done_job(account, **fields):
    return done_job_with_segments(account, **fields)


@pytest.fixture
def done_job(account):
    return make_done_job(account)


def url(job) -> str:
    return f"/v1/api/transcription/{job.id}/segments"


def patch(api, job, edits, if_match):
    headers = {} if if_match is None else {"HTTP_IF_MATCH": if_match}
    return api.patch(url(job), data=json.dumps({"edits": edits}), content_type="application/json", **headers)


def test_the_transcript_is_read_as_segments_with_words_and_an_etag(api, done_job):
    response = api.get(url(done_job))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert response["ETag"] == body["etag"] == '"v1"'
    assert [s["index"] for s in body["segments"]] == [0, 1, 2]
    assert [s["speaker"] for s in body["segments"]] == [1, 2, 1]
    first = body["segments"][0]
    assert first["text"] == "Good morning, how are you today?" and first["start"] == 3.0
    assert [w["word"] for w in first["words"]][:2] == ["Good", "morning,"]
    assert body["edited"] is False and body["history"] == []


def test_each_word_keeps_the_models_probability_and_a_typed_word_is_certain(api, done_job):
    heard = api.get(url(done_job)).json()["segments"][1]["words"]
    assert [w["probability"] for w in heard] == [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    answer = patch(api, done_job, [{"op": "text", "index": 1, "text": "I am fine, thank you so much."}], '"v1"')
    assert answer.status_code == 200, answer.json()
    edited = api.get(url(done_job)).json()["segments"][1]["words"]
    assert [w["word"] for w in edited] == ["I", "am", "fine,", "thank", "you", "so", "much."]
    assert [w["probability"] for w in edited] == [0.3, 0.4, 0.5, 0.6, 0.7, 1.0, 0.9]
    # a new wording of another length: every word is the person's
    patch(api, done_job, [{"op": "text", "index": 1, "text": "Fine."}], answer["ETag"])
    assert [w["probability"] for w in api.get(url(done_job)).json()["segments"][1]["words"]] == [1.0]
    # a split keeps each word's probability
    etag = api.get(url(done_job))["ETag"]
    moved = patch(api, done_job, [{"op": "split", "index": 0, "word": 3}], etag)
    assert moved.status_code == 200, moved.json()
    first = api.get(url(done_job)).json()["segments"][:2]
    assert [w["probability"] for s in first for w in s["words"]] == [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]


def test_a_word_corrected_and_a_sentence_moved_to_the_other_speaker_are_in_every_output(api, account, done_job):
    etag = api.get(url(done_job))["ETag"]
    balance = account_balance(account.pk)
    edits = [
        {"op": "text", "index": 1, "text": "I am fine, thank you very much indeed."},
        # "so I don't hear that." is the other person's: words 4.. of segment 2 go to speaker 2
        {"op": "speaker", "index": 2, "speaker": 2, "from_word": 4},
    ]
    response = patch(api, done_job, edits, etag)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert response["ETag"] == body["etag"] == '"v2"'
    assert [(s["speaker"], s["text"]) for s in body["segments"]] == [
        (1, "Good morning, how are you today?"),
        (2, "I am fine, thank you very much indeed."),
        (1, "Glad to hear it,"),
        (2, "so I don't hear that."),
    ]
    assert body["history"][0]["ops"] == ["text", "speaker"] and body["history"][0]["door"] == "rest"
    assert body["history"][0]["by"] == account.user_id and body["history"][0]["at"]

    job = api.get(f"/v1/api/transcription/{done_job.id}").json()
    assert "very much indeed." in job["txt"]
    assert job["txt"].strip().split("\n\n")[-1].startswith("[00:00:12] Speaker 2: so I don't hear that.")
    srt_text = " ".join(line for cue in captions.from_srt(job["srt"]) for line in cue.lines)
    assert "very much indeed." in srt_text
    assert "<v Speaker 2>so I don't hear that.</v>" in job["webvtt"].replace("- ", "")
    assert account_balance(account.pk) == balance, "editing is free"


def test_speaker_names_are_laid_over_the_edited_text(api, done_job):
    api.post(
        f"/v1/api/transcription/{done_job.id}/speakers",
        data=json.dumps({"names": {"2": "Bob"}}),
        content_type="application/json",
    )
    etag = api.get(url(done_job))["ETag"]
    assert patch(api, done_job, [{"op": "speaker", "index": 0, "speaker": 2}], etag).status_code == 200
    job = api.get(f"/v1/api/transcription/{done_job.id}").json()
    assert job["txt"].startswith("[00:00:03] Bob: Good morning")
    assert "<v Bob>Good morning" in job["webvtt"]


def test_split_merge_and_times(api, done_job):
    etag = api.get(url(done_job))["ETag"]
    response = patch(
        api,
        done_job,
        [{"op": "split", "index": 0, "word": 2}, {"op": "times", "index": 1, "start": 6.9, "end": 10.2}],
        etag,
    )
    assert response.status_code == 200, response.json()
    segments = response.json()["segments"]
    assert [s["text"] for s in segments[:2]] == ["Good morning,", "how are you today?"]
    assert (segments[2]["start"], segments[2]["end"]) == (6.9, 10.2)
    assert segments[2]["words"][0]["start"] == 6.9 and segments[2]["words"][-1]["end"] <= 10.2
    response = patch(api, done_job, [{"op": "merge", "index": 0}], response["ETag"])
    assert response.status_code == 200, response.json()
    assert response.json()["segments"][0]["text"] == "Good morning, how are you today?"


def test_the_original_is_kept_read_and_restored(api, done_job):
    before = api.get(url(done_job)).json()
    response = patch(api, done_job, [{"op": "text", "index": 0, "text": "Hello."}], before["etag"])
    assert response.status_code == 200
    original = api.get(url(done_job) + "?version=original").json()
    assert original["segments"] == before["segments"] and original["etag"] == '"v2"'
    restored = patch(api, done_job, [{"op": "restore"}], '"v2"')
    assert restored.status_code == 200, restored.json()
    assert restored.json()["segments"] == before["segments"]
    assert api.get(f"/v1/api/transcription/{done_job.id}").json()["txt"].startswith("[00:00:03] Speaker 1: Good")
    assert [h["ops"] for h in restored.json()["history"]] == [["text"], ["restore"]]


def test_a_bad_edit_names_its_place_and_field_and_nothing_is_applied(api, done_job):
    before = api.get(url(done_job))
    edits = [
        {"op": "text", "index": 0, "text": "A good edit."},
        {"op": "times", "index": 1, "start": 8.0, "end": 25.0},  # past the media's 20 s
        {"op": "text", "index": 2, "text": "two\nlines"},
        {"op": "speaker", "index": 9, "speaker": 1},
        {"op": "speaker", "index": 0, "speaker": 7},
        {"op": "frobnicate", "index": 0},
    ]
    response = patch(api, done_job, edits, before["ETag"])
    assert response.status_code == 422, response.json()
    locs = [entry["loc"] for entry in response.json()["detail"]]
    assert locs == [["body", "edits", 5, "op"]], "the shape is checked first"
    response = patch(api, done_job, edits[:5], before["ETag"])
    assert response.status_code == 422, response.json()
    locs = [entry["loc"] for entry in response.json()["detail"]]
    assert locs == [
        ["body", "edits", 1, "end"],
        ["body", "edits", 2, "text"],
        ["body", "edits", 3, "index"],
        ["body", "edits", 4, "speaker"],
    ]
    after = api.get(url(done_job))
    assert after["ETag"] == before["ETag"] and after.json()["segments"] == before.json()["segments"]
    assert JobSegments.objects.get(job=done_job).original is None


def test_a_missing_or_stale_if_match_is_a_412_and_overwrites_nothing(api, done_job):
    edit = [{"op": "text", "index": 0, "text": "First editor."}]
    missing = patch(api, done_job, edit, None)
    assert missing.status_code == 412 and "If-Match" in missing.json()["detail"]
    assert patch(api, done_job, edit, '"v1"').status_code == 200
    stale = patch(api, done_job, [{"op": "text", "index": 0, "text": "Second editor."}], '"v1"')
    assert stale.status_code == 412 and stale["ETag"] == '"v2"'
    assert api.get(url(done_job)).json()["segments"][0]["text"] == "First editor."


def test_another_accounts_job_is_a_404(api, other_account):
    theirs = make_done_job(other_account)
    assert api.get(url(theirs)).status_code == 404
    assert patch(api, theirs, [{"op": "text", "index": 0, "text": "Mine now."}], '"v1"').status_code == 404
    assert JobSegments.objects.get(job=theirs).version == 1


@pytest.mark.parametrize("state", ["failed", "processing"])
def test_a_job_not_done_cannot_be_edited(api, account, state):
    job = make_done_job(account, state=state)
    assert api.get(url(job)).status_code == 409
    response = patch(api, job, [{"op": "text", "index": 0, "text": "Too late."}], '"v1"')
    assert response.status_code == 409 and state in response.json()["detail"]


def test_the_openai_doors_formats_answer_from_the_corrected_segments(api, done_job):
    from transcription.api.doors import openai_compat
    from transcription.models import Job

    edits = [
        {"op": "text", "index": 1, "text": "I am fine, thank you so much."},
        {"op": "speaker", "index": 2, "speaker": 2, "from_word": 4},
    ]
    assert patch(api, done_job, edits, '"v1"').status_code == 200
    result = openai_compat.result_of(Job.objects.get(pk=done_job.id), translation=False)
    _, text = openai_compat.render(result, "text", [], False)
    assert "thank you so much." in text and "very much" not in text
    _, srt = openai_compat.render(result, "srt", [], False)
    assert "thank you so much." in srt
    _, vtt = openai_compat.render(result, "vtt", [], False)
    assert "so I don't hear that." in vtt
    _, verbose = openai_compat.render(result, "verbose_json", ["word", "segment"], False)
    assert [s["text"] for s in verbose["segments"]][-2:] == ["Glad to hear it,", "so I don't hear that."]
    assert [w["word"] for w in verbose["words"]][9:12] == ["thank", "you", "so"]
    # the model's probability of each word it heard; the word a person typed is certain
    assert [w["probability"] for w in verbose["words"]][9:12] == [0.6, 0.7, 1.0]
    _, diarized = openai_compat.render(result, "diarized_json", [], False)
    assert [s["speaker"] for s in diarized["segments"]] == ["A", "B", "A", "B"]


def test_a_long_transcripts_edits_write_only_their_parts_and_every_output_follows(api, account):
    """Random edits of a 200-segment transcript, each answered from this process's kept render, its
    copy in Redis (as another web process would) or (now and then, forgotten) a whole render: the
    stored document and txt/srt/webvtt are after every edit what the edits applied and rendered
    whole make, and a one-segment edit writes one part."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.pipeline.test_rerender import random_edit, transcript
    from transcription.api.front import edit_renders
    from transcription.models import Job
    from transcription.pipeline.transcripts import transcript_edits as te
    from transcription.writes import services

    original = transcript(14, 7)
    job = make_done_job(account, duration=900)
    services.job_keep_segments(job.id, language="en", duration=900.0, segments=original)
    rng, document, etag = random.Random(7), original, '"v1"'
    for number in range(25):
        roll = rng.random()
        if roll < 0.15:  # nothing kept anywhere: rendered whole
            edit_renders.forget(job.id)
        elif roll < 0.35:  # as in another web process: the copy in Redis
            edit_renders.written()
            edit_renders.forget()
            assert number == 0 or edit_renders.kept(job.id, int(etag.strip('"v'))) is not None, "loaded from Redis"
        edit = random_edit(rng, document)
        with CaptureQueriesContext(connection) as queries:
            response = patch(api, job, [edit], etag)
        assert response.status_code == 200, (number, edit, response.json())
        etag, document = response["ETag"], te.apply_edits(document, [edit], duration=900, original=original)
        assert response.json()["segments"] == te.numbered(document), (number, edit)
        written = [
            q["sql"] for q in queries.captured_queries if q["sql"].startswith('UPDATE "transcription_segmentspart"')
        ]
        if number and edit["op"] in ("text", "times"):
            assert len(written) == 1, (number, edit, len(written))
        stored = Job.objects.get(pk=job.id)
        assert {"txt": stored.txt, "srt": stored.srt, "webvtt": stored.webvtt} == te.render(document, language="en")
    assert api.get(url(job)).json()["segments"] == te.numbered(document)
    assert api.get(url(job) + "?version=original").json()["segments"] == te.numbered(original)


def test_a_job_edited_before_parts_existed_keeps_its_original(api, done_job):
    """Edited when the whole document was `segments` (version 2, `original` kept, no parts): the
    next edit moves the document into parts and keeps the original it had."""
    kept = JobSegments.objects.get(job=done_job)
    edited = [{**kept.segments[0], "text": "Edited long ago."}, *kept.segments[1:]]
    JobSegments.objects.filter(job=done_job).update(original=kept.segments, segments=edited, version=2)
    response = patch(api, done_job, [{"op": "text", "index": 1, "text": "And now."}], '"v2"')
    assert response.status_code == 200, response.json()
    assert [s["text"] for s in response.json()["segments"]][:2] == ["Edited long ago.", "And now."]
    assert api.get(url(done_job) + "?version=original").json()["segments"][0]["text"] == kept.segments[0]["text"]


def test_a_voice_heard_under_another_is_a_segment_of_its_own_in_the_segments_and_diarized_json(api, account):
    """A job whose speech stage heard speaker 2 under speaker 1's line (turns overlapping, Whisper
    wrote speaker 1's words): the segments and diarized_json overlap in time, the text and the
    subtitles do not, and the document can still be edited around it."""
    from tests.factories import JobFactory, _spoken
    from transcription.api.doors import openai_compat
    from transcription.models import Job
    from transcription.pipeline.transcripts.results import build_results
    from transcription.pipeline.types import SpeakerTurn
    from transcription.writes import services

    segments = [_spoken("Good morning, how are you today?", 3.0), _spoken("Glad to hear it.", 11.0)]
    turns = [SpeakerTurn(3.0, 6.5, 1), SpeakerTurn(4.0, 5.5, 2), SpeakerTurn(11.0, 13.0, 3)]
    results = build_results(segments, turns, language="en")
    job = JobFactory.create(
        account=account, type="subtitles", state="done", progress=100, duration=20, detected_language="en",
        txt=results["txt"], srt=results["srt"], webvtt=results["webvtt"],
    )  # fmt: skip
    services.job_keep_segments(job.id, language="en", duration=20.0, segments=results["segments"])
    body = api.get(url(job)).json()
    assert [(s["speaker"], s["text"], s["start"], s["end"]) for s in body["segments"]] == [
        (1, "Good morning, how are you today?", 3.0, 5.4),
        (3, "", 4.0, 5.5),  # heard only under speaker 1: numbered after the speakers with words
        (2, "Glad to hear it.", 11.0, 12.6),
    ]
    assert "Speaker 3" not in job.txt and "Speaker 3" not in job.webvtt
    result = openai_compat.result_of(Job.objects.get(pk=job.id), translation=False)
    _, diarized = openai_compat.render(result, "diarized_json", [], False)
    assert [(s["speaker"], s["start"], s["end"], s["text"]) for s in diarized["segments"]] == [
        ("A", 3.0, 5.4, "Good morning, how are you today?"),
        ("C", 4.0, 5.5, ""),
        ("B", 11.0, 12.6, "Glad to hear it."),
    ]
    assert diarized["text"] == "Good morning, how are you today? Glad to hear it."
    _, verbose = openai_compat.render(result, "verbose_json", ["segment"], False)
    assert [s["text"] for s in verbose["segments"]] == ["Good morning, how are you today?", "Glad to hear it."]
    # the spoken segment can be retimed past the one laid over it
    response = patch(api, job, [{"op": "times", "index": 0, "end": 6.0}], body["etag"])
    assert response.status_code == 200, response.json()
    assert response.json()["segments"][0]["end"] == 6.0


def test_edited_subtitle_syntax_keeps_every_output_well_formed_and_invisible_overrides_are_refused(api, account):
    """Issue 56: a line holding two timestamps became a cue of 600 s when the service read its own
    SRT again for the retranslation (charged 604 s for a 12 s job). The retranslation now reads the
    cues the segments make; the SRT reads back, strictly and leniently, as those cues; a direction
    override is a 422 naming the edit, the segment and the character."""
    job = make_done_job(account, target_languages=["es"])
    made = transcript_edits.cues(JobSegments.objects.get(job=job).document(), language="en")
    spanish = [captions.Cue(c.start, c.end, [f"(es) {line}" for line in c.lines], c.speakers) for c in made]
    Translation.objects.filter(job=job).update(
        state="done",
        srt=captions.to_srt(spanish),
        webvtt=captions.to_webvtt(spanish),
        cues=captions.cue_records(spanish),
    )
    etag = api.get(url(job))["ETag"]
    text = "at 00:00:01,000 00:10:02,000 we said <b>hi</b> {\\an8} -- > done"
    response = patch(api, job, [{"op": "text", "index": 1, "text": text}], etag)
    assert response.status_code == 200, response.json()

    cues = transcript_edits.cues(JobSegments.objects.get(job=job).document(), language="en")
    job.refresh_from_db()
    assert len(list(srt.parse(job.srt))) == len(cues) == len(pysubs2.SSAFile.from_string(job.srt, format_="srt"))
    assert [c.raw_text for c in webvtt.from_string(job.webvtt)][1].count("&lt;b&gt;") == 1
    [charge] = LedgerEntry.objects.filter(job_id=job.id, source=LedgerEntry.Source.RETRANSLATION)
    changed = [c for c in cues if "we said" in " ".join(c.lines)]
    assert -charge.seconds == math.ceil(sum(c.end - c.start for c in changed)) <= 20, "the changed cue's seconds"
    plan = Translation.objects.get(job=job).redo["plan"]
    assert [cue["start"] for cue in plan] == [c.start for c in cues], "the plan is of the segments' cues"

    response = patch(api, job, [{"op": "text", "index": 0, "text": "Good \u202eyadot\u202c morning"}], response["ETag"])
    assert response.status_code == 422, response.json()
    [problem] = response.json()["detail"]
    assert problem["loc"] == ["body", "edits", 0, "text"]
    assert "Segment 0's text" in problem["msg"] and "U+202E" in problem["msg"], problem["msg"]


@override_settings(TRANSCRIPT_MIN_WORDS=50, TRANSCRIPT_MIN_CHARS=300)
def test_a_transcript_grows_no_larger_than_its_recording(api, done_job):
    """Issue 56: a 12 s job reached 96,000 words in 16 PATCHes, each then a minute of a web
    worker's CPU. A 20 s job holds at most 120 words (6 a second) and 800 characters (40)."""
    etag = api.get(url(done_job))["ETag"]
    long = " ".join(["word"] * 90)  # 450 characters
    edits = [{"op": "text", "index": index, "text": long} for index in range(3)]
    response = patch(api, done_job, edits, etag)
    assert response.status_code == 422, response.json()
    [problem] = response.json()["detail"]
    assert problem["loc"] == ["body", "edits"] and problem["type"] == "transcript_too_large"
    assert "270 words" in problem["msg"] and "at most 120 (6 a second" in problem["msg"], problem["msg"]

    response = patch(api, done_job, edits[:1], etag)  # 90 + 16 words, but 450 + 70 characters: fits
    assert response.status_code == 200, response.json()
    response = patch(api, done_job, [{"op": "text", "index": 1, "text": " ".join(["x" * 30] * 16)}], response["ETag"])
    assert response.status_code == 422 and "characters" in response.json()["detail"][0]["msg"], response.json()
    # a document already past its bounds can still be corrected, only not grown
    response = patch(
        api, done_job, [{"op": "text", "index": 0, "text": "Short again."}], api.get(url(done_job))["ETag"]
    )
    assert response.status_code == 200, response.json()


@override_settings(EDITS_PER_SAVE=2, EDITS_MAX_BYTES=300)
def test_one_saves_edits_are_bounded_in_number_and_size(api, done_job):
    etag = api.get(url(done_job))["ETag"]
    three = [{"op": "text", "index": index, "text": "Fine."} for index in range(3)]
    response = patch(api, done_job, three, etag)
    assert response.status_code == 422, response.json()
    assert response.json()["detail"][0]["type"] == "too_many_edits"
    assert "At most 2 edits" in response.json()["detail"][0]["msg"]
    big = [{"op": "text", "index": 0, "text": "x" * 400}]
    response = patch(api, done_job, big, etag)
    assert response.status_code == 422 and response.json()["detail"][0]["type"] == "edits_too_large", response.json()
    assert "EDITS_MAX_BYTES" in response.json()["detail"][0]["msg"]
    assert api.get(url(done_job))["ETag"] == etag, "nothing saved"
