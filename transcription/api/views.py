"""The v1 API. Views parse and answer; services write; work runs on Celery."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import exceptions, viewsets
from rest_framework.response import Response

from billing.selectors import quote
from config import shared_cache
from transcription import services
from transcription.models import Batch, JobType
from transcription.pipeline.playlist import PlaylistError, find_durations, list_playlist

from . import polls, ratelimit
from . import serializers as s
from .errors import Busy, RequestValidationError, validation_errors
from .presenters import batch_payload
from .throttles import AccountRateThrottle, rate_limit_headers


def validate(serializer_class, data: dict, location: str = "body") -> dict:
    """The options a request serializer reads from `data`, or a RequestValidationError whose
    entries name each offending field under `location`: the one check for every front door
    (the API and the website's job form)."""
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise RequestValidationError(validation_errors(serializer.errors, location))
    return serializer.validated_data


def parse_body(serializer_class, request) -> dict:
    data = request.data
    if not isinstance(data, dict):
        raise RequestValidationError([{"loc": ["body"], "msg": "The body must be a JSON object.", "type": "dict_type"}])
    return validate(serializer_class, data)


def parse_path_id(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        raise RequestValidationError(
            [{"loc": ["path", "id"], "msg": "Input should be a valid UUID.", "type": "uuid_parsing"}]
        ) from None


def parse_query(serializer_class, request) -> dict:
    data = {}
    for name in serializer_class().fields:
        values = request.query_params.getlist(name)
        if not values:
            continue
        if name == "target_languages":
            # Both ?target_languages=es&target_languages=fr and ?target_languages=es,fr
            data[name] = [item.strip() for value in values for item in value.split(",") if item.strip()]
        else:
            data[name] = values[-1]
    return validate(serializer_class, data, "query")


# --- What the document says of each operation -----------------------------------------------

EXAMPLE_VIDEO = "https://videos.example.com/talks/keynote.mp4"
_QUEUED = (
    " The answer comes at once; poll `GET /v1/api/transcription/{id}` every 2 to 3 seconds until `state` "
    "is `done` or `failed`. A video that cannot be fetched, or an account without minutes, is not an HTTP "
    "error: the job ends `failed` with the reason in `error` (and its minutes back)."
)


def _example(name: str, value: dict, summary: str = "") -> OpenApiExample:
    return OpenApiExample(name, value=value, summary=summary or name, request_only=True)


def _id_parameter(what: str) -> OpenApiParameter:
    return OpenApiParameter(
        "id", OpenApiTypes.UUID, OpenApiParameter.PATH, description=f"The {what}'s id, as its POST answered it."
    )


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


class ContractViewSet(viewsets.ViewSet):
    throttle_classes = [AccountRateThrottle]

    def initial(self, request, *args, **kwargs):
        try:
            super().initial(request, *args, **kwargs)
        except (exceptions.NotAuthenticated, exceptions.AuthenticationFailed):
            # No valid token: no account to count against, so the client's address is counted
            # (token guessing and floods of anonymous requests are throttled too).
            state = ratelimit.hit_address(ratelimit.client_address(request))
            if not state.allowed:
                raise exceptions.Throttled(wait=state.retry_after) from None
            raise

    def throttled(self, request, wait):
        raise exceptions.Throttled(wait=request.rate_limit.retry_after)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        for name, value in rate_limit_headers(request).items():
            response[name] = value
        return response


def _not_found(what: str):
    return exceptions.NotFound(f"No {what} with that id on this account.")


class JobViewSet(ContractViewSet):
    @extend_schema(
        operation_id="transcribe",
        summary="Queue a video for a transcript",
        description="Queues one video for a plain-text transcript with timestamps and speaker tags "
        "(`[00:00:12] Speaker 1: …`, a paragraph per turn). Costs 1× the video's length." + _QUEUED,
        request=s.TranscribeRequestSerializer,
        responses={200: s.QueuedJobSerializer},
        examples=[
            _example("A video, language detected", {"url": EXAMPLE_VIDEO}),
            _example("Spanish, verbatim", {"url": EXAMPLE_VIDEO, "language_code": "es", "verbatim": True}),
        ],
    )
    def transcribe(self, request):
        options = parse_body(s.TranscribeRequestSerializer, request)
        job = services.job_create(request.user, type=JobType.TRANSCRIPT, **options)
        return Response({"id": str(job.id)})

    @extend_schema(
        operation_id="subtitles",
        summary="Queue a video for subtitles (SRT and WebVTT), optionally translated",
        description="Queues one video for subtitles: both `srt` and `webvtt` are always made; `format` only "
        "says which one the client reads, and is echoed. Each of `target_languages` adds a translation "
        "with the same cues and times. Costs 1× the video's length, +1× per target language." + _QUEUED,
        request=s.SubtitlesRequestSerializer,
        responses={200: s.QueuedSubtitlesJobSerializer},
        examples=[
            _example(
                "WebVTT, and in Spanish and French",
                {"url": EXAMPLE_VIDEO, "format": "webvtt", "target_languages": ["Spanish", "French"]},
            ),
            _example("SRT only", {"url": EXAMPLE_VIDEO}),
        ],
    )
    def subtitles(self, request):
        options = parse_body(s.SubtitlesRequestSerializer, request)
        subtitle_format = options.pop("format")
        job = services.job_create(request.user, type=JobType.SUBTITLES, subtitle_format=subtitle_format, **options)
        return Response({"id": str(job.id), "format": subtitle_format})

    @extend_schema(
        operation_id="burn_subtitles",
        summary="Queue a video to get it back with the subtitles burned in",
        description="Queues one video to be downloaded and drawn again with its subtitles in the picture, "
        "at `quality` 720p (`default`), 1080p (`hd`) or 4K (`uhd`). Each of `target_languages` gives one more "
        "video. Costs 3×, 4× or 5× the video's length by quality, +(1 + that)× per target language. "
        "`burned_video_url` is a signed link (7 days) that answers byte ranges, so players can seek." + _QUEUED,
        request=s.BurnSubtitlesRequestSerializer,
        responses={200: s.QueuedJobSerializer},
        examples=[
            _example(
                "1080p, large text on a box",
                {"url": EXAMPLE_VIDEO, "quality": "hd", "font_size": "large", "background": True},
            ),
            _example("720p, and a Spanish version", {"url": EXAMPLE_VIDEO, "target_languages": ["Spanish"]}),
        ],
    )
    def burn_subtitles(self, request):
        options = parse_body(s.BurnSubtitlesRequestSerializer, request)
        job = services.job_create(request.user, type=JobType.BURNED, **options)
        return Response({"id": str(job.id)})

    @extend_schema(
        operation_id="get_transcription",
        summary="Poll a job and read its results",
        description="The job's state, progress and, once `done`, its results (`txt`, `srt`, `webvtt`, "
        "`burned_video_url`, `translations`). Poll every 2 to 3 seconds until `state` is `done` or `failed`; "
        "each call counts as one poll. Answers the same for a job queued by any POST, a batch or the website.",
        parameters=[_id_parameter("job")],
        responses={200: s.TranscriptionApiResponseSerializer},
    )
    def retrieve(self, request, id: str):
        job_id = parse_path_id(id)
        # Clients poll every few seconds; the answer is cached until the job or one of its
        # translations changes (transcription.poll_cache). Most polls are answered before this
        # view, from the cache, by transcription.api.polls; those that get here are the rest.
        cached = polls.cached_poll(job_id)
        if cached is None or cached.account_id != request.user.pk:
            raise _not_found("job")
        return Response(polls.document(cached, request))


class BatchViewSet(ContractViewSet):
    @extend_schema(
        operation_id="transcribe_playlist",
        summary="Queue every public video of a playlist or channel",
        description="Lists the playlist or channel (its first 25 public videos; private, deleted and live ones "
        "are counted in `skipped`) and queues one job per video, all of `type`. A job costs what the same job "
        "queued alone costs, charged as each one starts. An address that cannot be listed is a 422 on `url` "
        "with the reason. Poll the jobs one by one or all at once with `GET /v1/api/batch/{id}`.",
        request=s.TranscribePlaylistRequestSerializer,
        responses={200: s.QueuedBatchSerializer},
        examples=[
            _example(
                "Subtitles for a playlist, in Spanish too",
                {
                    "url": "https://videos.example.com/playlists/talks",
                    "type": "subtitles",
                    "target_languages": ["Spanish"],
                },
            ),
            _example("Transcripts of a channel", {"url": "https://videos.example.com/@conference"}),
        ],
    )
    def create(self, request):
        options = parse_body(s.TranscribePlaylistRequestSerializer, request)
        listing = playlist_listing(options["url"], "body")
        batch = services.batch_create(
            request.user,
            title=listing.title,
            total=listing.total,
            skipped=listing.skipped,
            video_urls=[video.url for video in listing.videos],
            **options,
        )
        ids = [str(job_id) for job_id in batch.jobs.order_by("position").values_list("id", flat=True)]
        return Response(
            {"batch_id": str(batch.id), "title": batch.title, "count": len(ids), "skipped": batch.skipped, "ids": ids}
        )

    @extend_schema(
        operation_id="get_batch",
        summary="Poll every job of a batch",
        description="Every job the batch queued, in queue order, as `GET /v1/api/transcription/{id}` shows it "
        "but without the text results (read each job by id for them). Counts as one poll.",
        parameters=[_id_parameter("batch")],
        responses={200: s.BatchStatusSerializer},
    )
    def retrieve(self, request, id: str):
        batch_id = parse_path_id(id)
        batch = Batch.objects.filter(pk=batch_id, account=request.user).first()
        if batch is None:
            raise _not_found("batch")
        return Response(batch_payload(batch, request))


# A playlist's listing is kept this long (in Redis, shared by the web processes): a client that
# previews a playlist and then queues it, or polls the preview, costs one yt-dlp listing, not one
# a request. Failures are not kept: the next request tries again.
PLAYLIST_LISTING_SECONDS = 60
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


def playlist_listing(url: str, location: str = "body", *, durations: bool = False):
    """The playlist or channel behind `url`; a 422 on the url at `location` (body/query) when it
    cannot be listed, or not within PLAYLIST_LISTING_TIMEOUT_SECONDS; a 503 (Busy) when this
    process already runs as many listings as it may. With `durations`, the lengths the listing
    lacks are looked up within the same time limit (playlist.find_durations); those not found
    stay None."""
    key = "playlist:" + hashlib.sha256(url.encode()).hexdigest()
    listing = shared_cache.get(key)
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
    shared_cache.set(key, listing, PLAYLIST_LISTING_SECONDS)
    return listing


class PlaylistViewSet(ContractViewSet):
    @extend_schema(
        operation_id="preview_playlist",
        summary="What a playlist or channel would queue, and what it would cost",
        description="Lists the playlist or channel as `POST /v1/api/transcribe-playlist` would (its first 25 "
        "public videos) and says the seconds of balance the batch needs against the seconds left (`fits`). "
        "Queues nothing; counts as a poll. An address that cannot be listed is a 422 on `url` with the reason. "
        "A video whose length the listing does not give is measured from its media's header; one whose length "
        "cannot be found is counted in `unknown_durations` (its `duration` 0), and then `fits` is false.",
        parameters=[
            OpenApiParameter(
                "url",
                {"type": "string", "format": "uri", "maxLength": 2048},
                required=True,
                description="Playlist or channel URL",
                examples=[OpenApiExample("A playlist", value="https://videos.example.com/playlists/talks")],
            ),
            OpenApiParameter(
                "type", _ref("TranscriptionType"), description="What each job would make (default `transcript`)"
            ),
            OpenApiParameter("quality", _ref("Quality"), description="For burned jobs (default `default`)"),
            OpenApiParameter(
                "target_languages",
                {"type": "array", "items": _ref("LanguageName"), "maxItems": 10},
                explode=True,
                description="Only for `subtitles` and `burned`; repeat the parameter or separate with commas; max 10",
            ),
        ],
        responses={200: s.PlaylistPreviewSerializer},
    )
    def preview(self, request):
        query = parse_query(s.PlaylistQuerySerializer, request)
        listing = playlist_listing(query["url"], "query", durations=True)
        # A length that could not be found is not 0 s: it is counted in `unknown_durations`, left
        # out of `needed_seconds`, and the batch is never said to fit.
        unknown = sum(1 for video in listing.videos if not video.duration)
        cost = quote(
            request.user.pk,
            [video.duration for video in listing.videos if video.duration],
            query["type"],
            query["quality"],
            query["target_languages"],
        )
        return Response(
            {
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
        )
