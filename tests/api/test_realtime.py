"""/v1/realtime (issue 52): OpenAI's Realtime transcription protocol over a WebSocket, against the
production server (bin/web serving config.asgi), with a plain `websockets` client and the official
`openai` SDK's realtime client: the session, auth (header and subprotocol), bad frames as `error`
events, the cap of streams at once, and the money (one ledger entry per stream, never twice)."""

import asyncio
import base64
import json

import openai
import pytest
import websockets

from billing import live_services as billing
from billing.models import LedgerEntry, LiveStream, Plan
from billing.selectors import account_balance
from harness.processes import running_web
from tests.support import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def streams_settled():
    """Every stream a test opened is settled by its door before the database is emptied."""
    yield
    wait_until(
        lambda: not LiveStream.objects.filter(settled_at__isnull=True).exists(), "every stream settled", timeout=20
    )


@pytest.fixture(scope="module")
def web(django_db_setup, django_db_blocker, tmp_path_factory):
    with running_web(tmp_path_factory.mktemp("web") / "web.log", LIVE_IDLE_TIMEOUT_SECONDS="3") as base:
        yield base


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/v1/realtime?intent=transcription"


async def events_until(socket, kind: str, limit: int = 20) -> list[dict]:
    seen = []
    for _ in range(limit):
        event = json.loads(await asyncio.wait_for(socket.recv(), 10))
        seen.append(event)
        if event["type"] == kind:
            return seen
    raise AssertionError(f"no {kind} in {seen}")


def run(coroutine):
    return asyncio.run(coroutine)


def test_a_token_in_the_header_opens_a_session_and_updates_it(web, token):
    async def talk():
        async with websockets.connect(ws_url(web), additional_headers={"Authorization": f"Bearer {token}"}) as ws:
            created = json.loads(await ws.recv())
            update = {
                "type": "session.update",
                "session": {
                    "type": "transcription",
                    "audio": {
                        "input": {
                            "format": {"type": "audio/pcm", "rate": 16000},
                            "transcription": {"model": "gpt-4o-transcribe", "language": "en"},
                            "turn_detection": None,
                        }
                    },
                },
            }
            await ws.send(json.dumps(update))
            updated = json.loads(await ws.recv())
            return created, updated

    created, updated = run(talk())
    assert created["type"] == "session.created"
    assert created["session"]["type"] == "transcription"
    assert updated["type"] == "session.updated"
    audio_input = updated["session"]["audio"]["input"]
    assert audio_input["format"] == {"type": "audio/pcm", "rate": 16000}
    assert audio_input["transcription"]["language"] == "en"
    assert audio_input["turn_detection"] is None


def test_the_browser_subprotocol_carries_the_token_and_the_beta_shape_is_answered_in_kind(web, token):
    async def talk():
        protocols = ["realtime", f"openai-insecure-api-key.{token}"]
        async with websockets.connect(
            ws_url(web), subprotocols=protocols, additional_headers={"OpenAI-Beta": "realtime=v1"}
        ) as ws:
            created = json.loads(await ws.recv())
            await ws.send(
                json.dumps({"type": "transcription_session.update", "session": {"input_audio_format": "g711_ulaw"}})
            )
            return ws.subprotocol, created, json.loads(await ws.recv())

    subprotocol, created, updated = run(talk())
    assert subprotocol == "realtime"
    assert created["type"] == "transcription_session.created"
    assert updated["type"] == "transcription_session.updated"
    assert updated["session"]["input_audio_format"] == "g711_ulaw"


def test_a_bad_token_gets_an_error_event_and_no_session(web):
    async def talk():
        async with websockets.connect(ws_url(web), additional_headers={"Authorization": "Bearer nope"}) as ws:
            event = json.loads(await ws.recv())
            with pytest.raises(websockets.ConnectionClosed):
                await ws.recv()
            return event, ws.close_code

    event, code = run(talk())
    assert event["type"] == "error"
    assert event["error"]["code"] == "invalid_api_key"
    assert code == 1008


def test_the_openai_sdk_connects_and_hears_its_errors(web, token):
    async def talk():
        client = openai.AsyncOpenAI(api_key=token, base_url=web + "/v1")
        async with client.realtime.connect(extra_query={"intent": "transcription"}) as connection:
            created = await connection.recv()
            await connection.session.update(
                session={"type": "transcription", "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}}
            )
            updated = await connection.recv()
            await connection.input_audio_buffer.append(audio="not base64!")
            error = await connection.recv()
            return created, updated, error

    created, updated, error = run(talk())
    assert created.type == "session.created"
    assert updated.type == "session.updated"
    assert error.type == "error" and error.error.code == "invalid_base64"


def test_bad_frames_get_error_events_and_the_socket_stays_open(web, token):
    async def talk():
        async with websockets.connect(
            ws_url(web), additional_headers={"Authorization": f"Bearer {token}"}, max_size=None
        ) as ws:
            await ws.recv()
            answers = []
            for frame in (
                "not json",
                json.dumps({"type": "input_audio_buffer.append", "audio": "%%%"}),
                json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(b"abc").decode()}),
                json.dumps({"type": "no.such.event"}),
                json.dumps(
                    {
                        "type": "session.update",
                        "session": {
                            "type": "transcription",
                            "audio": {"input": {"format": {"type": "audio/pcm", "rate": 44100}}},
                        },
                    }
                ),
                "x" * (10 * 1024 * 1024),
            ):
                await ws.send(frame)
                answers.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
            await ws.send(json.dumps({"type": "input_audio_buffer.clear"}))
            answers.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
            return answers

    answers = run(talk())
    codes = [answer["error"]["code"] for answer in answers[:-1]]
    assert codes == [
        "invalid_json",
        "invalid_base64",
        "odd_bytes",
        "unknown_event",
        "unsupported_rate",
        "message_too_large",
    ]
    assert answers[-1]["type"] == "input_audio_buffer.cleared"


def test_keep_recording_is_a_boolean_in_both_shapes(web, token):
    """Our extension (a stream's audio kept as a job unless false): echoed in the session, and a
    value that is no boolean gets an `error` like any bad field, the session unchanged."""

    async def talk(dialect_headers, kind, session):
        async with websockets.connect(
            ws_url(web), additional_headers={"Authorization": f"Bearer {token}", **dialect_headers}
        ) as ws:
            created = json.loads(await ws.recv())
            answers = []
            for value in ("no", False):
                await ws.send(json.dumps({"type": kind, "session": {**session, "keep_recording": value}}))
                answers.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
            return created, answers

    for headers, kind, session in (
        ({}, "session.update", {"type": "transcription"}),
        ({"OpenAI-Beta": "realtime=v1"}, "transcription_session.update", {}),
    ):
        created, (refused, updated) = run(talk(headers, kind, session))
        assert created["session"]["keep_recording"] is True
        assert refused["type"] == "error" and refused["error"]["param"] == "session.keep_recording", refused
        assert updated["type"].endswith(".updated") and updated["session"]["keep_recording"] is False


def test_an_idle_socket_is_closed_with_an_error(web, token):
    async def talk():
        async with websockets.connect(ws_url(web), additional_headers={"Authorization": f"Bearer {token}"}) as ws:
            await ws.recv()
            event = json.loads(await asyncio.wait_for(ws.recv(), 15))
            with pytest.raises(websockets.ConnectionClosed):
                await ws.recv()
            return event, ws.close_code

    event, code = run(talk())
    assert event["error"]["code"] == "idle_timeout"
    assert code == 1000


def test_the_plans_cap_of_streams_at_once_refuses_one_more(web, token, account):
    plan = Plan.objects.create(name="one stream", monthly_minutes=10, live_streams=1)
    account.plan = plan
    account.save(update_fields=["plan"])

    async def talk():
        headers = {"Authorization": f"Bearer {token}"}
        async with websockets.connect(ws_url(web), additional_headers=headers) as first:
            await first.recv()
            async with websockets.connect(ws_url(web), additional_headers=headers) as second:
                return json.loads(await second.recv())

    event = run(talk())
    assert event["type"] == "error" and event["error"]["code"] == "too_many_streams"


def test_a_stream_is_settled_once_in_whole_seconds_and_never_below_zero(account):
    balance = account_balance(account.pk)
    stream = billing.live_open(account.pk, 2, stale_before=__import__("django.utils.timezone").utils.timezone.now())
    held = billing.live_hold(stream.pk, 3, 5)
    assert held == 8 and account_balance(account.pk) == balance - 8
    billing.live_settle(stream.pk, 3, "the client closed")
    billing.live_settle(stream.pk, 3, "again")
    entries = LedgerEntry.objects.filter(live_stream=stream)
    assert [entry.seconds for entry in entries] == [-3]
    assert account_balance(account.pk) == balance - 3
    # a balance of N seconds holds at most N
    poor = billing.live_open(account.pk, 2, stale_before=__import__("django.utils.timezone").utils.timezone.now())
    assert billing.live_hold(poor.pk, balance + 100, 5) == balance - 3
    billing.live_settle(poor.pk, balance + 100, "ran out")
    assert account_balance(account.pk) == 0
    assert LiveStream.objects.filter(settled_at__isnull=True).count() == 0


def test_the_sweeper_settles_a_stream_whose_door_died_at_what_it_reported(account):
    from datetime import timedelta

    from django.utils import timezone

    from transcription.upkeep import sweeper

    stream = billing.live_open(account.pk, 2, stale_before=timezone.now())
    billing.live_hold(stream.pk, 7, 5)
    LiveStream.objects.filter(pk=stream.pk).update(touched_at=timezone.now() - timedelta(hours=1))
    assert sweeper.sweep_stalled_jobs()["live_streams_settled"] == 1
    assert sweeper.sweep_stalled_jobs()["live_streams_settled"] == 0
    assert [e.seconds for e in LedgerEntry.objects.filter(live_stream=stream)] == [-7]


def test_a_kept_streams_job_waits_for_its_recording_and_fails_when_its_door_died(account):
    """Unqueued while its recording arrives (the sweeper never sends it), prepaid by the stream (its
    charge writes nothing); once the stream is settled without the recording handed on (its web
    process died), the sweeper fails it, refunding nothing."""
    from datetime import timedelta

    from django.utils import timezone

    from transcription.models import Job, UploadState
    from transcription.upkeep import sweeper
    from transcription.writes import live_job_services, services

    stream = billing.live_open(account.pk, 2, stale_before=timezone.now())
    job, upload = live_job_services.live_job_open(account, str(stream.pk), language="en", prompt="", reserve=10**6)
    assert (job.type, job.state, upload.state, upload.size) == ("transcript", "waiting", UploadState.RECEIVING, 10**6)
    Job.objects.filter(pk=job.pk).update(updated_at=timezone.now() - timedelta(days=1))
    billing.live_hold(stream.pk, 7, 5)
    swept = sweeper.sweep_stalled_jobs()
    assert job.id not in swept["resent"] and swept["live_jobs_lost"] == []
    job.duration = 7
    assert services.job_charge(job).ok and not LedgerEntry.objects.filter(job=job).exists()
    LiveStream.objects.filter(pk=stream.pk).update(touched_at=timezone.now() - timedelta(hours=1))
    swept = sweeper.sweep_stalled_jobs()
    assert swept["live_streams_settled"] == 1 and swept["live_jobs_lost"] == [job.id]
    job.refresh_from_db()
    assert job.state == "failed" and job.error == live_job_services.LOST
    assert [e.seconds for e in LedgerEntry.objects.filter(account=account).exclude(kind="grant")] == [-7]


def test_the_websites_live_key_opens_a_session_and_is_refused_expired_or_deactivated(web, account):
    # the Live page's credential (accounts.authentication, live keys) through the door itself, as a browser sends it
    import time

    from websockets.typing import Subprotocol

    from accounts.authentication import LIVE_KEY_SECONDS, new_live_key
    from accounts.services import account_deactivate

    async def first_event(key: str):
        protocols = [Subprotocol("realtime"), Subprotocol(f"openai-insecure-api-key.{key}")]
        async with websockets.connect(ws_url(web), subprotocols=protocols) as ws:
            event = json.loads(await ws.recv())
            if event["type"] == "error":
                with pytest.raises(websockets.ConnectionClosed):
                    await ws.recv()
            return event, ws.close_code

    fresh, _ = new_live_key(account)
    event, _ = run(first_event(fresh))
    assert event["type"] == "session.created", event
    expired, _ = new_live_key(account, made_at=time.time() - LIVE_KEY_SECONDS - 2)
    event, code = run(first_event(expired))
    assert event["error"]["code"] == "invalid_api_key" and "expired" in event["error"]["message"], event
    assert code == 1008
    account_deactivate(account, reason="test")
    event, code = run(first_event(fresh))
    assert event["error"]["code"] == "invalid_api_key" and "deactivated" in event["error"]["message"], event
    assert code == 1008
