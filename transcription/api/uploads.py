"""Uploads: files sent to us instead of links, at /v1/api/uploads (config/asgi.py routes them here,
before Django). An ASGI app: the body is read in the event loop, written by a worker thread, and
never held in memory nor holding a thread while a slow client sends it (bodies.py); the short
checks (the token, the limits, the rows) run in the database threads.

Two ways in, one resource:
- `POST /v1/api/uploads` with the whole file: multipart/form-data (the part named `file`) or the
  raw bytes (any other Content-Type; the name from `Content-Disposition` or `?filename=`). Answers
  201 with the upload, ready, once ffprobe has found audio in it; 422 on `file` otherwise.
- tus 1.0 (creation, creation-with-upload, termination): `POST` with `Tus-Resumable` and
  `Upload-Length` creates it (201, `Location` /v1/api/uploads/{id}); `HEAD` says how much arrived;
  `PATCH` appends; `DELETE` forgets it. A dropped connection keeps every byte that arrived, so the
  client resumes from `Upload-Offset` (tus-js-client, Uppy, tuspy). The last PATCH is checked
  with ffprobe like a plain upload.

`GET /v1/api/uploads/{id}` shows one. Creating an upload counts as a job request, the other calls as
polls. Another account's upload is a 404. No upload is larger than UPLOAD_MAX_BYTES (a JSON 413).
Jobs name a ready upload by `upload_id` (operations.with_upload).
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import json
import logging
import re
import uuid
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs

import anyio
from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone
from rest_framework import exceptions

from accounts.authentication import BearerTokenAuthentication
from accounts.models import Account
from transcription import files, services, states
from transcription.models import Job, Upload, UploadState
from transcription.pipeline.media_probe import NotMedia, probe_media

from . import ratelimit
from .bodies import BodyTooLarge, ClientGone, FileSink, MalformedBody, read_multipart, read_raw
from .mcp_server import database_threads

logger = logging.getLogger(__name__)

UPLOADS_PATH = "/v1/api/uploads"
TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,creation-with-upload,termination"
TUS_CONTENT_TYPE = "application/offset+octet-stream"
PROBE_TIMEOUT_SECONDS = 60


class Answer(Exception):
    """An answer that ends the request: `status`, a JSON body, extra headers."""

    def __init__(self, status: int, body: dict | None = None, headers: dict | None = None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, dict(headers or {})


def detail(status: int, message: str, headers: dict | None = None) -> Answer:
    return Answer(status, {"detail": message}, headers)


def invalid(field: str, message: str, kind: str = "value_error", location: str = "body") -> Answer:
    """A 422 on one field, in the contract's shape."""
    return Answer(422, {"detail": [{"loc": [location, field], "msg": message, "type": kind}]})


def too_large() -> Answer:
    gigabytes = settings.UPLOAD_MAX_BYTES / 1024**3
    size = f"{gigabytes:.1f} GB" if gigabytes >= 1 else f"{settings.UPLOAD_MAX_BYTES / 1024**2:.1f} MB"
    return detail(413, f"The file is larger than {size}, the most one upload may carry.")


# --- Who calls ------------------------------------------------------------------------------------


def authenticated_account_id(headers: dict, address: str):
    """The account behind the bearer token; an Answer 401 (or 429 for an address that keeps
    sending bad tokens) otherwise."""
    close_old_connections()
    try:
        request = SimpleNamespace(
            headers={"authorization": headers["authorization"]} if "authorization" in headers else {}
        )
        result = BearerTokenAuthentication().authenticate(request)
        if result is None:
            raise exceptions.NotAuthenticated("Missing API token: send 'Authorization: Bearer <token>'.")
        return result[0].pk
    except exceptions.APIException as error:
        state = ratelimit.hit_address(address)
        if not state.allowed:
            raise detail(
                429, f"Too many requests; try again in {state.retry_after} seconds.", _limit_headers(state)
            ) from None
        raise detail(401, str(error.detail), {"WWW-Authenticate": "Bearer"}) from None
    finally:
        close_old_connections()


def _limit_headers(state: ratelimit.RateState) -> dict:
    headers = {"X-RateLimit-Limit": str(state.limit), "X-RateLimit-Remaining": str(state.remaining)}
    if not state.allowed:
        headers["Retry-After"] = str(state.retry_after)
    return headers


def count(account_id, bucket: str) -> dict:
    """Count the call; its rate-limit headers, or an Answer 429."""
    state = ratelimit.hit(account_id, bucket)
    if not state.allowed:
        raise detail(429, f"Rate limit exceeded; try again in {state.retry_after} seconds.", _limit_headers(state))
    return _limit_headers(state)


# --- Rows and files (database threads) -----------------------------------------------------------


def document(upload: Upload) -> dict:
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


def _owned(account_id, upload_id) -> Upload:
    upload = Upload.objects.filter(pk=upload_id, account_id=account_id).first()
    if upload is None:
        raise detail(404, "No upload with that id on this account.")
    return upload


def _create(account_id, size: int, filename: str) -> Upload:
    return services.upload_create(Account(pk=account_id), size=size, filename=filename)


def finish(upload_id, path: Path, field: str = "file") -> Upload:
    """A whole upload: checked with ffprobe, moved into storage and marked ready; deleted with a
    422 on `field` when it is not media we can transcribe."""
    try:
        summary = probe_media(path, timeout=PROBE_TIMEOUT_SECONDS)
        if summary.duration > settings.MAX_VIDEO_SECONDS:
            hours = settings.MAX_VIDEO_SECONDS / 3600
            raise NotMedia(f"The file is {summary.duration / 3600:.1f} hours long; the most is {hours:g} hours.")
    except NotMedia as error:
        services.upload_delete(upload_id)
        raise invalid(field, str(error)) from None
    size = path.stat().st_size
    files.store_moving(path, files.upload_name(upload_id))
    return services.upload_ready(upload_id, size=size, duration=summary.duration, has_video=summary.has_video)


def _delete(account_id, upload_id) -> None:
    upload = _owned(account_id, upload_id)
    if Job.objects.filter(upload=upload).exclude(state__in=states.FINAL_STATES).exists():
        raise detail(409, "A job that reads this upload is still running; delete it once the job has ended.")
    services.upload_delete(upload.id)


async def db(function, *args):
    """Run `function` in a database thread, with fresh connections around it."""

    def run():
        close_old_connections()
        try:
            return function(*args)
        finally:
            close_old_connections()

    return await anyio.to_thread.run_sync(run, limiter=database_threads())


# --- The ASGI app ----------------------------------------------------------------------------------


async def application(scope, receive, send):
    headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
    tus = {"Tus-Resumable": TUS_VERSION}
    try:
        status, body, answer_headers = await _route(scope, receive, headers)
    except Answer as answer:
        status, body, answer_headers = answer.status, answer.body, answer.headers
    if "tus-resumable" in headers or scope["method"] == "OPTIONS":
        answer_headers = {**tus, **answer_headers}
    await _send(send, status, body, answer_headers, head=scope["method"] == "HEAD")


async def _route(scope, receive, headers):
    method = scope["method"]
    rest = scope["path"][len(UPLOADS_PATH) :].strip("/")
    if method == "OPTIONS":  # tus discovery needs no token
        return (
            204,
            None,
            {
                "Tus-Version": TUS_VERSION,
                "Tus-Extension": TUS_EXTENSIONS,
                "Tus-Max-Size": str(settings.UPLOAD_MAX_BYTES),
            },
        )
    address = (scope.get("client") or ("unknown", 0))[0]
    account_id = await db(authenticated_account_id, headers, address)
    if not rest:
        if method != "POST":
            raise detail(405, f"Method {method} not allowed here.", {"Allow": "POST, OPTIONS"})
        limits = await db(count, account_id, ratelimit.JOBS)
        if "tus-resumable" in headers:
            status, body, extra = await _tus_create(scope, receive, headers, account_id)
        else:
            status, body, extra = await _plain_upload(scope, receive, headers, account_id)
        return status, body, {**limits, **extra}
    try:
        upload_id = uuid.UUID(rest)
    except ValueError:
        raise invalid("id", "Input should be a valid UUID.", "uuid_parsing", "path") from None
    if method not in ("GET", "HEAD", "PATCH", "DELETE"):
        raise detail(405, f"Method {method} not allowed here.", {"Allow": "GET, HEAD, PATCH, DELETE, OPTIONS"})
    limits = await db(count, account_id, ratelimit.POLLS)
    upload = await db(_owned, account_id, upload_id)
    if method == "GET":
        return 200, document(upload), limits
    _check_tus_version(headers)
    if method == "HEAD":
        return 200, None, {**limits, **_offset_headers(upload), "Cache-Control": "no-store"}
    if method == "DELETE":
        await db(_delete, account_id, upload_id)
        return 204, None, limits
    status, body, extra = await _patch(receive, headers, upload)
    return status, body, {**limits, **extra}


def _check_tus_version(headers: dict) -> None:
    if headers.get("tus-resumable") != TUS_VERSION:
        raise detail(
            412,
            f"This server speaks tus {TUS_VERSION}: send 'Tus-Resumable: {TUS_VERSION}'.",
            {"Tus-Version": TUS_VERSION},
        )


def _offset_headers(upload: Upload) -> dict:
    if upload.state == UploadState.READY:
        offset = upload.size
    else:
        path = files.incoming_path(upload.id)
        offset = path.stat().st_size if path.exists() else 0
    return {"Upload-Offset": str(offset), "Upload-Length": str(upload.size)}


def _declared_length(headers: dict, name: str) -> int | None:
    value = headers.get(name)
    if value is None:
        return None
    if not value.isdigit():
        raise detail(400, f"{name} must be a whole number of bytes.")
    return int(value)


def _metadata(value: str) -> dict:
    """tus Upload-Metadata: 'key base64value,key2 base64value2'."""
    metadata = {}
    for pair in filter(None, (item.strip() for item in value.split(","))):
        key, _, encoded = pair.partition(" ")
        try:
            metadata[key] = base64.b64decode(encoded, validate=True).decode("utf-8", "replace") if encoded else ""
        except (binascii.Error, ValueError):
            raise detail(400, f"Upload-Metadata: the value of {key!r} is not base64.") from None
    return metadata


def _location(scope, headers, upload_id) -> str:
    proxied = settings.TRUST_PROXY_HEADERS
    scheme = headers.get("x-forwarded-proto") if proxied else None
    host = (headers.get("x-forwarded-host") if proxied else None) or headers.get("host")
    host = host or settings.PUBLIC_BASE_URL.split("://", 1)[-1]
    return f"{scheme or scope.get('scheme', 'http')}://{host}{UPLOADS_PATH}/{upload_id}"


async def _tus_create(scope, receive, headers, account_id):
    _check_tus_version(headers)
    if "upload-defer-length" in headers:
        raise detail(400, "Send Upload-Length: this server does not take uploads of unknown length.")
    size = _declared_length(headers, "upload-length")
    if size is None:
        raise detail(400, "A tus creation needs Upload-Length.")
    if size > settings.UPLOAD_MAX_BYTES:
        raise too_large()
    metadata = _metadata(headers.get("upload-metadata", ""))
    filename = metadata.get("filename") or metadata.get("name") or ""
    upload = await db(_create, account_id, size, filename)
    location = {"Location": _location(scope, headers, upload.id)}
    if headers.get("content-type") == TUS_CONTENT_TYPE:  # creation-with-upload: the first bytes too
        headers = {**headers, "upload-offset": "0"}
        status, body, extra = await _patch(receive, headers, upload)
        return 201, body, {**extra, **location}
    return 201, None, location


async def _patch(receive, headers, upload: Upload):
    _check_tus_version(headers)
    if headers.get("content-type") != TUS_CONTENT_TYPE:
        raise detail(415, f"A PATCH carries Content-Type: {TUS_CONTENT_TYPE}.")
    offset = _declared_length(headers, "upload-offset")
    if offset is None:
        raise detail(400, "A PATCH needs Upload-Offset.")
    if upload.state == UploadState.READY:
        raise detail(409, "The upload is already complete.", {"Upload-Offset": str(upload.size)})
    path = files.incoming_path(upload.id)
    sink = FileSink(path, limit=upload.size)
    try:
        try:
            fcntl.flock(sink.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise detail(423, "Another request is writing this upload; try again when it has ended.") from None
        if offset != sink.written:
            raise detail(
                409,
                f"Upload-Offset is {offset}, but {sink.written} bytes are stored.",
                {"Upload-Offset": str(sink.written)},
            )
        try:
            await read_raw(receive, sink)
        except BodyTooLarge:
            raise detail(
                413, f"The upload was announced as {upload.size} bytes; this PATCH goes past its end."
            ) from None
        except ClientGone:
            pass  # what arrived is kept (sink.close writes it): the client resumes from there
    finally:
        await sink.close()
    received = path.stat().st_size if path.exists() else 0
    await db(services.upload_received, upload.id, received)
    if received == upload.size:
        upload = await db(finish, upload.id, path)
        return 204, None, {"Upload-Offset": str(received), "X-Upload-State": upload.state}
    return 204, None, {"Upload-Offset": str(received)}


_FILENAME = re.compile(r"""filename\*?=(?:UTF-8''|")?([^";]+)""", re.IGNORECASE)


async def _plain_upload(scope, receive, headers, account_id):
    """The whole file in one POST: multipart (its part `file`) or the raw bytes."""
    size = _declared_length(headers, "content-length")
    content_type = headers.get("content-type", "")
    multipart = content_type.lower().startswith("multipart/form-data")
    if size is not None and size > settings.UPLOAD_MAX_BYTES + (64 * 1024 if multipart else 0):
        raise too_large()
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    named = _FILENAME.search(headers.get("content-disposition", ""))
    filename = (query.get("filename") or [""])[-1] or (named.group(1) if named else "")
    upload = await db(_create, account_id, size or 0, filename)
    path = files.incoming_path(upload.id)
    sink = FileSink(path, limit=settings.UPLOAD_MAX_BYTES)
    kept = False
    try:
        try:
            if multipart:
                _fields, filename = await read_multipart(receive, content_type, sink)
                if filename is None:
                    raise invalid(
                        "file", "This field is required: send the file as the form part named 'file'.", "missing"
                    )
            else:
                await read_raw(receive, sink)
        finally:
            await sink.close()
        if sink.written == 0:
            raise invalid("file", "The file is empty.")
        if multipart and filename:
            await db(_rename, upload.id, filename)
        ready = await db(finish, upload.id, path)
        kept = True
        return 201, document(ready), {"Location": _location(scope, headers, upload.id)}
    except BodyTooLarge:
        raise too_large() from None
    except MalformedBody as error:
        raise invalid("file", str(error)) from None
    except ClientGone:
        return 400, {"detail": "The connection ended before the file did."}, {}
    finally:
        if not kept:
            await db(services.upload_delete, upload.id)


def _rename(upload_id, filename: str) -> None:
    Upload.objects.filter(pk=upload_id).update(filename=filename[:255], updated_at=timezone.now())


async def _send(send, status: int, body: dict | None, headers: dict, head: bool = False) -> None:
    raw = b"" if body is None else json.dumps(body).encode()
    pairs = [
        (name.lower().encode("latin-1"), str(value).encode("latin-1", "replace")) for name, value in headers.items()
    ]
    if body is not None:
        pairs.append((b"content-type", b"application/json"))
    if status != 204:
        pairs.append((b"content-length", str(len(raw)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": pairs})
    await send({"type": "http.response.body", "body": b"" if head else raw})
