"""The Live page (/live/): the holder's microphone streamed to /v1/realtime from the browser
(website/static/website/live.js), the words shown as they are recognised. The page never holds the
API token: for each stream it asks `live_key` for a live key (accounts.authentication, a few minutes,
its login's), which the live door admits through the front door like a token
(docs/decisions/live.md)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from accounts.authentication import LIVE_KEY_SECONDS, new_live_key
from accounts.models import Account
from transcription.api.doors.realtime import PATH as REALTIME_PATH
from transcription.pipeline.recognition.languages import speech_language_choices

from . import access


@never_cache
@login_required
@require_GET
def live(request):
    if access.caller(request) is None:
        return render(request, "website/no_account.html", status=404)
    context = {"realtime_path": REALTIME_PATH, "key_seconds": LIVE_KEY_SECONDS, "languages": speech_language_choices()}
    return render(request, "website/live.html", context)


@never_cache
@login_required
@require_POST
def live_key(request):
    """A live key for the signed-in login, in the shape of OpenAI's client secrets
    (`{"value", "expires_at"}`); the CSRF token is asked as of every POST of the site."""
    who = access.caller(request)
    if who is None:
        return JsonResponse({"detail": "This login has no account."}, status=404)
    key, expires_at = new_live_key(Account.objects.select_related("user").get(pk=who.account_id))
    return JsonResponse({"value": key, "expires_at": expires_at})
