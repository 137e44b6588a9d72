"""What each operation of the v1 API does, for every front door: the REST views, the MCP server's
tools (transcription.api.doors.mcp_server), the website's form, the uploads' and the OpenAI-compatible
doors call these through front_door.perform, so a request checked, queued or read through one door
is checked, queued and read the same way through the others.

An operation is declared with `@operation(bucket)` (what it counts as: a job request or a poll);
it takes the Caller, the request's fields as a dict and the request (for absolute links), and
answers the contract's response body, or raises a Refusal (error_bodies): RequestValidationError
(the 422 entries, each naming its field) or NotFound ("No job with that id on this account.").
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path

from django.conf import settings

from billing import pricing
from billing.selectors import account_balance, quote
from config import shared_cache
from transcription import job_options
from transcription.api.front import polls
from transcription.api.front.caller import Caller, operation
from transcription.api.front.ratelimit import JOBS, POLLS
from transcription.api.wire import serializers as s
from transcription.api.wire.error_bodies import (
    Busy,
    Conflict,
    NotDone,
    NotFound,
    RequestValidationError,
    validation_errors,
)
from transcription.api.wire.presenters import batch_payload, job_payload, translations_in_order, voice_document
from transcription.models import Batch, Job, JobType, Upload, UploadState, Voice
from transcription.pipeline.fetch.playlist import (
    PlaylistEntry,
    PlaylistError,
    PlaylistListing,
    find_durations,
    list_playlist,
)
from transcription.pipeline.media.media_probe import NotMedia, probe_media
from transcription.pipeline.transcripts.speaker_names import speakers_in
from transcription.states import FINAL_STATES
from transcription.storage import files
from transcription.writes import services, voice_services


def validate(serializer_class, data: dict, location: str = "body") -> dict:
    """The options a request serializer reads from `data`, or a RequestValidationError whose
    entries name each offending field under `location`: the one check for every front door."""
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise RequestValidationError(validation_errors(serializer.errors, location))
    return serializer.validated_data


def parse_id(value, location: str = "path") -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        raise RequestValidationError(
            [{"loc": [location, "id"], "msg": "Input should be a valid UUID.", "type": "uuid_parsing"}]
        ) from None


def without_id(arguments: dict) -> dict:
    """An operation's body when the door passed the path's id beside it."""
    return {name: value for name, value in arguments.items() if name != "id"}


def not_found(what: str) -> NotFound:
    return NotFound(f"No {what} with that id on this account.")


def owned(rows, account_id, raw_id, what: str):
    """The account's row `raw_id` of `rows` (a model or a queryset): the one ownership rule of
    every door. A malformed id is a 422 on ["path", "id"]; another account's row, or none, a 404."""
    queryset = rows.objects.all() if hasattr(rows, "objects") else rows
    row = queryset.filter(pk=parse_id(raw_id), account_id=account_id).first()
    if row is None:
        raise not_found(what)
    return row


# --- Queueing (job requests) ------------------------------------------------------------------


def with_upload(account_id, options: dict, job_type: str, location: str = "body") -> dict:
    """The job's options with `upload_id` turned into the account's Upload: another account's (or
    no) upload is a 404, as another account's job is; one still receiving, or one without a
    picture for a burned job, a 422 on `upload_id`."""
    if "upload_id" not in options:
        return options
    options = dict(options)
    upload = Upload.objects.filter(pk=options.pop("upload_id"), account_id=account_id).first()
    if upload is None:
        raise not_found("upload")
    problem = None
    if upload.state != UploadState.READY:
        problem = f"The upload is not complete: {upload.received} of {upload.size} bytes received."
    elif job_type == JobType.BURNED and not upload.has_video:
        problem = "The upload has no picture to burn subtitles on (it is audio only)."
    if problem:
        raise RequestValidationError([{"loc": [location, "upload_id"], "msg": problem, "type": "value_error"}])
    return {**options, "upload": upload}


@operation(JOBS)
def transcribe(caller: Caller, data: dict, request=None) -> dict:
    job = _queue_job(caller.account, JobType.TRANSCRIPT, validate(s.TranscribeRequestSerializer, data))
    return {"id": str(job.id)}


@operation(JOBS)
def create_subtitles(caller: Caller, data: dict, request=None) -> dict:
    job = _queue_job(caller.account, JobType.SUBTITLES, validate(s.SubtitlesRequestSerializer, data))
    return {"id": str(job.id), "format": job.subtitle_format}


@operation(JOBS)
def burn_subtitles(caller: Caller, data: dict, request=None) -> dict:
    job = _queue_job(caller.account, JobType.BURNED, validate(s.BurnSubtitlesRequestSerializer, data))
    return {"id": str(job.id)}


def _queue_job(account, job_type: str, request: dict) -> Job:
    """A validated request queued as one job: its source (a link or the account's upload) and its
    options under the Job's field names (transcription.job_options)."""
    source = with_upload(account.pk, {key: request[key] for key in ("url", "upload_id") if key in request}, job_type)
    return services.job_create(account, type=job_type, **source, **job_options.job_columns(job_type, request))


@operation(JOBS)
def transcribe_playlist(caller: Caller, data: dict, request=None) -> dict:
    options = validate(s.TranscribePlaylistRequestSerializer, data)
    listing = playlist_listing(options["url"], "body")
    batch = services.batch_create(
        caller.account,
        title=listing.title,
        total=listing.total,
        skipped=listing.skipped,
        video_urls=[video.url for video in listing.videos],
        **options,
    )
    ids = [str(job_id) for job_id in batch.jobs.order_by("position").values_list("id", flat=True)]
    return {"batch_id": str(batch.id), "title": batch.title, "count": len(ids), "skipped": batch.skipped, "ids": ids}


# --- Speakers' names and enrolled voices (job requests, free of minutes but for a voice's sample) --


@operation(JOBS)  # free of minutes, but a write: it counts as a job request
def rename_speakers(caller: Caller, data: dict, request=None) -> dict:
    """POST /v1/api/transcription/{id}/speakers: names for the job's speakers ({"id": ..., "names":
    {"1": "Alice"}}, keys the N of "Speaker N"); answers the job as GET does. A number the job's
    transcript does not hold is a 422 naming it; another account's job a 404."""
    job_id = parse_id(data.get("id"))
    names = validate(s.SpeakerNamesRequestSerializer, without_id(data))["names"]
    job = owned(Job.objects.only("id", "state", "txt"), caller.account_id, data.get("id"), "job")
    if job.state != "done":
        raise NotDone(f"This job is {job.state}: its speakers can be named once it is done.")
    present = set(speakers_in(job.txt))
    unknown = [number for number in names if int(number) not in present]
    if unknown:
        held = ", ".join(f"Speaker {n}" for n in sorted(present)) or "no speakers (no speech was found)"
        raise RequestValidationError(
            [
                {
                    # a number, as the other entries of `names` are located (api.errors.validation_errors)
                    "loc": ["body", "names", int(number)],
                    "msg": f"This job's transcript has no Speaker {number}; it has {held}.",
                    "type": "unknown_speaker",
                }
                for number in unknown
            ]
        )
    services.job_rename_speakers(job_id, names)
    job = Job.objects.prefetch_related(translations_in_order()).get(pk=job_id)
    return job_payload(job, request)


@operation(JOBS)
def create_voice(caller: Caller, data: dict, request=None) -> dict:
    """POST /v1/api/voices: enrol a voice from a sample at `url`, read by a job of its own."""
    options = with_upload(caller.account_id, validate(s.VoiceRequestSerializer, data), JobType.TRANSCRIPT)
    voice = voice_services.voice_create(
        caller.account, name=options["name"], url=options.get("url", ""), upload=options.get("upload")
    )
    return {"id": str(voice.id), "name": voice.name, "state": "processing"}


@operation(POLLS)
def list_voices(caller: Caller, data: dict, request=None) -> list[dict]:
    voices = Voice.objects.filter(account_id=caller.account_id).select_related("job")
    return [voice_document(voice) for voice in voices]


@operation(JOBS)
def delete_voice(caller: Caller, data: dict, request=None) -> None:
    voice_services.voice_delete(owned(Voice, caller.account_id, data.get("id"), "voice"))


# --- Reading (polls) --------------------------------------------------------------------------


@operation(POLLS)  # reads take {"id": …}: any spelling of a UUID; a malformed one is a 422 on ["path", "id"]
def get_transcription(caller: Caller, data: dict, request=None) -> dict:
    """The job as GET /v1/api/transcription/{id} answers it; links absolute to `request`'s host, or to
    PUBLIC_BASE_URL without one."""
    job_id = parse_id(data.get("id"))
    # Clients poll every few seconds; the answer is cached until the job or one of its
    # translations changes (transcription.events.poll_cache). Most REST polls are answered before the
    # view, from the cache, by transcription.api.front.polls; the rest, and MCP's, come here.
    cached = polls.cached_poll(job_id)
    if cached is None or cached.account_id != caller.account_id:
        raise not_found("job")
    return polls.document(cached, request)


@operation(POLLS)
def get_batch(caller: Caller, data: dict, request=None) -> dict:
    return batch_payload(owned(Batch, caller.account_id, data.get("id"), "batch"), request)


@operation(POLLS)
def preview_playlist(caller: Caller, query: dict, request=None) -> dict:
    location = "query"
    options = validate(s.PlaylistQuerySerializer, query, location)
    listing = playlist_listing(options["url"], location, durations=True)
    # A length that could not be found is not 0 s: it is counted in `unknown_durations`, left
    # out of `needed_seconds`, and the batch is never said to fit.
    unknown = sum(1 for video in listing.videos if not video.duration)
    cost = quote(
        caller.account_id,
        [video.duration for video in listing.videos if video.duration],
        options["type"],
        options["quality"],
        options["target_languages"],
    )
    return {
        "id": listing.id,
        "title": listing.title,
        "total": listing.total,
        "skipped": listing.skipped,
        "max_videos": settings.PLAYLIST_MAX_VIDEOS,
        "is_channel": listing.is_channel,
        "tab": listing.tab,
        "videos": [
            {
                "id": v.id,
                "title": v.title,
                "duration": v.duration or 0,
                "thumbnail": v.thumbnail,
                "is_age_restricted": v.is_age_restricted,
                "is_live": v.is_live,
                "language": v.language,
            }
            for v in listing.videos
        ],
        "needed_seconds": cost.needed_seconds,
        "remaining_seconds": cost.remaining_seconds,
        "fits": cost.fits and not unknown,
        "unknown_durations": unknown,
    }


def pricing_rules() -> str:
    """What each kind of job costs, in plain words (billing.pricing's figures)."""
    burned = ", ".join(
        f"{pricing.base_multiplier('burned', quality)}x at quality {quality}" for quality in ("default", "hd", "uhd")
    )
    burned_translation = ", ".join(
        f"+{pricing.translation_multiplier('burned', quality)}x at {quality}" for quality in ("default", "hd", "uhd")
    )
    return (
        "Jobs are paid from the balance in seconds of the video's length. "
        f"A transcript costs {pricing.base_multiplier('transcript')}x the length; subtitles "
        f"{pricing.base_multiplier('subtitles')}x, +{pricing.translation_multiplier('subtitles')}x per target "
        f"language; a burned-in video {burned}, per target language {burned_translation}. A playlist costs the "
        "sum over its queued videos. The charge is made when the length is known; if the balance covers only "
        "part of a video, the job makes a preview of the first whole minutes covered (is_preview, "
        "preview_minutes); a failed job is refunded."
    )


# --- Uploads (the door: transcription.api.doors.uploads, which streams the bytes) ---------------------


def upload_document(upload: Upload) -> dict:
    """An upload as GET /v1/api/uploads/{id} answers it."""
    expires = upload.updated_at + timedelta(hours=settings.UPLOAD_RETENTION_HOURS)
    return {
        "id": str(upload.id),
        "filename": upload.filename,
        "size": upload.size,
        "received": upload.received,
        "state": upload.state,
        "duration": upload.duration,
        "has_video": upload.has_video,
        "created_at": upload.created_at.isoformat().replace("+00:00", "Z"),
        "expires_at": expires.isoformat().replace("+00:00", "Z"),
    }


def find_upload(account_id, raw_id) -> Upload:
    """The account's upload `raw_id` (any spelling of a UUID): a 422 on ["path", "id"] for a
    malformed id, a 404 for no upload of this account."""
    return owned(Upload, account_id, raw_id, "upload")


@operation(POLLS)
def get_upload(caller: Caller, data: dict, request=None) -> dict:
    return upload_document(find_upload(caller.account_id, data.get("id")))


class UploadInUse(Conflict):
    default_detail = "A job that reads this upload is still running; delete the upload once the job has ended."


@operation(POLLS)
def delete_upload(caller: Caller, data: dict, request=None) -> dict:
    """Forget the account's upload and its bytes; a 409 while a job that reads it runs."""
    upload = find_upload(caller.account_id, data.get("id"))
    if Job.objects.filter(upload=upload).exclude(state__in=FINAL_STATES).exists():
        raise UploadInUse()
    services.upload_delete(upload.id)
    return {}


def upload_not_media(problem: str, field: str = "file") -> RequestValidationError:
    return RequestValidationError([{"loc": ["body", field], "msg": problem, "type": "value_error"}])


def finish_upload(upload_id, path: Path, field: str = "file") -> Upload:
    """A whole upload: checked with ffprobe (audio or video, with an audio track, not longer than
    MAX_VIDEO_SECONDS), moved into storage and marked ready; deleted with a 422 on `field` when it
    is not media we can transcribe."""
    try:
        summary = probe_media(path, timeout=UPLOAD_PROBE_TIMEOUT_SECONDS)
        if summary.duration > settings.MAX_VIDEO_SECONDS:
            hours = settings.MAX_VIDEO_SECONDS / 3600
            raise NotMedia(f"The file is {summary.duration / 3600:.1f} hours long; the most is {hours:g} hours.")
    except NotMedia as error:
        services.upload_delete(upload_id)
        raise upload_not_media(str(error), field) from None
    size = path.stat().st_size
    files.store_moving(path, files.upload_name(upload_id))
    return services.upload_ready(upload_id, size=size, duration=summary.duration, has_video=summary.has_video)


UPLOAD_PROBE_TIMEOUT_SECONDS = 60


@operation(POLLS)
def get_balance(caller: Caller, data: dict, request=None) -> dict:
    """Seconds left on the account, and the pricing rules in plain words (MCP's get_balance)."""
    return {"remaining_seconds": account_balance(caller.account_id), "pricing": pricing_rules()}


# A playlist's listing is kept this long (in Redis, shared by the web processes): a client that
# previews a playlist and then queues it, or polls the preview, costs one yt-dlp listing, not one
# a request. Failures are not kept: the next request tries again.
PLAYLIST_LISTING_SECONDS = 60


def _listing_from_json(data: dict) -> PlaylistListing:
    # unknown or missing fields raise TypeError: the cache reads it as a miss
    return PlaylistListing(**{**data, "videos": [PlaylistEntry(**video) for video in data["videos"]]})


# a listing kept for PLAYLIST_LISTING_SECONDS, shared by the web processes (fields by name)
LISTING_SHAPE = shared_cache.Shape("playlist-listing", "1", dataclasses.asdict, _listing_from_json)
LISTING_BUSY_RETRY_AFTER_SECONDS = 10

# The listings this process runs at once (PLAYLIST_LISTINGS_PER_PROCESS). A listing holds its
# request's thread for up to PLAYLIST_LISTING_TIMEOUT_SECONDS; the cap keeps the other threads of
# the process (bin/web runs several per worker) free for polls however slow the playlist sites are.
_listing_slots: threading.BoundedSemaphore | None = None
_listing_slots_lock = threading.Lock()


def _slots() -> threading.BoundedSemaphore:
    global _listing_slots
    with _listing_slots_lock:
        if _listing_slots is None:
            _listing_slots = threading.BoundedSemaphore(settings.PLAYLIST_LISTINGS_PER_PROCESS)
        return _listing_slots


def listing_key(url: str) -> str:
    return "playlist:" + hashlib.sha256(url.encode()).hexdigest()


def playlist_listing(url: str, location: str = "body", *, durations: bool = False):
    """The playlist or channel behind `url`; a 422 on the url at `location` (body/query) when it
    cannot be listed, or not within PLAYLIST_LISTING_TIMEOUT_SECONDS; a 503 (Busy) when this
    process already runs as many listings as it may. With `durations`, the lengths the listing
    lacks are looked up within the same time limit (playlist.find_durations); those not found
    stay None."""
    key = listing_key(url)
    listing = shared_cache.get(key, LISTING_SHAPE)
    if listing is not None and (listing.durations_looked_up or not durations):
        return listing
    slots = _slots()
    if not slots.acquire(blocking=False):
        raise Busy(
            "Too many playlists are being listed at the moment; try again in "
            f"{LISTING_BUSY_RETRY_AFTER_SECONDS} seconds.",
            retry_after=LISTING_BUSY_RETRY_AFTER_SECONDS,
        )
    try:
        started = time.monotonic()
        limit = settings.PLAYLIST_LISTING_TIMEOUT_SECONDS
        if listing is None:
            listing = list_playlist(
                url,
                allow_private=settings.ALLOW_PRIVATE_URLS,
                timeout=settings.FETCH_TIMEOUT_SECONDS,
                deadline=limit,
                max_videos=settings.PLAYLIST_MAX_VIDEOS,
                **settings.YTDLP_OPTIONS,
            )
        if durations:
            find_durations(
                listing,
                allow_private=settings.ALLOW_PRIVATE_URLS,
                deadline=limit - (time.monotonic() - started),
                **settings.YTDLP_OPTIONS,
            )
    except PlaylistError as error:
        raise RequestValidationError([{"loc": [location, "url"], "msg": str(error), "type": "value_error"}]) from None
    finally:
        slots.release()
    shared_cache.set(key, listing, PLAYLIST_LISTING_SECONDS, LISTING_SHAPE)
    return listing
