"""The independent schemathesis run, as a client's own QA would make it: the `schemathesis` command
against a live server, every check (`--checks all`) and every phase (examples, coverage, fuzzing,
stateful), generated from the served OpenAPI document alone. It must find nothing: no 5xx, no
response that differs from the document, no schema-valid request refused, no schema-violating
request accepted.

Seeded and deterministic, so CI sees the same cases every run. The test account's rate limits are
raised (the run sends thousands of requests a minute); no check is switched off. Operations that
read something outside the request get real test data, as schemathesis itself asks for: the
playlist operations, in their schema-valid cases, a feed the media server on 127.0.0.1 serves (any
other address is a 422 with the reason, which no document can foresee), the by-id reads a real job and batch of the account
half of the time (the other half, ids of nobody's: 404).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import override_settings

from tests.support import feed

pytestmark = pytest.mark.django_db(transaction=True)

SEED = 20261123
MAX_EXAMPLES = 20
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


# Every schema-valid case of the playlist operations (the documented examples included) names
# the test's feed; schema-violating cases keep what schemathesis made, so they are still refused.
HOOKS = """
import os

import schemathesis

FEED = os.environ["PLAYLIST_FEED_URL"]


def _name_the_feed(case):
    if case.operation.label == "POST /v1/api/transcribe-playlist" and isinstance(case.body, dict):
        case.body["url"] = FEED
    elif case.operation.label == "GET /v1/api/playlist" and isinstance(case.query, dict):
        case.query["url"] = FEED
    return case


@schemathesis.hook
def map_case(context, case):
    if case.meta is not None and case.meta.generation.mode.is_positive:
        _name_the_feed(case)
    return case


@schemathesis.hook
def before_add_examples(context, examples):
    for case in examples:
        _name_the_feed(case)
"""


def _config(job_id: str, batch_id: str) -> str:
    return f"""
hooks = "playlist_feed"

[dictionaries.jobs]
values = ["{job_id}"]

[dictionaries.batches]
values = ["{batch_id}"]

[[operations]]
include-operation-id = "get_transcription"
parameters = {{ "path.id" = {{ dictionary = "jobs", probability = 0.5 }} }}

[[operations]]
include-operation-id = "rename_speakers"
parameters = {{ "path.id" = {{ dictionary = "jobs", probability = 0.5 }} }}

[[operations]]
include-operation-id = "get_batch"
parameters = {{ "path.id" = {{ dictionary = "batches", probability = 0.5 }} }}
"""


def test_schemathesis_with_every_check_and_phase_finds_nothing(
    live_server, media_server, token, account, broker, tmp_path
):
    from transcription.writes import services

    videos = [(f"Talk {n}", media_server.url("/files/speech.mp4"), 9) for n in range(3)]
    media_server.routes["/feeds/schemathesis.xml"] = lambda req: req.send_bytes(
        feed(videos, "Conference talks"), "application/rss+xml"
    )
    feed_url = media_server.url("/feeds/schemathesis.xml")
    job = services.job_create(account, url=media_server.url("/files/speech.mp4"), type="subtitles")
    batch = services.batch_create(
        account,
        url=feed_url,
        title="Conference talks",
        total=1,
        skipped=0,
        video_urls=[media_server.url("/files/speech.mp4")],
        type="transcript",
    )
    (tmp_path / "playlist_feed.py").write_text(HOOKS)
    config = tmp_path / "schemathesis.toml"
    config.write_text(_config(str(job.pk), str(batch.pk)))

    command = [
        str(SCHEMATHESIS),
        "--config-file",
        str(config),
        "run",
        f"{live_server.url}/v1/api/openapi.json",
        "--checks",
        "all",
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--seed",
        str(SEED),
        "--generation-deterministic",
        "--max-examples",
        str(MAX_EXAMPLES),
        # One worker: with two, Hypothesis reads strategies' source (ast.parse) in two threads at
        # once, and CPython 3.11's AST constructor is not safe for that ("SystemError: AST
        # constructor recursion depth mismatch"): a crash of the tool, not a finding, once in a
        # whole-suite run.
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--no-color",
        "--header",
        f"Authorization: Bearer {token}",
    ]
    with override_settings(
        RATE_LIMIT_JOBS_PER_MINUTE=1_000_000,
        RATE_LIMIT_POLLS_PER_MINUTE=1_000_000,
        RATE_LIMIT_ANONYMOUS_PER_MINUTE=1_000_000,
        ALLOW_PRIVATE_URLS=True,
        FETCH_TIMEOUT_SECONDS=10,
    ):
        result = subprocess.run(
            command,
            cwd=tmp_path,
            env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(tmp_path), "PLAYLIST_FEED_URL": feed_url},
            capture_output=True,
            text=True,
            timeout=600,
        )
    output = result.stdout + result.stderr
    (tmp_path / "schemathesis.log").write_text(output)
    assert result.returncode == 0, output[-12000:]
    assert "No issues found" in output or " passed" in output, output[-3000:]
