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

`GET /v1/api/uploads/{id}` shows one. An adapter of the front door: the Caller from the bearer token
(or, for the website's job form, the signed-in session with its CSRF token), the protections every
path has, the limits (creating an upload counts as a job request, the other calls as polls), the
answers' shape; the rows and checks are operations (find_upload, finish_upload, get_upload,
delete_upload). Another account's upload is a 404. No upload is larger than UPLOAD_MAX_BYTES (a
JSON 413). Jobs name a ready upload by `upload_id` (operations.with_upload).
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import json
import logging
import re
from urllib.parse import parse_qs

import anyio
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.db import close_old_connections
from django.http import HttpResponse
from django.http.request import split_domain_port, validate_host
from django.middleware.csrf import CsrfViewMiddleware

from accounts import client as accounts_client
from transcription.api.doors import asgi_door
from transcription.api.doors.bodies import BodyTooLarge, ClientGone, FileSink, MalformedBody, read_multipart, read_raw
from transcription.api.doors.mcp_gate import database_threads
from transcription.api.front import front_door, operations, ratelimit
from transcription.api.wire.error_bodies import DoorRefusal, RequestValidationError
from transcription.models import Upload, UploadState
from transcription.storage import files, quota
from transcription.writes import services

logger = logging.getLogger(__name__)

UPLOADS_PATH = "/v1/api/uploads"
TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,creation-with-upload,termination"
TUS_CONTENT_TYPE = "application/offset+octet-stream"


def detail(status: int, message: str, headers: dict | None = None) -> DoorRefusal:
    """A refusal of this door's own (tus's statuses), answered as every refusal is."""
    return DoorRefusal(status, message, headers)


def too_large_message() -> str:
    gigabytes = settings.UPLOAD_MAX_BYTES / 1024**3
    size = f"{gigabytes:.1f} GB" if gigabytes >= 1 else f"{settings.UPLOAD_MAX_BYTES / 1024**2:.1f} MB"
    return f"The file is larger than {size}, the most one upload may carry."


def too_large() -> DoorRefusal:
    return detail(413, too_large_message())


# --- Who calls: a Caller of the front door ----------------------------------------------------


def upload_caller(request, transport: str = front_door.UPLOADS) -> front_door.Caller:
    """The bearer token's Caller; without an Authorization header, a signed-in person's (the
    website's job form), whose request must carry the CSRF token as Django's forms do."""
    address = ratelimit.client_address(request)
    if "HTTP_AUTHORIZATION" in request.META or settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return front_door.caller_from_token(request.META.get("HTTP_AUTHORIZATION"), address, transport)
    # Only their process_request runs: the answer they would wrap is never asked for.
    SessionMiddleware(lambda r: HttpResponse()).process_request(request)
    AuthenticationMiddleware(lambda r: HttpResponse()).process_request(request)
    caller = front_door.caller_from_session(request.user, address)
    if caller is None:
        return front_door.caller_from_token(None, address, transport)
    refusal = CsrfViewMiddleware(lambda r: HttpResponse()).process_view(request, lambda r: HttpResponse(), (), {})
    if refusal is not None:
        raise detail(403, "The form's CSRF token is missing or wrong; load the page again.")
    return caller


async def db(function, *args):
    """Run `function` in a database thread, with fresh connections around it."""

    def run():
        close_old_connections()
        try:
            return function(*args)
        finally:
            close_old_connections()

    return await anyio.to_thread.run_sync(run, limiter=database_threads())


def create_upload(caller: front_door.Caller, size: int | None, filename: str) -> Upload:
    """A new upload, or a 413 before any byte is written when the account's storage is full."""
    try:
        return services.upload_create(caller.account, size=size, filename=filename)
    except quota.StorageFull as full:
        raise detail(413, str(full)) from None


def reserved(length: int | None) -> int | None:
    """What an upload of a body of `length` bytes holds of its account's storage while it arrives:
    the body's length (a multipart body's is its file's and a little more), at most the largest
    upload, so a file just past that is told it is too large, not that the storage is full; None
    (the room left) for a body of unknown length."""
    return min(length, settings.UPLOAD_MAX_BYTES) if length else None


def past_the_room(limit: int) -> DoorRefusal | None:
    """The answer to a body that went past its sink's `limit`: the largest upload, or (a body of
    unknown length given the room its account had left) the storage quota."""
    if limit >= settings.UPLOAD_MAX_BYTES:
        return None
    return detail(
        413,
        f"Not enough storage: this upload went past the {quota.format_bytes(limit)} left to your "
        "account. Delete uploads you no longer need (DELETE /v1/api/uploads/{id}) or wait until they expire.",
    )


# --- The ASGI app ----------------------------------------------------------------------------------


async def door_prelude(scope, send):
    """What a door outside Django checks first: the Host, then the protections every path has (the
    HTTPS redirect, HSTS, the security headers; not the body limit of JSON requests, since a file
    is no JSON request). (the request as Django's middleware sees it, the protective headers to
    add to the answer), or None once a refusal was sent."""
    bare = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]}
    request = asgi_door.django_request(bare)
    refusal, protective = asgi_door.protections(request)
    if refusal is not None:
        await asgi_door.send_django_response(send, refusal)
        return None
    return request, protective


def declared_length(scope) -> int | None:
    """The request's Content-Length, or None (a chunked body)."""
    for name, value in scope.get("headers") or ():
        if name.lower() == b"content-length" and value.isdigit():
            return int(value)
    return None


@asgi_door.guarded()  # a bug: the 500 of every Django path, as is (the contract's {"detail"} shape)
async def application(scope, receive, send):
    """The door: door_prelude, the Caller, the count, then the route. Refusals of the front door in
    the contract's shape."""
    headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
    prelude = await door_prelude(scope, send)
    if prelude is None:
        return
    request, protective = prelude
    caller = None
    try:
        if scope["method"] == "OPTIONS":  # tus discovery needs no token
            status, body, answer_headers = 204, None, _discovery()
        else:
            caller = await db(upload_caller, request)
            status, body, answer_headers = await _route(scope, receive, headers, caller)
    except Exception as error:  # a refusal (APIException, the file store down) answers; anything else is a bug
        refusal = front_door.error_answer(error)
        if refusal is None:
            raise
        status, body, answer_headers = refusal.status, refusal.body, refusal.headers
    rate = front_door.rate_limit_headers(caller.rate if caller else None)
    answer_headers = {**rate, **answer_headers}
    if "tus-resumable" in headers or scope["method"] == "OPTIONS":
        answer_headers = {"Tus-Resumable": TUS_VERSION, **answer_headers}
    await _send(send, status, body, answer_headers, protective, head=scope["method"] == "HEAD")


def _discovery() -> dict:
    return {
        "Tus-Version": TUS_VERSION,
        "Tus-Extension": TUS_EXTENSIONS,
        "Tus-Max-Size": str(settings.UPLOAD_MAX_BYTES),
    }


async def _route(scope, receive, headers, caller: front_door.Caller):
    method = scope["method"]
    rest = scope["path"][len(UPLOADS_PATH) :].strip("/")
    if not rest:
        if method != "POST":
            raise detail(405, f"Method {method} not allowed here.", {"Allow": "POST, OPTIONS"})
        await db(front_door.admit, caller, ratelimit.JOBS)
        if "tus-resumable" in headers:
            return await _tus_create(scope, receive, headers, caller)
        return await _plain_upload(scope, receive, headers, caller)
    if method == "GET":
        return 200, await db(front_door.perform, caller, operations.get_upload, {"id": rest}), {}
    if method == "DELETE":
        if "tus-resumable" in headers:  # tus termination; a plain DELETE needs no tus header
            _check_tus_version(headers)
        await db(front_door.perform, caller, operations.delete_upload, {"id": rest})
        return 204, None, {}
    if method not in ("HEAD", "PATCH"):
        raise detail(405, f"Method {method} not allowed here.", {"Allow": "GET, HEAD, PATCH, DELETE, OPTIONS"})
    # a tus HEAD or PATCH reads the upload as GET does: the same count, ownership and 404
    upload = await db(front_door.perform, caller, operations.get_upload, {"id": rest})
    _check_tus_version(headers)
    if method == "HEAD":
        return 200, None, {**_offset_headers(upload), "Cache-Control": "no-store"}
    return await _patch(receive, headers, upload)


def _check_tus_version(headers: dict) -> None:
    if headers.get("tus-resumable") != TUS_VERSION:
        raise detail(
            412,
            f"This server speaks tus {TUS_VERSION}: send 'Tus-Resumable: {TUS_VERSION}'.",
            {"Tus-Version": TUS_VERSION},
        )


def _offset_headers(upload: dict) -> dict:
    """tus's headers of an upload (as operations.get_upload answers it): the bytes stored so far."""
    if upload["state"] == UploadState.READY:
        offset = upload["size"]
    else:
        path = files.incoming_path(upload["id"])
        offset = path.stat().st_size if path.exists() else 0
    return {"Upload-Offset": str(offset), "Upload-Length": str(upload["size"])}


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
    """The upload's address. X-Forwarded-Host and -Proto are read only from one of our own proxies
    (accounts.client, the rule every per-address control follows); the host, forwarded or sent,
    must be one of ALLOWED_HOSTS as Django checks it, else PUBLIC_BASE_URL's is used."""
    proxied = accounts_client.from_our_proxy((scope.get("client") or (None,))[0])
    scheme = headers.get("x-forwarded-proto") if proxied else None
    host = (headers.get("x-forwarded-host") if proxied else None) or headers.get("host") or ""
    host = host.split(",")[-1].strip()  # a proxy appends its own
    if not validate_host(split_domain_port(host)[0], settings.ALLOWED_HOSTS):
        scheme, host = settings.PUBLIC_BASE_URL.split("://", 1)
        host = host.rstrip("/")
    if scheme not in ("http", "https"):
        scheme = scope.get("scheme", "http")
    return f"{scheme}://{host}{UPLOADS_PATH}/{upload_id}"


async def _tus_create(scope, receive, headers, caller):
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
    upload = await db(create_upload, caller, size, filename)
    location = {"Location": _location(scope, headers, upload.id)}
    if headers.get("content-type") == TUS_CONTENT_TYPE:  # creation-with-upload: the first bytes too
        headers = {**headers, "upload-offset": "0"}
        status, body, extra = await _patch(receive, headers, upload)
        return 201, body, {**extra, **location}
    return 201, None, location


async def _patch(receive, headers, upload: dict):
    _check_tus_version(headers)
    if headers.get("content-type") != TUS_CONTENT_TYPE:
        raise detail(415, f"A PATCH carries Content-Type: {TUS_CONTENT_TYPE}.")
    offset = _declared_length(headers, "upload-offset")
    if offset is None:
        raise detail(400, "A PATCH needs Upload-Offset.")
    upload_id, size = upload["id"], upload["size"]
    if upload["state"] == UploadState.READY:
        raise detail(409, "The upload is already complete.", {"Upload-Offset": str(size)})
    path = files.incoming_path(upload_id)
    sink = FileSink(path, limit=size)
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
            raise detail(413, f"The upload was announced as {size} bytes; this PATCH goes past its end.") from None
        except ClientGone:
            pass  # what arrived is kept (sink.close writes it): the client resumes from there
    finally:
        await sink.close()
    received = path.stat().st_size if path.exists() else 0
    await db(services.upload_received, upload_id, received)
    if received == size:
        ready = await db(operations.finish_upload, upload_id, path)
        return 204, None, {"Upload-Offset": str(received), "X-Upload-State": ready.state}
    return 204, None, {"Upload-Offset": str(received)}


_FILENAME = re.compile(r"""filename\*?=(?:UTF-8''|")?([^";]+)""", re.IGNORECASE)


async def _plain_upload(scope, receive, headers, caller):
    """The whole file in one POST: multipart (its part `file`) or the raw bytes."""
    size = _declared_length(headers, "content-length")
    content_type = headers.get("content-type", "")
    multipart = content_type.lower().startswith("multipart/form-data")
    if size is not None and size > settings.UPLOAD_MAX_BYTES + (64 * 1024 if multipart else 0):
        raise too_large()
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    named = _FILENAME.search(headers.get("content-disposition", ""))
    filename = (query.get("filename") or [""])[-1] or (named.group(1) if named else "")
    upload = await db(create_upload, caller, reserved(size), filename)
    path = files.incoming_path(upload.id)
    sink = FileSink(path, limit=min(settings.UPLOAD_MAX_BYTES, upload.size))
    kept = False
    try:
        try:
            if multipart:
                _fields, filename = await read_multipart(receive, content_type, sink)
                if filename is None:
                    message = "This field is required: send the file as the form part named 'file'."
                    raise RequestValidationError([{"loc": ["body", "file"], "msg": message, "type": "missing"}])
            else:
                await read_raw(receive, sink)
        finally:
            await sink.close()
        if sink.written == 0:
            raise operations.upload_not_media("The file is empty.")
        if multipart and filename:
            await db(services.upload_name, upload.id, filename)
        ready = await db(operations.finish_upload, upload.id, path)
        kept = True
        return 201, operations.upload_document(ready), {"Location": _location(scope, headers, upload.id)}
    except BodyTooLarge:
        raise past_the_room(sink.limit) or too_large() from None
    except MalformedBody as error:
        raise operations.upload_not_media(str(error)) from None
    except ClientGone:
        return 400, {"detail": "The connection ended before the file did."}, {}
    finally:
        if not kept:
            await db(services.upload_delete, upload.id)


async def _send(send, status: int, body: dict | None, headers: dict, protective, head: bool = False) -> None:
    raw = b"" if body is None else json.dumps(body).encode()
    pairs = [
        (name.lower().encode("latin-1"), str(value).encode("latin-1", "replace")) for name, value in headers.items()
    ]
    if body is not None:
        pairs.append((b"content-type", b"application/json"))
    if status != 204:
        pairs.append((b"content-length", str(len(raw)).encode()))
    present = {name for name, _ in pairs}
    pairs += [(name, value) for name, value in protective if name not in present]
    await send({"type": "http.response.start", "status": status, "headers": pairs})
    await send({"type": "http.response.body", "body": b"" if head else raw})
