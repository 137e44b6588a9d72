"""Middleware of the whole site: the request-body limit and the Content-Security-Policy."""

from __future__ import annotations

from django.http import JsonResponse

from transcription.api.front import front_door


class RequestBodyLimitMiddleware:
    """A body announced larger than DATA_UPLOAD_MAX_MEMORY_SIZE is a JSON 413, before anything reads
    it. Django itself would raise RequestDataTooBig when a view reads the body, which ends as an
    HTML 400 (and only for the views that read it)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        refusal = front_door.body_too_large(length)
        if refusal is not None:
            answer = refusal.answer()
            return JsonResponse(answer.body, status=answer.status, headers=answer.headers)
        return self.get_response(request)


# Same-origin everything, no inline script or style, no framing. Swagger UI draws its icons from
# data: URIs in its stylesheet (img-src data:). Third-party script is allowed nowhere.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    """Sends the policy on every response (pages, the docs, the admin, JSON and files alike) that
    does not set its own. django-csp would do the same; one constant header needs no library."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response
