"""The MCP server at /mcp, through the official `mcp` client over real HTTP: the production server
(bin/web) in a subprocess on the test database and Redis, and, for the job that runs, a real Celery
worker with the real speech model on a short local clip."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from harness.processes import free_port, running_web, running_worker
from tests.support import await_until

live = pytest.mark.django_db(transaction=True)

TOOLS = {
    "transcribe",
    "create_subtitles",
    "burn_subtitles",
    "transcribe_playlist",
    "get_transcription",
    "get_batch",
    "preview_playlist",
    "get_balance",
    "rename_speakers",
    "get_transcript_segments",
    "edit_transcript",
    "burn_again",
}


@pytest.fixture(scope="module")
def web(django_db_setup, tmp_path_factory):
    """bin/web (gunicorn with a uvicorn worker) on a free port; its base URL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("web") / "web.log"
    with running_web(log, port=port, PUBLIC_BASE_URL=base, ALLOW_PRIVATE_URLS="true") as running:
        yield running


@pytest.fixture(scope="module")
def worker(django_db_setup, tmp_path_factory):
    with running_worker(tmp_path_factory.mktemp("worker") / "worker.log", ALLOW_PRIVATE_URLS="true") as process:
        yield process


def mcp_call(base: str, token: str | None, work, mode: str = "legacy"):
    """Run `work(client)` in an MCP client session on `base`/mcp; its result."""

    async def main():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with Client(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode) as client:
                return await work(client)

    return asyncio.run(main())


def rest(base: str, token: str, method: str, path: str, body: dict | None = None):
    """(status, headers, JSON body) of a REST request to the live server."""
    request = urllib.request.Request(
        base + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read())


def raw_post(base: str, headers: dict) -> tuple[int, dict]:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    request = urllib.request.Request(
        f"{base}/mcp",
        method="POST",
        data=json.dumps(message).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


@live
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_a_client_of_either_revision_lists_the_tools_with_the_rest_fields(web, token, mode):
    async def work(client):
        return client.protocol_version, (await client.list_tools()).tools

    version, tools = mcp_call(web, token, work, mode)
    assert version.startswith("2025-") if mode == "legacy" else version == "2026-07-28"
    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == TOOLS
    for tool in tools:
        assert "2-3 s" in tool.description or tool.name in {
            "get_balance",
            "preview_playlist",
            "get_batch",
            "rename_speakers",
            "get_transcript_segments",
            "edit_transcript",
        }
        assert tool.input_schema["type"] == "object" and tool.output_schema["type"] == "object"
    transcribe = by_name["transcribe"].input_schema
    assert set(transcribe["properties"]) == {
        "url",
        "upload_id",
        "language_code",
        "verbatim",
        "tag_audio_events",
        "prompt",
        "key_terms",
    }
    assert (
        transcribe["oneOf"] == [{"required": ["url"]}, {"required": ["upload_id"]}]
        and transcribe["properties"]["verbatim"]["default"] is False
    )
    burn = by_name["burn_subtitles"].input_schema["properties"]
    assert burn["quality"]["enum"] == ["default", "hd", "uhd"] and burn["quality"]["default"] == "default"
    assert set(by_name["get_transcription"].output_schema["properties"]) >= {"id", "state", "progress", "txt"}
    assert set(by_name["transcribe_playlist"].output_schema["properties"]) == {
        "batch_id",
        "title",
        "count",
        "skipped",
        "ids",
    }


BAD_SUBTITLES = {"url": "not a url", "format": "ass"}
BAD_BURN = {"quality": "8k", "verbatim": "yes", "key_terms": ["Zorvex", ""]}


@live
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_bad_arguments_and_foreign_ids_are_tool_errors_with_the_rest_messages(web, token, other_account, mode):
    from tests.factories import JobFactory

    foreign = JobFactory(account=other_account)

    async def work(client):
        bad = await client.call_tool("create_subtitles", BAD_SUBTITLES)
        missing = await client.call_tool("get_transcription", {"id": str(foreign.id)})
        burn = await client.call_tool("burn_subtitles", BAD_BURN)
        return bad, missing, burn

    bad, missing, burn = mcp_call(web, token, work, mode)
    assert burn.is_error and burn.structured_content == rest(web, token, "POST", "/v1/api/burn-subtitles", BAD_BURN)[2]
    assert {tuple(entry["loc"]) for entry in burn.structured_content["detail"]} == {
        ("body", "url"),
        ("body", "quality"),
        ("body", "verbatim"),
        ("body", "key_terms", 1),
    }  # every offending argument named at once
    assert "quality: " in burn.content[0].text and "verbatim: " in burn.content[0].text
    assert "key_terms.1: A key term may not be empty." in burn.content[0].text
    status, _, body = rest(web, token, "POST", "/v1/api/subtitles", BAD_SUBTITLES)
    assert status == 422 and bad.is_error and bad.structured_content == body
    assert {tuple(entry["loc"]) for entry in body["detail"]} == {("body", "url"), ("body", "format")}
    url_message = next(entry["msg"] for entry in body["detail"] if entry["loc"] == ["body", "url"])
    assert bad.content[0].text.startswith(f"Invalid arguments: url: {url_message}")
    assert missing.is_error and missing.content[0].text == "No job with that id on this account."


@live
def test_rename_speakers_names_them_as_rest_does_and_refuses_what_rest_refuses(web, token, account, other_account):
    from tests.factories import JobFactory

    txt = "[00:00:01] Speaker 1: Hello there.\n\n[00:00:04] Speaker 2: Hi.\n"
    webvtt = "WEBVTT\n\n1\n00:00:01.000 --> 00:00:03.000\n<v Speaker 1>Hello there.</v>\n\n2\n00:00:04.000 --> 00:00:05.000\n<v Speaker 2>Hi.</v>\n"
    job = JobFactory(account=account, state="done", progress=100, txt=txt, srt="", webvtt=webvtt)
    foreign = JobFactory(account=other_account, state="done", txt=txt, webvtt=webvtt)

    async def work(client):
        named = await client.call_tool("rename_speakers", {"id": str(job.id), "names": {"1": "Alice", "2": "Bob"}})
        bad = await client.call_tool("rename_speakers", {"id": str(job.id), "names": {"3": "Carol", "1": "A:B"}})
        missing = await client.call_tool("rename_speakers", {"id": str(foreign.id), "names": {"1": "Alice"}})
        return named, bad, missing

    named, bad, missing = mcp_call(web, token, work)
    assert not named.is_error, named.content[0].text
    assert named.structured_content["txt"] == "[00:00:01] Alice: Hello there.\n\n[00:00:04] Bob: Hi.\n"
    assert "<v Alice>Hello there.</v>" in named.structured_content["webvtt"]
    status, _, polled = rest(web, token, "GET", f"/v1/api/transcription/{job.id}")
    assert status == 200 and polled["txt"] == named.structured_content["txt"]
    status, _, body = rest(web, token, "POST", f"/v1/api/transcription/{job.id}/speakers", {"names": {"1": "A:B"}})
    assert status == 422 and bad.is_error
    assert bad.content[0].text.startswith("Invalid arguments: names.1: A name may not hold")
    assert missing.is_error and missing.content[0].text == "No job with that id on this account."


@live
def test_edit_transcript_corrects_as_rest_does_and_refuses_what_rest_refuses(web, token, account, other_account):
    from tests.factories import done_job_with_segments

    job = done_job_with_segments(account)
    foreign = done_job_with_segments(other_account)
    fix = [{"op": "text", "index": 1, "text": "I am fine, thank you so much."}]

    async def work(client):
        read = await client.call_tool("get_transcript_segments", {"id": str(job.id)})
        etag = read.structured_content["etag"]
        bad = await client.call_tool(
            "edit_transcript", {"id": str(job.id), "if_match": etag, "edits": [{"op": "times", "index": 0, "end": 99}]}
        )
        saved = await client.call_tool("edit_transcript", {"id": str(job.id), "if_match": etag, "edits": fix})
        stale = await client.call_tool("edit_transcript", {"id": str(job.id), "if_match": etag, "edits": fix})
        missing = await client.call_tool("edit_transcript", {"id": str(foreign.id), "if_match": etag, "edits": fix})
        return read, bad, saved, stale, missing

    read, bad, saved, stale, missing = mcp_call(web, token, work)
    assert [s["speaker"] for s in read.structured_content["segments"]] == [1, 2, 1]
    assert bad.is_error and "edits.0.end" in bad.content[0].text and "next segment" in bad.content[0].text
    assert not saved.is_error, saved.content[0].text
    assert saved.structured_content["etag"] == '"v2"' and saved.structured_content["history"][0]["door"] == "mcp"
    assert stale.is_error and "changed since you read it" in stale.content[0].text
    assert missing.is_error and missing.content[0].text == "No job with that id on this account."
    status, _, polled = rest(web, token, "GET", f"/v1/api/transcription/{job.id}")
    assert status == 200 and "thank you so much." in polled["txt"] and "thank you so much." in polled["srt"]


@live
def test_burn_again_refuses_what_rest_refuses(web, token, account, other_account):
    from tests.factories import done_job_with_segments

    subtitles = done_job_with_segments(account)
    foreign = done_job_with_segments(other_account, type="burned")

    async def work(client):
        return [await client.call_tool("burn_again", {"id": str(job.id)}) for job in (subtitles, foreign)]

    not_burned, missing = mcp_call(web, token, work)
    assert not_burned.is_error and not_burned.content[0].text.startswith("Only a burned job")
    assert missing.is_error and missing.content[0].text == "No job with that id on this account."
    status, _, body = rest(web, token, "POST", f"/v1/api/transcription/{subtitles.id}/burn", {})
    assert status == 409 and body["detail"] == not_burned.content[0].text


@live
def test_no_token_a_revoked_token_and_a_foreign_origin_are_refused(web, token, account):
    from accounts.services import token_revoke

    status, headers = raw_post(web, {})
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    status, _ = raw_post(web, {"Authorization": f"Bearer {token}", "Origin": "https://attacker.example"})
    assert status == 403
    status, _ = raw_post(web, {"Authorization": f"Bearer {token}", "Origin": web})
    assert status == 200
    # Nothing is published that would send a client into an OAuth flow (docs/decisions.md).
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{web}/.well-known/oauth-protected-resource", timeout=30)
    assert missing.value.code == 404

    token_revoke(account)
    status, headers = raw_post(web, {"Authorization": f"Bearer {token}"})
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    # The SDK's client gets the 401 on its first request and fails the session with an MCPError.
    with pytest.raises(ExceptionGroup) as refused:
        mcp_call(web, token, lambda client: client.list_tools())
    assert refused.group_contains(MCPError, depth=None)


@live
def test_rest_and_mcp_share_one_job_request_counter(web, token):
    # The limit counts any 60 seconds (a sliding window): no need to wait for a minute to begin.
    video = {"url": "https://videos.example.com/talk.mp4"}
    for _ in range(40):
        status, _, body = rest(web, token, "POST", "/v1/api/transcribe", video)
        assert status == 200, body

    async def twenty(client):
        return [await client.call_tool("transcribe", video) for _ in range(20)]

    results = mcp_call(web, token, twenty)
    assert [result.is_error for result in results] == [False] * 20

    status, headers, body = rest(web, token, "POST", "/v1/api/transcribe", video)
    assert status == 429 and int(headers["Retry-After"]) >= 1

    async def one_more(client):
        return await client.call_tool("transcribe", video)

    refused = mcp_call(web, token, one_more)
    assert refused.is_error and refused.content[0].text.startswith("Rate limit exceeded; try again in ")
    assert refused.structured_content["retry_after"] >= 1
    # Polls have their own counter: reading still works.
    status, _, body = rest(web, token, "GET", f"/v1/api/transcription/{results[0].structured_content['id']}")
    assert status == 200 and body["state"] == "waiting"


@live
@pytest.mark.e2e
def test_a_transcript_queued_through_mcp_runs_is_charged_and_reads_the_same_through_rest(
    web, worker, token, account, media_server
):
    from billing.models import LedgerEntry
    from harness.media_files import SPEECH_TEXT

    async def work(client):
        before = (await client.call_tool("get_balance", {})).structured_content["remaining_seconds"]
        queued = await client.call_tool("transcribe", {"url": media_server.url("/files/speech.mp4")})
        assert not queued.is_error, queued.content
        job_id = queued.structured_content["id"]

        async def ended():
            polled = await client.call_tool("get_transcription", {"id": job_id})
            return polled if polled.structured_content["state"] in ("done", "failed") else None

        polled = await await_until(ended, f"end of job {job_id}", timeout=300, interval=2)
        after = (await client.call_tool("get_balance", {})).structured_content["remaining_seconds"]
        return job_id, polled, before, after

    job_id, polled, before, after = mcp_call(web, token, work)
    job = polled.structured_content
    assert job["state"] == "done", job["error"]
    words = set(job["txt"].lower().replace(".", " ").replace(",", " ").split())
    # CTranslate2's int8 kernels differ by CPU (AVX2, AVX-512): with AVX2 the base model hears "the quick round fox"
    assert {"quick", "fox", "lazy", "dog"} <= words, job["txt"]
    assert "welcome" in SPEECH_TEXT.lower() and "done" in polled.content[0].text

    charge = LedgerEntry.objects.get(job_id=job_id, kind=LedgerEntry.Kind.CHARGE)
    assert charge.account_id == account.pk and before - after == -charge.seconds > 0
    status, _, body = rest(web, token, "GET", f"/v1/api/transcription/{job_id}")
    assert status == 200 and body == job
