"""What the web processes keep in Redis is read without unpickling anything (issue 53, item 5): a
Redis that another machine can reach must not be able to run code in the web or the workers by what
it hands back, and a value of another release's shape is a miss, never a 500. On the real Redis."""

import json
import os
import pickle
import random

import pytest
from django.conf import settings

from config import shared_cache
from tests.pipeline.test_rerender import random_edit, transcript
from transcription.api.front import edit_renders, operations
from transcription.pipeline.fetch.playlist import PlaylistEntry, PlaylistListing
from transcription.pipeline.transcripts import rerender
from transcription.pipeline.transcripts import transcript_edits as te


class _Planted:
    """A pickle that, unpickled, creates the file it names: proof that someone ran it."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.fixture
def redis_client():
    client = shared_cache.connect(settings.REDIS_URL)
    keys = list(client.scan_iter("cache:edit-render:*")) + list(client.scan_iter("cache:test:*"))
    if keys:
        client.delete(*keys)
    edit_renders.forget()
    yield client
    edit_renders.forget()


def _kept(minutes: float = 3) -> edit_renders.Kept:
    document = transcript(minutes, 5)
    edit = {"op": "text", "index": 2, "text": "Something else was said here, quite differently."}
    edited = te.apply_edits(document, [edit], duration=9999, original=document)
    rendered = rerender.after_edit(rerender.full(document, language="en"), document, edited, language="en")
    return edit_renders.Kept(edited, rendered, edit_renders.encoded(edited, None))


def test_an_edit_render_goes_to_redis_as_versioned_json_and_comes_back_equal(redis_client):
    kept = _kept()
    assert kept.rendered.changed and kept.rendered.spans, "an edit's render, with cues it changed"
    edit_renders.keep("job-1", 4, kept)
    edit_renders.written()
    raw = redis_client.get("cache:edit-render:job-1")
    head, _, body = raw.partition(b"\n")
    assert head == edit_renders.SHAPE.head.rstrip(b"\n") and head.startswith(b"json edit-render 1.")
    assert json.loads(body)["version"] == 4
    edit_renders.forget()  # as another web process: only the copy in Redis
    loaded = edit_renders.kept("job-1", 4)
    # dataclass equality: every tuple came back a tuple (a list is never equal to one)
    assert loaded == kept
    assert isinstance(loaded.rendered.tokens.states[1], tuple) and isinstance(loaded.rendered.spans[0], tuple)
    # the next edit made from the loaded copy is what one made from the whole document makes
    edit = random_edit(random.Random(9), kept.document)
    again = te.apply_edits(kept.document, [edit], duration=9999, original=kept.document)
    after = rerender.after_edit(loaded.rendered, kept.document, again, language="en")
    assert after.outputs() == te.render(again, language="en")
    assert edit_renders.kept("job-1", 5) is None, "another version of the document"


def test_a_copy_of_another_shape_version_is_a_miss(redis_client):
    kept = _kept(1)
    body = json.dumps(edit_renders.SHAPE.dump((2, kept))).encode()
    redis_client.set("cache:edit-render:job-2", b"json edit-render 0.000000000000\n" + body)
    assert edit_renders.kept("job-2", 2) is None
    redis_client.set("cache:edit-render:job-2", edit_renders.SHAPE.head + body)
    assert edit_renders.kept("job-2", 2) == kept, "the same bytes under this release's head are read"


@pytest.mark.parametrize(
    "value",
    [
        {"version": 2, "document": [], "encoded": [], "rendered": {"tokens": 1}},
        {"version": 2, "document": [{}], "encoded": []},
        [1, 2, 3],
        "a string",
    ],
)
def test_a_copy_of_the_wrong_shape_under_the_right_head_is_a_miss(redis_client, value):
    redis_client.set("cache:edit-render:job-3", edit_renders.SHAPE.head + json.dumps(value).encode())
    assert edit_renders.kept("job-3", 2) is None
    redis_client.set("cache:edit-render:job-3", edit_renders.SHAPE.head + b"\xff not json")
    assert edit_renders.kept("job-3", 2) is None


def test_pickle_bytes_in_the_cache_are_never_unpickled(redis_client, tmp_path):
    planted = tmp_path / "ran"
    bomb = pickle.dumps((2, _Planted(planted)), protocol=pickle.HIGHEST_PROTOCOL)
    redis_client.set("cache:edit-render:job-4", bomb)
    assert edit_renders.kept("job-4", 2) is None
    url = "https://example.com/playlist?list=PLx"
    redis_client.set(f"cache:{operations.listing_key(url)}", bomb)
    assert shared_cache.get(operations.listing_key(url), operations.LISTING_SHAPE) is None
    assert not planted.exists()


def test_a_playlist_listing_comes_back_equal_and_another_shape_is_a_miss(redis_client):
    listing = PlaylistListing(
        "PLx", "Talks", 2, 1, False, "", [PlaylistEntry("a", "First", "https://example.com/a", 61, is_live=True)], True
    )
    shared_cache.set("test:listing", listing, 30, operations.LISTING_SHAPE)
    assert shared_cache.get("test:listing", operations.LISTING_SHAPE) == listing
    # a field this release does not know (a later release's listing): a miss
    data = {**operations.LISTING_SHAPE.dump(listing), "region": "EU"}
    redis_client.set("cache:test:listing", operations.LISTING_SHAPE.head + json.dumps(data).encode())
    assert shared_cache.get("test:listing", operations.LISTING_SHAPE) is None


def test_an_edit_with_pickle_bytes_in_redis_answers_from_a_whole_render(api, account, redis_client, tmp_path):
    from tests.factories import done_job_with_segments

    job = done_job_with_segments(account)
    planted = tmp_path / "ran"
    redis_client.set(f"cache:edit-render:{job.id}", pickle.dumps((1, _Planted(planted))))
    response = api.patch(
        f"/v1/api/transcription/{job.id}/segments",
        data=json.dumps({"edits": [{"op": "text", "index": 1, "text": "I am fine, thanks."}]}),
        content_type="application/json",
        HTTP_IF_MATCH='"v1"',
    )
    assert response.status_code == 200, response.json()
    assert response.json()["segments"][1]["text"] == "I am fine, thanks."
    assert not planted.exists()


def test_celery_takes_only_json_from_the_broker():
    """A task message in the broker (Redis, reachable over the network) is decoded with Celery's
    accepted content types: a pickled one is refused, not run."""
    from kombu.exceptions import ContentDisallowed
    from kombu.serialization import dumps, loads, prepare_accept_content

    from config.celery import app

    assert app.conf.accept_content == ["json"] and app.conf.result_accept_content == ["json"]
    assert app.conf.task_serializer == app.conf.result_serializer == app.conf.event_serializer == "json"
    accept = prepare_accept_content(app.conf.accept_content)  # as the worker's consumer does
    content_type, encoding, body = dumps(("transcription.tasks.start_job", [1]), serializer="pickle")
    with pytest.raises(ContentDisallowed):
        loads(body, content_type, encoding, accept=accept)
    content_type, encoding, body = dumps({"task": "x", "args": [1]}, serializer="json")
    assert loads(body, content_type, encoding, accept=accept) == {"task": "x", "args": [1]}
