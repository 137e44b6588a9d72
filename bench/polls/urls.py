"""The service's URLs plus /bench/constant: a bare Django view behind the same middleware.

The bare view is the baseline the poll endpoint is compared with: same gunicorn, same process,
same middleware stack, no authentication, no rate limit, no database, no DRF.
"""

from django.http import JsonResponse
from django.urls import include, path

CONSTANT = {"ok": True, "service": "bench", "items": [1, 2, 3]}


def constant(request):
    return JsonResponse(CONSTANT)


urlpatterns = [
    path("bench/constant", constant, name="bench-constant"),
    path("", include("config.urls")),
]

handler404 = "transcription.api.wire.error_bodies.json_not_found"
handler500 = "transcription.api.wire.error_bodies.json_server_error"
