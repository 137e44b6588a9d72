"""The v1 API. Views parse and answer; services write; work runs on Celery."""

from __future__ import annotations

import uuid

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, viewsets
from rest_framework.response import Response

from billing.selectors import quote
from transcription import poll_cache, services
from transcription.models import Batch, Job, JobType
from transcription.pipeline.playlist import PlaylistError, list_playlist

from . import serializers as s
from .errors import RequestValidationError, validation_errors
from .presenters import batch_payload, job_document, translations_in_order, with_links
from .throttles import AccountRateThrottle, rate_limit_headers


def parse_body(serializer_class, request) -> dict:
    data = request.data
    if not isinstance(data, dict):
        raise RequestValidationError([{"loc": ["body"], "msg": "The body must be a JSON object.", "type": "dict_type"}])
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise RequestValidationError(validation_errors(serializer.errors, "body"))
    return serializer.validated_data


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
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise RequestValidationError(validation_errors(serializer.errors, "query"))
    return serializer.validated_data


class ContractViewSet(viewsets.ViewSet):
    throttle_classes = [AccountRateThrottle]

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
        operation_id="transcribe", request=s.TranscribeRequestSerializer, responses={200: s.QueuedJobSerializer}
    )
    def transcribe(self, request):
        options = parse_body(s.TranscribeRequestSerializer, request)
        job = services.job_create(request.user, type=JobType.TRANSCRIPT, **options)
        return Response({"id": str(job.id)})

    @extend_schema(
        operation_id="subtitles", request=s.SubtitlesRequestSerializer, responses={200: s.QueuedSubtitlesJobSerializer}
    )
    def subtitles(self, request):
        options = parse_body(s.SubtitlesRequestSerializer, request)
        subtitle_format = options.pop("format")
        job = services.job_create(request.user, type=JobType.SUBTITLES, subtitle_format=subtitle_format, **options)
        return Response({"id": str(job.id), "format": subtitle_format})

    @extend_schema(
        operation_id="burn_subtitles", request=s.BurnSubtitlesRequestSerializer, responses={200: s.QueuedJobSerializer}
    )
    def burn_subtitles(self, request):
        options = parse_body(s.BurnSubtitlesRequestSerializer, request)
        job = services.job_create(request.user, type=JobType.BURNED, **options)
        return Response({"id": str(job.id)})

    @extend_schema(operation_id="get_transcription", responses={200: s.TranscriptionApiResponseSerializer})
    def retrieve(self, request, id: str):
        job_id = parse_path_id(id)
        # Clients poll every few seconds; the answer is cached until the job or one of its
        # translations changes (transcription.poll_cache).
        cached = poll_cache.get(job_id)
        if cached is None:
            job = Job.objects.filter(pk=job_id).prefetch_related(translations_in_order()).first()
            if job is None:
                raise _not_found("job")
            cached = poll_cache.put(job_id, job.account_id, job_document(job))
        account_id, document = cached
        if account_id != request.user.pk:
            raise _not_found("job")
        return Response(with_links(document, request))


class BatchViewSet(ContractViewSet):
    @extend_schema(
        operation_id="transcribe_playlist",
        request=s.TranscribePlaylistRequestSerializer,
        responses={200: s.QueuedBatchSerializer},
    )
    def create(self, request):
        options = parse_body(s.TranscribePlaylistRequestSerializer, request)
        listing = _list_or_422(options["url"], "body")
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

    @extend_schema(operation_id="get_batch", responses={200: s.BatchStatusSerializer})
    def retrieve(self, request, id: str):
        batch_id = parse_path_id(id)
        batch = Batch.objects.filter(pk=batch_id, account=request.user).first()
        if batch is None:
            raise _not_found("batch")
        return Response(batch_payload(batch, request))


def _list_or_422(url: str, location: str):
    try:
        return list_playlist(
            url,
            allow_private=settings.ALLOW_PRIVATE_URLS,
            timeout=settings.FETCH_TIMEOUT_SECONDS,
            max_videos=settings.PLAYLIST_MAX_VIDEOS,
        )
    except PlaylistError as error:
        raise RequestValidationError([{"loc": [location, "url"], "msg": str(error), "type": "value_error"}]) from None


class PlaylistViewSet(ContractViewSet):
    @extend_schema(
        operation_id="preview_playlist",
        parameters=[
            OpenApiParameter("url", str, required=True, description="Playlist or channel URL"),
            OpenApiParameter("type", str, enum=[c for c, _ in JobType.choices], default="transcript"),
            OpenApiParameter("quality", str, enum=["default", "hd", "uhd"], default="default"),
            OpenApiParameter(
                "target_languages",
                {"type": "array", "items": {"type": "string"}},
                many=True,
                explode=True,
                description="Repeat the parameter or separate with commas; max 10",
            ),
        ],
        responses={200: s.PlaylistPreviewSerializer},
    )
    def list(self, request):
        query = parse_query(s.PlaylistQuerySerializer, request)
        listing = _list_or_422(query["url"], "query")
        cost = quote(
            request.user.pk,
            [video.duration or 0 for video in listing.videos],
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
                "fits": cost.fits,
            }
        )
