"""OpenAI's speech API on our jobs: `POST /v1/audio/transcriptions`, `POST /v1/audio/translations`
(to English) and `GET /v1/models`, so the official SDKs and the tools built on them (Open WebUI,
LangChain, editor plugins) work unchanged. config/asgi.py routes them here, before Django.

An adapter of the front door, like every door: the Caller from the bearer token, the count (a
request is a job request, `/v1/models` a poll), the protections of every path, then a job made by
`create_subtitles` as the REST API makes it: charged, limited, listed, announced to webhooks like
any other. The multipart body streams to an upload (uploads.py: never in memory, ffprobe checks it);
a `url` field instead of `file` (our extension) names a video as the native API does.

The answer waits for the job in the event loop (`wait_for_end`: Redis pub/sub from the services,
with a look at the row every few seconds), holding no thread; the job's id is in the `X-Job-Id`
header of every answer after it was made, so a client that went away reads it with
`GET /v1/api/transcription/{id}`. A wait past OPENAI_WAIT_TIMEOUT_SECONDS ends with an error that
names the job. Errors are OpenAI's shape (`{"error": {"message", "type", "param", "code"}}`) with
OpenAI's statuses, so the SDKs raise the right exception: 400 for a bad request (every bad field
named), 401, 404, 413, 429 `rate_limit_exceeded` with the limit headers of every door, and 429
`insufficient_quota` for an empty balance.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

import redis.asyncio as aioredis
from django.conf import settings
from rest_framework import serializers

from config import shared_cache
from transcription.api.doors import asgi_door
from transcription.api.doors.bodies import BodyTooLarge, ClientGone, FileSink, MalformedBody, read_multipart
from transcription.api.doors.uploads import (
    create_upload,
    db,
    declared_length,
    door_prelude,
    past_the_room,
    reserved,
    too_large_message,
    upload_caller,
)
from transcription.api.front import front_door, operations, ratelimit
from transcription.api.wire.error_bodies import openai_server_error
from transcription.api.wire.fields import LanguageCodeField, StrictChoiceField, UrlField
from transcription.job_options import PROMPT_MAX_LENGTH, openai_options
from transcription.models import FailureReason, Job, JobSegments
from transcription.pipeline.recognition.languages import UnknownLanguage, language_label
from transcription.pipeline.transcripts import captions
from transcription.pipeline.transcripts.speaker_names import name_webvtt
from transcription.storage import files
from transcription.writes import services

logger = logging.getLogger(__name__)

AUDIO_PATH = "/v1/audio/"
MODELS_PATH = "/v1/models"
PATHS = (AUDIO_PATH, MODELS_PATH)  # what config/asgi.py sends here
JOB_HEADER = "X-Job-Id"
# A look at the job's row this often while waiting, in case an announcement was lost.
RECHECK_SECONDS = 5.0
MODEL_CREATED = 1677610602  # what OpenAI says of whisper-1; the SDK only needs an integer

FORMATS = ("json", "text", "srt", "verbose_json", "vtt", "diarized_json")


def model_names() -> list[str]:
    """The names /v1/models lists and the endpoints accept: OpenAI's `whisper-1`, and the model
    this server runs under its own name (WHISPER_MODEL). Either way the same model runs."""
    names = ["whisper-1", str(settings.WHISPER_MODEL)]
    return list(dict.fromkeys(names))


# --- Request ---------------------------------------------------------------------------------------


class TranscriptionForm(serializers.Serializer):
    """OpenAI's fields, as multipart sends them (strings), plus `url` (our extension)."""

    model = serializers.CharField()
    language = LanguageCodeField()
    prompt = serializers.CharField(required=False, default="", allow_blank=True, max_length=PROMPT_MAX_LENGTH)
    response_format = StrictChoiceField(choices=FORMATS, required=False, default="json")
    temperature = serializers.FloatField(required=False, default=0.0, min_value=0.0, max_value=1.0)
    timestamp_granularities = serializers.ListField(
        child=StrictChoiceField(choices=("segment", "word")), required=False, default=list
    )
    url = UrlField(required=False)

    def validate_model(self, value):
        if value not in model_names():
            names = ", ".join(f"'{name}'" for name in model_names())
            raise serializers.ValidationError(f"Input should be one of: {names} (GET /v1/models lists them).")
        return value

    def validate(self, attrs):
        if "word" in attrs["timestamp_granularities"] and attrs["response_format"] != "verbose_json":
            raise serializers.ValidationError(
                {
                    "timestamp_granularities": serializers.ErrorDetail(
                        "timestamp_granularities[] needs response_format 'verbose_json'.", code="not_allowed"
                    )
                }
            )
        return attrs


class TranslationForm(TranscriptionForm):
    """Translations take no `language`: the speech is put into English whatever it is."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["language"]


def form_data(fields: dict[str, list[str]]) -> dict[str, str | list[str]]:
    """Multipart fields as the serializer reads them: one value each, the list ones as lists."""
    data: dict[str, str | list[str]] = {name: values[-1] for name, values in fields.items() if not name.endswith("[]")}
    granularities = fields.get("timestamp_granularities[]") or fields.get("timestamp_granularities")
    if granularities:
        data["timestamp_granularities"] = granularities
    return data


# --- Errors in OpenAI's shape ------------------------------------------------------------------------


class OpenAIError(Exception):
    def __init__(self, status: int, message: str, type_: str, code: str | None = None, param=None, headers=None):
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = status, message, type_, code, param
        self.headers = dict(headers or {})

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def as_openai(error: Exception) -> OpenAIError | None:
    """A refusal of the front door (or of this door) in OpenAI's terms; None for a bug."""
    if isinstance(error, OpenAIError):
        return error
    answer = front_door.error_answer(error)
    if answer is None:
        return None
    if answer.status == 422:
        entries = answer.body["detail"]
        fields = [".".join(str(part) for part in entry["loc"][1:]) or "body" for entry in entries]
        message = "; ".join(f"{field}: {entry['msg']}" for field, entry in zip(fields, entries, strict=True))
        return OpenAIError(400, message, "invalid_request_error", "invalid_value", fields[0] if fields else None)
    message = str(answer.body["detail"])
    if answer.status == 401:
        return OpenAIError(401, message, "invalid_request_error", "invalid_api_key", headers=answer.headers)
    if answer.status == 429:
        return OpenAIError(429, message, "requests", "rate_limit_exceeded", headers=answer.headers)
    if answer.status == 404:
        return OpenAIError(404, message, "invalid_request_error", "not_found", headers=answer.headers)
    if answer.status == 413:
        return OpenAIError(413, message, "invalid_request_error", "file_too_large", "file", answer.headers)
    if answer.status == 503:
        return OpenAIError(503, message, "server_error", "service_unavailable", headers=answer.headers)
    return OpenAIError(answer.status, message, "invalid_request_error", headers=answer.headers)


# A job that ended without a result, in OpenAI's terms. Retrying would make another job: the SDKs
# are told not to (x-should-retry).
NO_RETRY = {"x-should-retry": "false"}


def failed_job(job: Job) -> OpenAIError:
    if job.failure_reason == FailureReason.BALANCE:
        message = f"You have no minutes left for this file: {job.error}"
        return OpenAIError(429, message, "insufficient_quota", "insufficient_quota", headers=NO_RETRY)
    if job.failure_reason in (FailureReason.SOURCE, FailureReason.MEDIA):
        return OpenAIError(400, job.error or "The file could not be read.", "invalid_request_error", "job_failed")
    return OpenAIError(500, job.error or "The job failed.", "server_error", "job_failed", headers=NO_RETRY)


# --- Waiting in the event loop --------------------------------------------------------------------


def _job_if_ended(job_id) -> Job | None:
    job = Job.objects.filter(pk=job_id).first()
    return job if job is None or job.state in ("done", "failed") else None


async def wait_for_end(job_id, timeout: float) -> Job | None:
    """The job once it has ended, or None after `timeout` seconds. Awaited in the event loop: a
    Redis subscription (the services announce every end, job_endings), the row read at the start
    and every RECHECK_SECONDS (a lost announcement, or no Redis at all)."""
    deadline = time.monotonic() + timeout
    pubsub = None
    client = shared_cache.subscriber(settings.REDIS_URL) if settings.REDIS_URL else None
    try:
        if client is not None:
            try:
                pubsub = client.pubsub()
                await pubsub.subscribe(f"job-ended:{job_id}")
            except aioredis.RedisError as error:
                logger.warning("waiting for job %s without Redis: %s", job_id, error)
                pubsub = None
        while True:
            job = await db(_job_if_ended, job_id)
            if job is not None:
                return job
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            pause = min(RECHECK_SECONDS, left)
            if pubsub is None:
                await asyncio.sleep(pause)
                continue
            try:
                await pubsub.get_message(ignore_subscribe_messages=True, timeout=pause)
            except aioredis.RedisError:
                pubsub = None
    finally:
        if pubsub is not None:
            with contextlib.suppress(aioredis.RedisError):
                await pubsub.aclose()
        if client is not None:
            with contextlib.suppress(aioredis.RedisError):
                await client.aclose()


# --- Answers ---------------------------------------------------------------------------------------


def _speaker_label(number: int) -> str:
    """Speakers as OpenAI's diarizing model names them: A, B, …, Z, AA, AB, …"""
    label = ""
    while number > 0:
        number, rest = divmod(number - 1, 26)
        label = chr(ord("A") + rest) + label
    return label


def _language_name(code: str) -> str:
    try:
        return language_label(code).lower()
    except (UnknownLanguage, KeyError, ValueError):
        return code


def _segments_of_cues(cues: list[dict] | None) -> list[dict]:
    """A translation's segments: its cues as kept with it (Translation.cues), never its SRT read back."""
    return [
        {
            "start": cue.start,
            "end": cue.end,
            "text": " ".join(cue.lines),
            "speaker": cue.speakers[0] if cue.speakers else 1,
            "words": [],
        }
        for cue in captions.from_records(cues)
    ]


def result_of(job: Job, translation: bool) -> dict:
    """What the answer is made of: segments (with words and speakers), text, language, duration."""
    kept = JobSegments.objects.filter(job=job).first()
    duration = float(job.duration or (kept.duration if kept else 0.0))
    if translation and job.detected_language != "en":
        done = job.translations.filter(state="done").first()
        if done is None:
            failed = job.translations.first()
            raise OpenAIError(
                400,
                (failed.error if failed else None) or "The speech could not be put into English.",
                "invalid_request_error",
                "translation_failed",
            )
        return {
            "segments": _segments_of_cues(done.cues),
            "srt": done.srt,
            "webvtt": done.webvtt,
            "language": "english",
            "duration": duration,
        }
    segments = kept.document() if kept else []  # a job of this door always keeps its segments
    return {
        "segments": segments,
        "srt": job.srt or "",
        # the voices named as every door shows them (enrolled voices the job recognised)
        "webvtt": name_webvtt(job.webvtt, job.speaker_names or {}) or "",
        "language": "english" if translation else _language_name(job.detected_language or job.language_code or ""),
        "duration": duration,
    }


def render(result: dict, response_format: str, granularities: list[str], translation: bool):
    """(content type, body) of the answer in `response_format`."""
    segments = result["segments"]
    text = " ".join(segment["text"] for segment in segments if segment["text"]).strip()
    usage = {"type": "duration", "seconds": result["duration"]}
    if response_format == "text":
        return "text/plain; charset=utf-8", text + "\n"
    if response_format == "srt":
        return "text/plain; charset=utf-8", result["srt"]
    if response_format == "vtt":
        return "text/plain; charset=utf-8", result["webvtt"]
    if response_format == "json":
        return "application/json", {"text": text, "usage": usage}
    if response_format == "diarized_json":
        return "application/json", {
            "task": "transcribe",
            "duration": result["duration"],
            "text": text,
            "segments": [
                {
                    "type": "transcript.text.segment",
                    "id": f"seg_{index:03d}",
                    "start": segment["start"],
                    "end": segment["end"],
                    "text": segment["text"],
                    "speaker": _speaker_label(segment.get("speaker") or 1),
                }
                for index, segment in enumerate(segments)
            ],
            "usage": usage,
        }
    verbose = {
        "task": "translate" if translation else "transcribe",
        "language": result["language"],
        "duration": result["duration"],
        "text": text,
        "segments": [
            {
                "id": index,
                "seek": 0,
                "start": segment["start"],
                "end": segment["end"],
                "text": segment["text"],
                "tokens": [],
                "temperature": 0.0,
                "avg_logprob": 0.0,
                "compression_ratio": 0.0,
                "no_speech_prob": 0.0,
                **({"audio_event": segment["audio_event"]} if segment.get("audio_event") else {}),  # a sound
            }
            # a voice heard only under another's words (an empty segment laid over theirs) is
            # diarized_json's alone: this format has no speakers
            for index, segment in enumerate(s for s in segments if s["text"] or s.get("words"))
        ],
        "usage": usage,
    }
    if "word" in granularities:
        verbose["words"] = [word for segment in segments for word in segment.get("words", [])]
        if "segment" not in granularities:
            del verbose["segments"]
    return "application/json", verbose


# --- The ASGI app ------------------------------------------------------------------------------


@asgi_door.guarded(openai_server_error)  # a bug: OpenAI's 500, naming the request id
async def application(scope, receive, send):
    prelude = await door_prelude(scope, send)
    if prelude is None:
        return
    request, protective = prelude
    caller, holder = None, {}
    try:
        caller = await db(upload_caller, request, front_door.OPENAI)
        path = scope["path"].rstrip("/")
        if path == MODELS_PATH or path.startswith(MODELS_PATH + "/"):
            status, content_type, body = await _models(scope, caller, path)
        elif path in (AUDIO_PATH + "transcriptions", AUDIO_PATH + "translations"):
            if scope["method"] != "POST":
                raise OpenAIError(405, f"Use POST for {path}.", "invalid_request_error", headers={"Allow": "POST"})
            status, content_type, body = await _speech(scope, receive, request, caller, path, holder)
        else:
            raise OpenAIError(404, f"No such endpoint: {path}.", "invalid_request_error", "unknown_url")
    except Exception as error:
        failure = as_openai(error)
        if failure is None:
            raise
        status, content_type, body = failure.status, "application/json", failure.body()
        extra = failure.headers
    else:
        extra = {}
    headers = {**front_door.rate_limit_headers(caller.rate if caller else None), **extra}
    if holder.get("job_id"):  # made before the answer failed: the client can still read it
        headers[JOB_HEADER] = str(holder["job_id"])
    await _send(send, status, content_type, body, headers, protective)


async def _models(scope, caller, path: str):
    if scope["method"] != "GET":
        raise OpenAIError(405, "Use GET for /v1/models.", "invalid_request_error", headers={"Allow": "GET"})
    await db(front_door.admit, caller, ratelimit.POLLS)
    owned_by = "this-server"
    cards = {
        name: {"id": name, "object": "model", "created": MODEL_CREATED, "owned_by": owned_by} for name in model_names()
    }
    if path == MODELS_PATH:
        return 200, "application/json", {"object": "list", "data": list(cards.values())}
    name = path[len(MODELS_PATH) + 1 :]
    if name not in cards:
        raise OpenAIError(
            404,
            f"The model '{name}' does not exist on this server.",
            "invalid_request_error",
            "model_not_found",
            "model",
        )
    return 200, "application/json", cards[name]


async def _speech(scope, receive, request, caller, path: str, holder: dict):
    """Stream the form, make the job, wait for it, answer it in the asked format."""
    translation = path.endswith("/translations")
    await db(front_door.admit, caller, ratelimit.JOBS)
    content_type = request.META.get("CONTENT_TYPE", "")
    if not content_type.lower().startswith("multipart/form-data"):
        raise OpenAIError(
            400, "Send the request as multipart/form-data, as OpenAI's API takes it.", "invalid_request_error"
        )
    length = declared_length(scope)
    if length and length > settings.UPLOAD_MAX_BYTES + 64 * 1024:
        raise _too_large()
    upload = await db(create_upload, caller, reserved(length), "")  # a 413 when the account's storage is full
    sink = FileSink(files.incoming_path(upload.id), limit=min(settings.UPLOAD_MAX_BYTES, upload.size))
    kept = False
    try:
        try:
            fields, filename = await read_multipart(receive, content_type, sink)
        finally:
            await sink.close()
        data = form_data(fields)
        options = operations.validate(TranslationForm if translation else TranscriptionForm, data)
        if filename is None and "url" not in options:
            raise OpenAIError(
                400,
                "file: This field is required (or `url`, our extension).",
                "invalid_request_error",
                "missing_file",
                "file",
            )
        if filename is not None and "url" in options:
            raise OpenAIError(
                400, "Send either file or url, not both.", "invalid_request_error", "invalid_value", "url"
            )
        job_request = {**openai_options(options), "format": "srt"}
        if translation:
            job_request["target_languages"] = ["en"]
        if filename is not None:
            if sink.written == 0:
                raise operations.upload_not_media("The file is empty.")
            await db(services.upload_name, upload.id, filename)
            await db(operations.finish_upload, upload.id, files.incoming_path(upload.id))
            kept = True
            job_request["upload_id"] = str(upload.id)
        else:
            job_request["url"] = options["url"]
        queued = await db(front_door.perform, caller, operations.create_subtitles, job_request)
    except BodyTooLarge:
        raise past_the_room(sink.limit) or _too_large() from None
    except MalformedBody as error:
        raise OpenAIError(400, str(error), "invalid_request_error", "invalid_multipart") from None
    except ClientGone:
        raise OpenAIError(400, "The connection ended before the request did.", "invalid_request_error") from None
    finally:
        if not kept:
            await db(services.upload_delete, upload.id)
    holder["job_id"] = queued["id"]
    job = await wait_for_end(queued["id"], settings.OPENAI_WAIT_TIMEOUT_SECONDS)
    if job is None:
        minutes = settings.OPENAI_WAIT_TIMEOUT_SECONDS / 60
        raise OpenAIError(
            504,
            f"Job {queued['id']} is still running after {minutes:g} minutes; it goes on. Read it with "
            f"GET /v1/api/transcription/{queued['id']} until its state is done.",
            "timeout",
            "job_still_running",
            headers=NO_RETRY,
        )
    if job.state == "failed":
        raise failed_job(job)
    result = await db(result_of, job, translation)
    content_type, body = render(result, options["response_format"], options["timestamp_granularities"], translation)
    return 200, content_type, body


def _too_large() -> OpenAIError:
    return OpenAIError(413, too_large_message(), "invalid_request_error", "file_too_large", "file")


async def _send(send, status: int, content_type: str, body, headers: dict, protective) -> None:
    raw = json.dumps(body).encode() if isinstance(body, dict) else str(body).encode()
    pairs = [(b"content-type", content_type.encode()), (b"content-length", str(len(raw)).encode())]
    pairs += [(name.lower().encode("latin-1"), str(value).encode("latin-1")) for name, value in headers.items()]
    present = {name for name, _ in pairs}
    pairs += [(name, value) for name, value in protective if name not in present]
    await send({"type": "http.response.start", "status": status, "headers": pairs})
    await send({"type": "http.response.body", "body": raw})
