"""The writes of an enrolled voice (issue 29): its sample read by a job of its own, the embedding
that job made kept, the voice forgotten with its embedding."""

from __future__ import annotations

from django.db import transaction

from accounts.models import Account
from transcription.models import FailureReason, Upload, Voice
from transcription.writes.services import RowId, job_create, job_fail


@transaction.atomic
def voice_create(account: Account, *, name: str, url: str = "", upload: Upload | None = None) -> Voice:
    """Enrol a voice: its sample (at `url`, or an `upload` of the account) is read by a job of its
    own (fetched, converted, charged as a transcript of the sample and diarized like any job),
    which stores the embedding. Raises dispatch.QueueUnavailable, storing nothing, when the broker
    is down."""
    job = job_create(account, url=url, upload=upload, type="transcript", is_voice_sample=True)
    return Voice.objects.create(account=account, name=name, job=job)


@transaction.atomic
def voice_store(job_id: RowId, embedding: bytes, encoder: str) -> Voice | None:
    """Keep the embedding a voice sample's job made (the job is then finished by its stage); None
    when the voice was deleted meanwhile."""
    voice = Voice.objects.select_for_update().select_related("job").filter(job_id=job_id).first()
    if voice is None:
        return None
    sample = voice.job  # found by its job_id: never None here
    voice.embedding, voice.encoder = embedding, encoder
    voice.seconds = sample.duration if sample is not None else None
    voice.save(update_fields=["embedding", "encoder", "seconds"])
    return voice


VOICE_DELETED_ERROR = "The voice was deleted before its sample was read."


def voice_delete(voice: Voice) -> None:
    """Forget a voice: its embedding goes with the row. A sample still being read is stopped (and
    refunded), so that nothing of it is kept afterwards."""
    with transaction.atomic():
        if voice.job_id is not None:
            job_fail(voice.job_id, VOICE_DELETED_ERROR, FailureReason.CANCELLED)
        voice.delete()
