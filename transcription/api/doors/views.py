"""The v1 API. Views parse and answer; services write; work runs on Celery."""

from __future__ import annotations

import json
from typing import cast

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.response import Response

from transcription.api.front import editing, front_door, operations, ratelimit, reburning
from transcription.api.wire import serializers as s
from transcription.api.wire.error_bodies import RequestValidationError


def body(request) -> dict:
    data = request.data
    if not isinstance(data, dict):
        raise RequestValidationError([{"loc": ["body"], "msg": "The body must be a JSON object.", "type": "dict_type"}])
    return data


def query(serializer_class, request) -> dict:
    """The query parameters `serializer_class` reads, as the operation's fields."""
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
    return data


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
    """The REST door, an adapter of the front door (transcription.api.front.front_door): the Caller is
    built from the bearer token after content negotiation (so ?format= of an unknown renderer is a
    404 first, as DRF answers it), the request is counted by its method (the four POSTs are job
    requests, every GET a poll, whatever the view then says), and refusals are answered by
    error_bodies.exception_handler in the contract's shape. DRF's own authentication, permission and
    throttle steps are not used; authentication_classes stays for the OpenAPI document."""

    throttle_classes = []
    permission_classes = []

    def perform_authentication(self, request):
        request.caller = front_door.caller_from_token(
            request.META.get("HTTP_AUTHORIZATION"), ratelimit.client_address(request), front_door.REST
        )
        # what changes something (a POST, DELETE /v1/api/voices/{id}) is a job request, a read a poll
        reads = ("GET", "HEAD", "OPTIONS")
        front_door.admit(request.caller, ratelimit.POLLS if request.method in reads else ratelimit.JOBS)

    def get_authenticate_header(self, request):
        return "Bearer"

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        caller = getattr(request, "caller", None)
        for name, value in front_door.rate_limit_headers(caller.rate if caller is not None else None).items():
            response[name] = value
        return response


def perform(request, operation: front_door.Operation, arguments=None) -> Response:
    return Response(front_door.perform(request.caller, operation, arguments, request))


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
        return perform(request, operations.transcribe, lambda: body(request))

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
        return perform(request, operations.create_subtitles, lambda: body(request))

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
        return perform(request, operations.burn_subtitles, lambda: body(request))

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
        return perform(request, operations.get_transcription, {"id": id})

    @extend_schema(
        operation_id="rename_speakers",
        summary="Call a job's speakers by their names (extension)",
        description="An extension of this server, not in the v1 contract. Names the speakers of a job by the `N` of "
        "`Speaker N` in its `txt`: `txt` then reads `[00:00:03] Alice: …` and every WebVTT voice span (the job's "
        "and its translations') `<v Alice>`. Names given before are kept unless given again; `null` gives a "
        "speaker back its number. Answers the job as `GET /v1/api/transcription/{id}` does. Free of minutes; "
        "counts as a job request. A number the job's transcript does not hold, or a bad name, is a 422 naming it; "
        "a job that is not `done` is a 409.",
        parameters=[_id_parameter("job")],
        request=s.SpeakerNamesRequestSerializer,
        responses={200: s.TranscriptionApiResponseSerializer, 409: s.ErrorResponseSerializer},
        examples=[_example("Two speakers named", {"names": {"1": "Alice", "2": "Bob"}})],
        extensions={"x-extension": True},
    )
    def rename_speakers(self, request, id: str):
        return perform(request, operations.rename_speakers, lambda: {**body(request), "id": id})

    @extend_schema(
        operation_id="burn_again",
        summary="Burn a done job's videos again from its edited subtitles (extension)",
        description="An extension of this server, not in the v1 contract. A done `burned` job's video, and each "
        "translation's, drawn again from the subtitles as they are now (after `PATCH …/segments`). Charged as "
        "burned videos: 3, 4 or 5 times the job's length each, by its `quality`. The answer is the job as "
        "`GET /v1/api/transcription/{id}` gives it, `burning`; poll it until `done` (the old videos are served "
        "until the new ones replace them). An account without the minutes is not an HTTP error: nothing is "
        "charged, the job stays `done` and `error` says why. A job not `done`, not `burned`, with a translation "
        "still being made, or whose source video is no longer kept is a 409. No body. Counts as a job request.",
        parameters=[_id_parameter("job")],
        request=None,
        responses={200: s.TranscriptionApiResponseSerializer, 409: s.ErrorResponseSerializer},
        extensions={"x-extension": True},
    )
    def burn_again(self, request, id: str):
        return perform(request, reburning.burn_again, lambda: {**body(request), "id": id})


_SEGMENTS = (
    "An extension of this server, not in the v1 contract. A `done` job's transcript as data: its segments "
    "(`index`, `start`, `end`, `speaker`, `text`, `words` with their times), the document's `version` and its "
    "ETag. A job not `done` (still running, or failed and refunded) is a 409; another account's job a 404."
)


class SegmentsViewSet(ContractViewSet):
    @extend_schema(
        operation_id="get_transcript_segments",
        summary="A job's transcript as segments and words (extension)",
        description=_SEGMENTS + " `?version=original` reads the recognition as it was before any edit. Counts as "
        "a poll.",
        parameters=[
            _id_parameter("job"),
            OpenApiParameter("version", str, OpenApiParameter.QUERY, enum=["current", "original"], required=False),
        ],
        responses={200: s.SegmentsDocumentSerializer, 409: s.ErrorResponseSerializer},
        extensions={"x-extension": True},
    )
    def retrieve(self, request, id: str):
        arguments = {"id": id, "version": request.query_params.get("version")}
        answer = cast(dict, front_door.perform(request.caller, editing.get_transcript_segments, arguments, request))
        return Response(answer, headers={"ETag": answer["etag"]})

    @extend_schema(
        operation_id="edit_transcript",
        summary="Correct a job's transcript (extension)",
        description=_SEGMENTS + " Applies `edits` in order, each naming its segment by the `index` the last GET "
        "gave it: `text` (new words), `speaker` (the segment, or the run of words `from_word`..`to_word`, to a "
        "speaker of the job or the next new number), `split` (before `word`), `merge` (with the next segment, "
        "of the same speaker), `times` (new `start`/`end`, inside the media and between the neighbours), "
        "`restore` (the original recognition back). `txt`, `srt`, `webvtt` and the OpenAI door's answers are "
        "made again from the result. `If-Match` must carry the ETag of the version edited: missing or stale is "
        "a 412 (read again). A bad edit is a 422 naming `edits[i]` and its field, and nothing is applied. "
        "Free of minutes, but a job's translations are made again for the cues whose text changed, on a worker "
        "(each `translating`, then `done`), charged 1× those cues' seconds per language; without the minutes the "
        "edit is still saved and those translations end `failed` saying why. A cue edited again before its "
        "translation is made is charged once (only added seconds are charged). The answer's `charge` says what "
        "the save charged; with `dry_run: true` nothing is saved and `charge` is what a save would charge now "
        "(the quote). A burned video is made again only by `POST …/burn`. Counts as a job request.",
        parameters=[
            _id_parameter("job"),
            OpenApiParameter("If-Match", str, OpenApiParameter.HEADER, required=True, description="The ETag read"),
        ],
        request=s.SegmentEditsRequestSerializer,
        responses={
            200: s.SegmentsDocumentSerializer,
            409: s.ErrorResponseSerializer,
            412: s.ErrorResponseSerializer,
        },
        examples=[
            _example("A word corrected", {"edits": [{"op": "text", "index": 3, "text": "So I don't hear that."}]})
        ],
        extensions={"x-extension": True},
    )
    def partial_update(self, request, id: str):
        def arguments() -> dict:
            return {**body(request), "id": id, "if_match": request.headers.get("If-Match")}

        answer = cast(dict, front_door.perform(request.caller, editing.edit_transcript, arguments, request))
        return _segments_answer(answer)


def _segments_answer(answer: dict) -> HttpResponse:
    """The edited document, its segments written from their kept JSON (editing.EncodedSegments),
    the rest as DRF's renderer writes JSON: a 2-hour document is a megabyte to encode otherwise."""
    segments = answer["segments"]
    if not isinstance(segments, editing.EncodedSegments):
        return Response(answer, headers={"ETag": answer["etag"]})
    rest = json.dumps({k: v for k, v in answer.items() if k != "segments"}, ensure_ascii=False, separators=(",", ":"))
    body = '{"segments":' + segments.json() + ("," + rest[1:] if len(rest) > 2 else "}")
    # as DRF's JSONRenderer: the two line separators JavaScript reads as line ends are escaped
    body = body.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return HttpResponse(body.encode(), content_type="application/json", headers={"ETag": answer["etag"]})


_VOICES = (
    "An extension of this server, not in the v1 contract. An enrolled voice names the speaker who sounds like it "
    "in every later job of the account (others keep `Speaker N`); it never names a speaker of another account. "
    "Only the voice's embedding is kept, never the sample's audio: it is personal data, kept until the voice "
    "or the account is deleted."
)


class VoiceViewSet(ContractViewSet):
    @extend_schema(
        operation_id="create_voice",
        summary="Enrol a voice from a sample (extension)",
        description=_VOICES + " The sample at `url` (or an upload of the account, by `upload_id`) must be 10 to 120 "
        "seconds of that one person speaking; it is "
        "fetched and read like a job and charged as a transcript of the sample (1× its length; refunded if it "
        "fails). The answer comes at once with `state` `processing`; list the voices to see it `ready`, or "
        "`failed` with the reason in `error` (a sample with two voices, too short or too long, not fetched). "
        "Counts as a job request.",
        request=s.VoiceRequestSerializer,
        responses={200: s.QueuedVoiceSerializer},
        examples=[_example("Alice's voice", {"name": "Alice", "url": "https://videos.example.com/alice-intro.mp4"})],
        extensions={"x-extension": True},
    )
    def create(self, request):
        return perform(request, operations.create_voice, lambda: body(request))

    @extend_schema(
        operation_id="list_voices",
        summary="The account's enrolled voices (extension)",
        description=_VOICES + " Oldest first. Counts as a poll.",
        responses={200: s.VoiceSerializer(many=True)},
        extensions={"x-extension": True},
    )
    def list(self, request):
        return perform(request, operations.list_voices)

    @extend_schema(
        operation_id="delete_voice",
        summary="Forget an enrolled voice (extension)",
        description="An extension of this server. Deletes the voice and its embedding; a sample still being read "
        "is stopped and refunded. Names it gave earlier jobs stay until renamed. Counts as a job request.",
        parameters=[_id_parameter("voice")],
        responses={204: None},
        extensions={"x-extension": True},
    )
    def destroy(self, request, id: str):
        front_door.perform(request.caller, operations.delete_voice, {"id": id}, request)
        return Response(status=204)


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
        return perform(request, operations.transcribe_playlist, lambda: body(request))

    @extend_schema(
        operation_id="get_batch",
        summary="Poll every job of a batch",
        description="Every job the batch queued, in queue order, as `GET /v1/api/transcription/{id}` shows it "
        "but without the text results (read each job by id for them). Counts as one poll.",
        parameters=[_id_parameter("batch")],
        responses={200: s.BatchStatusSerializer},
    )
    def retrieve(self, request, id: str):
        return perform(request, operations.get_batch, {"id": id})


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
        return perform(request, operations.preview_playlist, query(s.PlaylistQuerySerializer, request))
