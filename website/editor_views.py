"""The job page's transcript editor (issue 46): the job's media for its player, and its transcript
as segments, read and corrected through the front door exactly as the API's
`GET`/`PATCH /v1/api/transcription/{id}/segments` are (api.front.editing's operations: the same
validation, If-Match and 412, ownership, limits). The page's script is
website/static/website/editor.js; the rules it marks cues by are the subtitle renderer's own
(`editor_limits`).
"""

from __future__ import annotations

import json
import mimetypes

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.http import Http404, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods
from rest_framework import exceptions

from transcription.api.front import editing, front_door
from transcription.api.wire.error_bodies import RequestValidationError
from transcription.models import Job, JobSegments, Translation, UploadState
from transcription.pipeline.transcripts import captions, linebreaks
from transcription.storage import files
from transcription.views import ranged_file
from transcription.writes import retranslation_services

from .access import caller as session_caller
from .access import job_or_404

# what every current browser plays (by the upload's name); others play the kept WAV instead
PLAYABLE = {
    "audio/aac", "audio/flac", "audio/mp4", "audio/mpeg", "audio/ogg", "audio/wav", "audio/webm", "audio/x-wav",
    "video/mp4", "video/ogg", "video/webm",
}  # fmt: skip


def media_source(job: Job) -> tuple[str, str, str] | None:
    """(storage name, file name, content type) of what the job page plays: the file the owner
    uploaded while it is kept and a browser plays it (the picture too), else the
    audio the speech stage read (files.playback_name); None when neither is kept."""
    upload = job.upload
    if upload is not None and upload.state == UploadState.READY:
        kind = mimetypes.guess_type(upload.filename or "")[0] or ""
        if kind in PLAYABLE and default_storage.exists(files.upload_name(upload.pk)):
            return files.upload_name(upload.pk), upload.filename, kind
    name = files.playback_name(job.pk)
    if default_storage.exists(name):
        return name, f"{job.pk}.wav", "audio/wav"
    return None


def editor_limits(language: str | None) -> dict:
    """The subtitle rules the editor marks cues by, as captions and linebreaks apply them, and the
    probability under which it lists a word as doubtful (EDITOR_DOUBT_BELOW)."""
    return {
        "doubtBelow": settings.EDITOR_DOUBT_BELOW,
        "maxCps": captions.MAX_CPS,
        "minDuration": captions.MIN_DURATION,
        "maxLineChars": linebreaks.line_limit(language),
        "maxLines": captions.MAX_LINES,
    }


def editor_context(job: Job) -> dict | None:
    """What the job page's editor needs, or None for a job whose transcript cannot be corrected
    (not done, or no segments kept): the media's kind for its player (None when not kept: the
    editor works without a player), the subtitle rules, and the translations a save charges for."""
    if job.state != "done" or not JobSegments.objects.filter(job_id=job.pk).exists():
        return None
    source = media_source(job)
    # the translations a save brings up to date, and charges for (retranslation_services): the page
    # says so, and the script asks for a quote of the changes before they are saved (issue 56)
    followed = Translation.objects.filter(job_id=job.pk, state__in=retranslation_services.KEPT_UP).exclude(srt=None)
    return {
        "media": None if source is None else ("video" if source[2].startswith("video/") else "audio"),
        "limits": editor_limits(job.detected_language or job.language_code),
        "names": job.speaker_names or {},
        "translations": list(followed.order_by("position").values_list("language", flat=True)),
    }


@never_cache
@login_required
@require_GET
def job_media(request, job_id):
    """The job's media to its owner, with byte ranges (206) so the player seeks; another
    account's job, or a job whose media is no longer kept, is a 404."""
    job = job_or_404(request, job_id)
    source = media_source(job)
    if source is None:
        raise Http404("This job's media is no longer kept.")
    name, filename, content_type = source
    return ranged_file(request, name, filename, content_type)


def _refusal(error: exceptions.APIException) -> JsonResponse:
    answer = front_door.error_answer(error)
    if answer is None:  # not a refusal: a bug, the door's 500
        raise error
    return JsonResponse(answer.body, status=answer.status, headers=answer.headers)


def _malformed(message: str) -> JsonResponse:
    """The body is not the JSON object asked for: the contract's 422, as REST answers it."""
    return _refusal(RequestValidationError([{"loc": ["body"], "msg": message, "type": "json_invalid"}]))


@never_cache
@login_required
@require_http_methods(["GET", "PATCH"])
def job_segments(request, job_id):
    """GET: the transcript's document (segments, version, ETag); PATCH: `{"edits": [...]}` with
    If-Match, answered with the new document, a 412 when stale, a 422 naming every bad edit."""
    caller = session_caller(request)
    if caller is None:
        raise Http404("This login has no account.")
    arguments: dict = {"id": str(job_id)}
    operation = editing.get_transcript_segments
    if request.method == "PATCH":
        try:
            body = json.loads(request.body or b"null")
        except (ValueError, UnicodeDecodeError) as error:
            return _malformed(f"Malformed JSON: {error}")
        except RecursionError:  # a few KB of brackets pass Python's decoder limit (issue 56)
            return _malformed("Malformed JSON: the JSON is nested too deeply.")
        if not isinstance(body, dict):
            return _malformed('The body must be a JSON object: {"edits": [...]}.')
        arguments = {**body, **arguments, "if_match": request.headers.get("If-Match")}
        operation = editing.edit_transcript
    try:
        answer = front_door.perform(caller, operation, arguments, request)
    except exceptions.APIException as error:
        return _refusal(error)
    return JsonResponse(answer, headers={"ETag": answer["etag"]})
