import mimetypes
import re

from django.core import signing
from django.core.files.storage import default_storage
from django.http import FileResponse, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header

from transcription.storage import files
from transcription.storage.artifacts import unsign

from .models import Job

_CHUNK = 64 * 1024
_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$")


class Unsatisfiable(Exception):
    pass


# A position with more digits than this is past the end of any file; int() is not asked to read
# it (Python refuses strings of over 4,300 digits with a ValueError).
_MAX_DIGITS = 18


def _position(digits: str) -> int:
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= _MAX_DIGITS else 10**_MAX_DIGITS


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The (first, last) byte, inclusive, of a single-range ``Range`` header, or None to send the
    whole file: no header, a malformed one, or several ranges (RFC 9110 lets a server ignore
    those). Raises Unsatisfiable for a range that starts past the end."""
    match = _RANGE.match(header or "")
    if not match or match.group(1) == match.group(2) == "":
        return None
    first, last = match.group(1), match.group(2)
    if first == "":  # "bytes=-500": the last 500 bytes
        suffix = _position(last)
        if suffix == 0 or size == 0:
            raise Unsatisfiable
        return max(0, size - suffix), size - 1
    start = _position(first)
    if last and _position(last) < start:
        return None  # "bytes=9-3" is invalid: ignored
    if start >= size:
        raise Unsatisfiable
    return start, min(_position(last), size - 1) if last else size - 1


def _read(handle, start: int, length: int):
    try:
        handle.seek(start)
        while length > 0:
            chunk = handle.read(min(_CHUNK, length))
            if not chunk:
                break
            length -= len(chunk)
            yield chunk
    finally:
        handle.close()


def _holder(name: str):
    """(whether the login of the account holding the file is active, when the account's links were
    last revoked), or None when no job holds this name."""
    job_id = files.job_id_of(name)
    if job_id is None:
        return None
    return (
        Job.objects.filter(pk=job_id).values_list("account__user__is_active", "account__file_links_revoked_at").first()
    )


def artifact(request, token: str):
    """A result file behind a signed, expiring link (no bearer token needed).

    Byte ranges are served (206), since video players seek with them and Safari will not play a
    video from a server that ignores them. A store that is down is a 503 with Retry-After, not a
    500: the file is still there once it is back."""
    try:
        return _artifact(request, token)
    except files.store_errors():
        files.count_error("link")
        response = JsonResponse({"detail": files.STORE_BUSY}, status=503)
        response["Retry-After"] = str(files.STORE_RETRY_AFTER_SECONDS)
        return response


def _artifact(request, token: str):
    try:
        link = unsign(token)
    except signing.SignatureExpired:
        return JsonResponse({"detail": "This link has expired."}, status=410)
    except signing.BadSignature:
        return JsonResponse({"detail": "Not found."}, status=404)
    name = link.name
    holder = _holder(name)
    if holder is None or not default_storage.exists(name):
        return JsonResponse({"detail": "This file is no longer kept."}, status=410)
    active, revoked_at = holder
    if not active or (revoked_at is not None and link.made_at <= revoked_at):
        # The account was deactivated, or its token revoked or replaced after the link was made.
        return JsonResponse({"detail": "This link has been revoked. Ask the API for a new one."}, status=410)
    return ranged_file(request, name, name.rsplit("/", 1)[-1])


def ranged_file(request, name: str, filename: str, content_type: str | None = None) -> HttpResponseBase:
    """The stored file `name`, whole or the byte range the request's `Range` asks for (206), shown
    in the browser as `filename`. Players seek with ranges; Safari will not play a video from a
    server that ignores them. `content_type` defaults to the one `filename` suggests."""
    size = default_storage.size(name)
    content_type = content_type or mimetypes.guess_type(filename)[0] or "application/octet-stream"
    try:
        wanted = byte_range(request.headers.get("Range"), size)
    except Unsatisfiable:
        response: HttpResponseBase = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        response["Accept-Ranges"] = "bytes"
        return response
    files.count_bytes("read", size if wanted is None else wanted[1] - wanted[0] + 1)  # what it is asked to send
    if wanted is None:
        response = FileResponse(
            default_storage.open(name, "rb"), as_attachment=False, filename=filename, content_type=content_type
        )
    else:
        start, end = wanted
        response = StreamingHttpResponse(
            _read(default_storage.open(name, "rb"), start, end - start + 1), status=206, content_type=content_type
        )
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
        response["Content-Length"] = str(end - start + 1)
        disposition = content_disposition_header(False, filename)  # None only for an empty filename
        if disposition is not None:
            response["Content-Disposition"] = disposition
    response["Accept-Ranges"] = "bytes"
    return response
