"""Test data with factory_boy: rows as the pipeline would have left them, without running it.

Accounts made here have no ledger entries (no sign-up grant): tests that need minutes make the
account with accounts.services.account_create (the `account` fixture does).
"""

import factory
from django.contrib.auth import get_user_model
from factory.django import DjangoModelFactory

from accounts.models import Account
from transcription.models import Job, Translation, Upload
from transcription.pipeline.transcripts.results import build_results
from transcription.pipeline.types import Segment, SpeakerTurn, Word
from transcription.writes import services


class UserFactory(DjangoModelFactory):
    class Meta:
        model = get_user_model()

    username = factory.Sequence(lambda n: f"user{n}@example.com")
    email = factory.SelfAttribute("username")


class AccountFactory(DjangoModelFactory[Account]):
    class Meta:
        model = Account

    user = factory.SubFactory(UserFactory)


class JobFactory(DjangoModelFactory[Job]):
    """A job of `type` in `state`; its translations follow `target_languages` (codes), as the
    services make them."""

    class Meta:
        model = Job
        skip_postgeneration_save = True  # the hook adds rows of its own; the job is saved already

    account = factory.SubFactory(AccountFactory)
    url = "https://example.com/v"
    type = "transcript"

    @factory.post_generation
    def translations(job, create, extracted, **kwargs):
        for position, language in enumerate(job.target_languages or []):
            TranslationFactory(job=job, position=position, language=language, language_code=language)


class TranslationFactory(DjangoModelFactory[Translation]):
    class Meta:
        model = Translation

    job = factory.SubFactory(JobFactory)
    language = "Spanish"
    language_code = "es"


class UploadFactory(DjangoModelFactory[Upload]):
    """An upload as the uploads' door leaves it once whole and checked (its bytes are not stored)."""

    class Meta:
        model = Upload

    account = factory.SubFactory(AccountFactory)
    filename = "interview.wav"
    size = 227244
    received = 227244
    state = "ready"
    duration = 8


def _spoken(text: str, start: float, step: float = 0.4) -> Segment:
    words, t = [], start
    for k, part in enumerate(text.split()):
        # the speech model's probability for each word: some sure, some not
        words.append(Word(round(t, 2), round(t + step * 0.9, 2), " " + part, round(0.3 + 0.1 * (k % 7), 2)))
        t += step
    return Segment(start, round(t, 2), " " + text, words)


def done_job_with_segments(account, **fields) -> Job:
    """A done job of 20 s whose text, subtitles and kept segments the speech stage's own functions
    made: speakers 1, 2, 1 ("Good morning, how are you today?" / "I am fine, thank you very much." /
    "Glad to hear it, so I don't hear that.")."""
    segments = [
        _spoken("Good morning, how are you today?", 3.0),
        _spoken("I am fine, thank you very much.", 7.0),
        _spoken("Glad to hear it, so I don't hear that.", 11.0),
    ]
    turns = [SpeakerTurn(3.0, 6.5, 7), SpeakerTurn(7.0, 10.5, 4), SpeakerTurn(11.0, 15.0, 7)]
    results = build_results(segments, turns, language="en")
    fields = {
        "type": "subtitles",
        "state": "done",
        "progress": 100,
        "duration": 20,
        "detected_language": "en",
        **fields,
    }
    job = JobFactory.create(account=account, txt=results["txt"], srt=results["srt"], webvtt=results["webvtt"], **fields)
    services.job_keep_segments(job.id, language="en", duration=20.0, segments=results["segments"])
    return job
