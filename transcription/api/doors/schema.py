"""OpenAPI 3.1 as the contract describes it: the bearer scheme, and 401/422/429 (plus 404 on the
by-id reads) on every operation with the contract's error schemas; the contract's enumeration
names (settings.SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]); the languages the server takes as
components; and a description that says what a client must know before its first call (prices
from billing.pricing, the error model, polling), built from the values the server enforces."""

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

from billing import pricing
from transcription.api.wire import serializers as s
from transcription.pipeline.burn import QUALITY_HEIGHT
from transcription.pipeline.recognition.languages import speech_language_codes, target_language_names


class ContractAutoSchema(AutoSchema):
    def _get_request_for_media_type(self, serializer, direction="request"):
        # the only PATCH (a transcript's edits) sends a whole body of edits, not part of a
        # resource: its fields stay required, as the view enforces (not drf-spectacular's "Patched…")
        if self.method != "PATCH":
            return super()._get_request_for_media_type(serializer, direction)
        self.method = "PUT"
        try:
            return super()._get_request_for_media_type(serializer, direction)
        finally:
            self.method = "PATCH"

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        error = self._get_response_for_code(s.ErrorResponseSerializer, "401")
        responses.setdefault("401", {**error, "description": "Token missing, malformed or revoked"})
        responses.setdefault(
            "422",
            {**self._get_response_for_code(s.HTTPValidationErrorSerializer, "422"), "description": "Validation Error"},
        )
        responses.setdefault(
            "429",
            {**self._get_response_for_code(s.ErrorResponseSerializer, "429"), "description": "Rate limit exceeded"},
        )
        if self.method == "POST" or self.path.endswith("/playlist"):
            responses.setdefault(
                "503",
                {
                    **self._get_response_for_code(s.ErrorResponseSerializer, "503"),
                    "description": "Unavailable for a moment (the job queue is unreachable, or too many playlists "
                    "are being listed): nothing was queued; try again after `Retry-After` seconds",
                },
            )
        if self.method == "POST" and self.path.endswith(("/transcribe", "/subtitles", "/burn-subtitles", "/voices")):
            responses.setdefault(
                "404",
                {
                    **self._get_response_for_code(s.ErrorResponseSerializer, "404"),
                    "description": "No upload with that `upload_id` on your account",
                },
            )
        if "{id}" in self.path:
            responses.setdefault(
                "404", {**self._get_response_for_code(s.ErrorResponseSerializer, "404"), "description": "Not found"}
            )
        return responses

    def get_tags(self):
        return ["v1"]


class BearerScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.BearerTokenAuthentication"
    name = "HTTPBearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "The account's API token (create it on the account's API page): "
            "`Authorization: Bearer <token>`.",
        }


def _times(multiplier: int) -> str:
    return f"{multiplier}×"


def description() -> str:
    quality_names = {"default": "`default`", "hd": "`hd`", "uhd": "`uhd`"}
    burned = ", ".join(
        f"{_times(pricing.base_multiplier('burned', q))} at {quality_names[q]} ({height}p)"
        for q, height in QUALITY_HEIGHT.items()
    )
    burned_translation = ", ".join(
        f"+{_times(pricing.translation_multiplier('burned', q))} at {quality_names[q]}" for q in QUALITY_HEIGHT
    )
    return f"""Turns the address of a public video, playlist or channel into a timestamped transcript with
speaker tags, SRT and WebVTT subtitles (optionally translated), or the video with the subtitles
burned in. Speech recognition runs on this server; nothing is copied from the site's captions.

## How a job goes
1. `POST` one of the queueing operations. The answer comes at once with the job's `id`.
2. Poll `GET /v1/api/transcription/{{id}}` **every 2 to 3 seconds** until `state` is `done` or
   `failed` (`progress` runs from 0 to 100 on the way). A job's answer is cached between changes,
   so polling is cheap; polling faster only spends your poll limit.
3. Read the result: `txt` for a transcript, `srt` and `webvtt` for subtitles, `burned_video_url`
   for a burned video (a signed link, valid for {settings.ARTIFACT_LINK_SECONDS // 86400} days), and
   each entry of `translations`.

A file instead of a link (our extension): send it to `POST /v1/api/uploads` (the whole file as
multipart `file` or as the raw body; or resumably with the tus 1.0 protocol, which tus-js-client,
Uppy and tuspy speak, at the same address), up to {settings.UPLOAD_MAX_BYTES // 1024**2} MB. The answer's
`id` goes in `upload_id` in place of `url`; `GET /v1/api/uploads/{{id}}` shows the upload. An upload is
kept {settings.UPLOAD_RETENTION_HOURS} hours after its last use. `prompt` (our extension too) gives the
recogniser names, jargon and spellings to prefer.

A playlist or channel is queued as a batch of jobs: `GET /v1/api/playlist` says first what it would
cost, `POST /v1/api/transcribe-playlist` queues it, `GET /v1/api/batch/{{id}}` polls every job at once.

## Prices
Jobs are paid in minutes of the video's length (rounded up to the second), from the account's
balance; every account starts with {settings.FREE_MINUTES} free minutes.

| What | Costs |
|---|---|
| transcript | {_times(pricing.base_multiplier("transcript"))} the video's length |
| subtitles | {_times(pricing.base_multiplier("subtitles"))} the video's length |
| each translated language of a subtitles job | +{_times(pricing.translation_multiplier("subtitles"))} |
| video with burned-in subtitles | {burned} |
| each translated language of a burned job (a translation and one more video) | {burned_translation} |
| a playlist or channel | the sum over its queued videos |

The charge is made when the video's length is known. When the balance covers only part of a
video, the job processes the first whole minutes it covers and ends `done` with `is_preview: true`
and `preview_minutes`; with less than a minute's worth it ends `failed`, saying what was needed.
A job that fails is refunded, and so is a translation that cannot be made.

## Errors
Every error body has the key `detail`. Authentication is checked first, then the rate limit, then
the request.

| Status | When | Body |
|---|---|---|
| 401 | token missing, malformed or revoked (header `WWW-Authenticate: Bearer`) | `ErrorResponse` |
| 404 | no job, batch or voice with that id on your account | `ErrorResponse` |
| 422 | the request does not validate: one entry per offending field, `loc` names it | `HTTPValidationError` |
| 429 | rate limit exceeded (headers `Retry-After`, `X-RateLimit-Limit`, `X-RateLimit-Remaining`) | `ErrorResponse` |
| 503 | the four POSTs and the playlist preview, for a moment: the job queue is unreachable, or too many playlists are being listed; nothing was queued or charged (header `Retry-After`) | `ErrorResponse` |

A video that cannot be fetched (a private or deleted video, a host that does not answer) or a
balance with no minutes left is **not** an HTTP error: the POST answers 200 with an id, and the
job ends `failed` with a readable `error`. A failed translation carries its own `error`.

## Limits
{settings.RATE_LIMIT_JOBS_PER_MINUTE} job requests (the four POSTs) and {settings.RATE_LIMIT_POLLS_PER_MINUTE}
polls (the three GETs) per minute per account, shared with the website and the MCP server; every
answer carries `X-RateLimit-Limit` and `X-RateLimit-Remaining`. Up to 10 target languages per
request, {settings.PLAYLIST_MAX_VIDEOS} videos per batch, videos up to {settings.MAX_VIDEO_SECONDS // 3600} hours.

## Extensions of this server
Operations marked `x-extension` are additions to the v1 contract; nothing of the contract changes
with them. Speakers' names: `POST /v1/api/transcription/{{id}}/speakers` calls a job's `Speaker N`
by a name in `txt` and in the WebVTT voice spans (`<v Alice>`). Enrolled voices: `POST /v1/api/voices`
reads a 10 to 120 second sample of one person (charged as a transcript of it), and later jobs of the
account name the speaker who sounds like it; `GET /v1/api/voices` lists them, `DELETE
/v1/api/voices/{{id}}` forgets one. Only a voice's embedding is kept, never the sample: it is personal
data, kept per account until the voice or the account is deleted.
"""


def finish_document(result, generator, request, public):
    """Postprocessing hook: the language lists as components and the document's description."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["LanguageCode"] = {
        "type": "string",
        "enum": speech_language_codes(),
        "description": "A language the speech model knows, by its ISO 639-1 code (ISO 639-3 where it has none). "
        "Its ISO 639-3 code (`spa`), upper case and BCP 47 tags (`en-US`) are read too.",
    }
    schemas["LanguageName"] = {
        "type": "string",
        "enum": target_language_names(),
        "description": "A language by its English name. Its ISO 639-1 or 639-3 code (`es`, `spa`), any case, "
        "and the names of other languages are read too. Whether this server can translate into it shows in "
        "the translation's own state: a pair it cannot serve fails that translation alone, refunded.",
    }
    # Translations only for subtitles and burned videos (type defaults to transcript).
    schemas["TranscribePlaylistRequest"]["if"] = {
        "anyOf": [
            {"not": {"required": ["type"]}},
            {"required": ["type"], "properties": {"type": {"const": "transcript"}}},
        ]
    }
    schemas["TranscribePlaylistRequest"]["then"] = {
        "properties": {"target_languages": {"anyOf": [{"type": "null"}, {"type": "array", "maxItems": 0}]}}
    }
    # Our extension: a job of an uploaded file names it by `upload_id`, in place of `url`.
    for name in ("TranscribeRequest", "SubtitlesRequest", "BurnSubtitlesRequest", "VoiceRequest"):
        schemas[name]["oneOf"] = [{"required": ["url"]}, {"required": ["upload_id"]}]
    for path in ("/v1/api/transcribe", "/v1/api/subtitles", "/v1/api/burn-subtitles"):
        result["paths"][path]["post"]["requestBody"]["required"] = True  # no field alone is required now
    result["info"]["description"] = description()
    return result
