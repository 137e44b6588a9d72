"""A done burned job's videos burned again from its subtitles as they are now, after an edit
(issue 46), for every door: REST `POST /v1/api/transcription/{id}/burn` and the MCP tool
`burn_again`. Charged as the contract charges a burned video; the job goes `burning` and back to
`done`, and is polled as before (transcription.writes.reburn_services says why)."""

from __future__ import annotations

from django.core.files.storage import default_storage

from transcription.api.front.caller import Caller, operation
from transcription.api.front.operations import owned, without_id
from transcription.api.front.ratelimit import JOBS
from transcription.api.wire.error_bodies import Conflict, RequestValidationError
from transcription.api.wire.presenters import job_payload, translations_in_order
from transcription.models import Job
from transcription.storage import files
from transcription.writes import reburn_services


@operation(JOBS)
def burn_again(caller: Caller, data: dict, request=None) -> dict:
    """POST /v1/api/transcription/{id}/burn (no body, or `{}`): answers the job as GET does, `burning`
    when queued; still `done` with `error` when the balance does not cover it. Another account's job
    is a 404; a job that is not a done burned job, or whose source video is no longer kept, a 409."""
    extra = sorted(without_id(data))
    if extra:
        raise RequestValidationError(
            [
                {"loc": ["body", name], "msg": "This request takes no fields.", "type": "extra_forbidden"}
                for name in extra
            ]
        )
    job = owned(Job.objects.only("id", "type", "state"), caller.account_id, data.get("id"), "job")
    if job.type == "burned" and job.state == "done" and not default_storage.exists(files.source_name(job.id)):
        raise Conflict("This job's source video is no longer kept (it goes with its burned videos): queue it again.")
    try:
        reburn_services.reburn_start(job.id)
    except reburn_services.ReburnRefused as refused:
        raise Conflict(str(refused)) from None
    return job_payload(Job.objects.prefetch_related(translations_in_order()).get(pk=job.id), request)
