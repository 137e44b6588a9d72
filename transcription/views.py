from django.core import signing
from django.core.files.storage import default_storage
from django.http import FileResponse, JsonResponse

from .artifacts import unsign


def artifact(request, token: str):
    """A result file behind a signed, expiring link (no bearer token needed)."""
    try:
        name = unsign(token)
    except signing.SignatureExpired:
        return JsonResponse({"detail": "This link has expired."}, status=410)
    except signing.BadSignature:
        return JsonResponse({"detail": "Not found."}, status=404)
    if not default_storage.exists(name):
        return JsonResponse({"detail": "This file is no longer kept."}, status=410)
    return FileResponse(default_storage.open(name, "rb"), as_attachment=False, filename=name.rsplit("/", 1)[-1])
