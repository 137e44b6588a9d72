"""Who is asking, for every page and endpoint of the website: the signed-in person's Caller
(front_door.caller_from_session) and the rows of their account, found by the API's ownership rule
(operations.owned: a malformed id or another account's id is not found)."""

from __future__ import annotations

from django.http import Http404
from rest_framework import exceptions

from transcription.api.front import front_door, operations, ratelimit
from transcription.models import Job


def caller(request) -> front_door.Caller | None:
    """The website's Caller: the signed-in person's account (front_door.caller_from_session)."""
    return front_door.caller_from_session(request.user, ratelimit.client_address(request))


def job_or_404(request, job_id) -> Job:
    return owned_or_404(request, Job, job_id, "job")


def owned_or_404(request, model, row_id, what: str):
    """The signed-in account's row, by the API's ownership rule. Pages are read without counting
    against the API's limits: a person reading pages is not a client polling
    (docs/decisions/website.md)."""
    who = caller(request)
    if who is None:
        raise Http404("This login has no account.")
    try:
        return operations.owned(model, who.account_id, str(row_id), what)
    except exceptions.NotFound as error:
        raise Http404(str(error.detail)) from None
