"""The front door (transcription.api.front.front_door): one Caller per request, one place for each rule,
every door an adapter. Here: deactivation closing the doors at once, and the fast lane's
defects the hostile-client probe found (ids counted twice, %66ormat)."""

import json
import uuid

import pytest
import redis
from django.conf import settings
from django.test import Client

from accounts.services import account_deactivate, account_reactivate
from audit.models import AuditEvent
from tests.front_lane import Front
from transcription import states
from transcription.api.front import ratelimit
from transcription.writes import services


def queue(api) -> str:
    response = api.post(
        "/v1/api/transcribe", data=json.dumps({"url": "https://e.com/v"}), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return response.json()["id"]


def finish(job_id: str) -> None:
    services.job_advance(job_id, states.PROCESSING)
    services.job_advance(job_id, states.ALIGNING, txt="Hello there.", srt="1\n00:00:00,000 --> 00:00:01,000\nHi.\n")
    services.job_finish(job_id)


def polls_counted(account) -> int:
    return redis.Redis.from_url(settings.REDIS_URL).zcard(ratelimit.account_key(account.pk, ratelimit.POLLS))


def test_deactivation_closes_rest_the_fast_lane_and_the_website_at_once_audited_and_reversible(
    api, account, support_user
):
    job_id = queue(api)
    finish(job_id)
    poll = f"/v1/api/transcription/{job_id}"
    assert api.get(poll).status_code == 200
    assert api.get(poll).status_code == 200  # the token and the answer are cached: the fast lane answers
    website = Client()
    website.force_login(account.user)
    assert website.get("/jobs/").status_code == 200

    assert account_deactivate(account, by=support_user, reason="Chargeback.")

    refused = api.get(poll)  # the very next poll, though the token was cached a moment ago
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == "Bearer"
    assert "deactivated" in refused.json()["detail"]
    posted = api.post(
        "/v1/api/transcribe", data=json.dumps({"url": "https://e.com/v"}), content_type="application/json"
    )
    assert posted.status_code == 401
    assert website.get("/jobs/").status_code == 302  # the session is dropped: to the sign-in page
    event = AuditEvent.objects.filter(account=account).first()
    assert event.action == AuditEvent.Action.ACCOUNT_DEACTIVATED and event.actor == support_user
    assert "Chargeback." in event.detail
    assert not account_deactivate(account)  # already: nothing more audited

    assert account_reactivate(account, by=support_user)
    assert api.get(poll).status_code == 200  # the same token again
    assert AuditEvent.objects.filter(account=account).first().action == AuditEvent.Action.ACCOUNT_REACTIVATED


def test_a_login_switched_off_in_the_user_admin_is_refused_at_the_next_poll(api, account):
    job_id = queue(api)
    assert api.get(f"/v1/api/transcription/{job_id}").status_code == 200  # the token is cached
    account.user.is_active = False
    account.user.save()  # not through the service: the user admin's checkbox, a shell
    assert api.get(f"/v1/api/transcription/{job_id}").status_code == 401


@pytest.mark.parametrize(
    "spell",
    [str.upper, lambda id: id.replace("-", ""), lambda id: "{" + id + "}", lambda id: "urn:uuid:" + id],
    ids=["upper", "no-dashes", "braces", "urn"],
)
def test_a_poll_by_any_spelling_of_its_id_is_answered_and_counted_once(api, account, token, spell):
    job_id = queue(api)
    finish(job_id)
    api.get(f"/v1/api/transcription/{job_id}")  # cached
    before = polls_counted(account)
    threads = api.get(f"/v1/api/transcription/{spell(job_id)}")  # the thread pool's path
    assert threads.status_code == 200 and threads.json()["id"] == job_id
    status, headers, body = Front().get(f"/v1/api/transcription/{spell(job_id)}", token)  # the event loop's
    assert status == 200 and json.loads(body)["id"] == job_id
    assert polls_counted(account) == before + 2
    assert headers["x-ratelimit-remaining"] == str(settings.RATE_LIMIT_POLLS_PER_MINUTE - before - 2)


def test_format_negotiation_is_the_same_however_the_query_spells_it(api):
    job_id = queue(api)
    finish(job_id)
    url = f"/v1/api/transcription/{job_id}"
    api.get(url)  # cached: the fast lane would answer a plain poll
    assert api.get(url + "?format=api").status_code == 404  # DRF: no such renderer
    assert api.get(url + "?%66ormat=api").status_code == 404  # the same parameter, percent-encoded
    assert api.get(url + "?format=json").status_code == 200


def test_support_deactivates_in_the_admin_which_says_what_it_does(support_client, support_user, api, account):
    changelist = "/admin/accounts/account/"
    page = support_client.get(changelist).content.decode()
    assert "Deactivate: refuse the API token, MCP and the website at once" in page
    assert "Reactivate" in page
    response = support_client.post(changelist, {"action": "deactivate", "_selected_action": [account.pk]}, follow=True)
    messages = [str(message) for message in response.context["messages"]]
    assert any("its API token, MCP and website sessions are refused" in message for message in messages)
    assert api.get(f"/v1/api/transcription/{uuid.uuid4()}").status_code == 401
    event = AuditEvent.objects.filter(account=account).first()
    assert (event.action, event.actor) == (AuditEvent.Action.ACCOUNT_DEACTIVATED, support_user)
    support_client.post(changelist, {"action": "reactivate", "_selected_action": [account.pk]})
    assert api.get(f"/v1/api/transcription/{uuid.uuid4()}").status_code == 404  # the same token works again


def test_the_website_job_form_is_counted_and_queued_as_the_api_would(client, account, api):
    """The website performs the API's operation: the same job, the same counter as REST."""
    client.force_login(account.user)
    response = client.post(
        "/jobs/new/", {"url": "https://videos.example.com/talk.mp4", "type": "transcript"}, follow=False
    )
    assert response.status_code == 302
    job_id = response["Location"].rstrip("/").rsplit("/", 1)[1]
    polled = api.get(f"/v1/api/transcription/{job_id}")
    assert polled.status_code == 200 and polled.json()["type"] == "transcript"
    counted = redis.Redis.from_url(settings.REDIS_URL).zcard(ratelimit.account_key(account.pk, ratelimit.JOBS))
    assert counted == 1
