"""Test data with factory_boy: rows as the pipeline would have left them, without running it.

Accounts made here have no ledger entries (no sign-up grant): tests that need minutes make the
account with accounts.services.account_create (the `account` fixture does).
"""

import factory
from django.contrib.auth import get_user_model
from factory.django import DjangoModelFactory

from accounts.models import Account
from transcription.models import Job, Translation, Upload


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
