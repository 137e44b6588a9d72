"""The waiting lines (transcription.scheduling.lines): every account served in turn, places and counts, by
one rule on both stores: Redis, and the database where there is no Redis (the embedded default
`make run` starts, issue 53 item 6). Every test here runs on each."""

import pytest

from transcription.scheduling import lines


@pytest.fixture(autouse=True, params=["redis", pytest.param("database", marks=pytest.mark.django_db)])
def store(request):
    """The lines in Redis (the suite's), or in the database as without REDIS_URL."""
    if request.param == "database":
        request.getfixturevalue("settings").REDIS_URL = ""
    return request.param


def take_all(queue: str) -> list[str]:
    taken = []
    while (job := lines.take(queue)) is not None:
        taken.append(job.job_id)
    return taken


def test_a_single_job_arriving_behind_a_five_job_batch_is_taken_second(store):
    for n in range(5):
        lines.join("media", f"a{n}", 1)
    lines.join("media", "b0", 2)  # queued after the whole batch, before any of it started
    # the first round: the batch's first job and the single one (a round goes in the order of ids)
    assert {lines.take("media").job_id for _ in range(2)} == {"a0", "b0"}
    if store == "database":  # kept in the database's rows, not in Redis
        from transcription.models import LineEntry

        assert sorted(LineEntry.objects.values_list("job", flat=True)) == ["a1", "a2", "a3", "a4"]
    assert take_all("media") == ["a1", "a2", "a3", "a4"]


def test_a_single_job_arriving_behind_a_playlist_is_taken_next():
    for n in range(6):
        lines.join("asr", f"a{n}", 1)
    assert lines.take("asr").job_id == "a0"  # running now
    lines.join("asr", "b0", 2)
    assert lines.place("b0") == 1 and lines.place("a1") == 2
    assert take_all("asr") == ["b0", "a1", "a2", "a3", "a4", "a5"]


def test_accounts_take_turns_and_one_alone_goes_in_order():
    for n in range(3):
        lines.join("media", f"a{n}", 1)
    for n in range(3):
        lines.join("media", f"c{n}", 3)
    taken = take_all("media")
    assert [job[0] for job in taken] in (list("acacac"), list("cacaca"))  # one of each per round
    assert [job for job in taken if job[0] == "a"] == ["a0", "a1", "a2"]
    for n in range(4):
        lines.join("media", f"a{n + 3}", 1)
    assert take_all("media") == ["a3", "a4", "a5", "a6"]


def test_a_job_in_line_keeps_its_place_and_a_put_back_job_goes_first():
    lines.join("burn", "a0", 1)
    lines.join("burn", "a1", 1)
    assert lines.join("burn", "a0", 1) is False  # sent again (the sweeper): it keeps its place
    first = lines.take("burn")
    lines.join("burn", "b0", 2)
    lines.put_back(first)  # its worker stopped before the stage was over
    assert take_all("burn") == ["a0", "b0", "a1"]


def test_depth_waits_and_places_count_only_waiting_jobs():
    for n in range(3):
        lines.join("asr", f"a{n}", 1)
    lines.join("asr", "b0", 2)
    lines.join("media", "c0", 3)
    lines.forget("a2")  # it ended while it waited
    by_queue = {s.queue: s for s in lines.stats(top=10)}
    assert by_queue["asr"].waiting == 3 and by_queue["media"].waiting == 1 and by_queue["burn"].waiting == 0
    assert [(account, count) for account, count, _ in by_queue["asr"].accounts] == [("1", 2), ("2", 1)]
    assert 0 <= by_queue["asr"].oldest_wait < 60 and by_queue["burn"].oldest_wait == 0
    assert [(account, count) for account, count, _ in lines.stats(top=1)[1].accounts] == [("1", 2)]
    assert lines.place("a2") is None and lines.place("c0") == 1
    take_all("asr")
    assert {s.queue: s.waiting for s in lines.stats(top=10)}["asr"] == 0
    assert {s.queue: s.accounts for s in lines.stats(top=10)}["asr"] == []


def test_a_waiting_jobs_poll_says_its_place_behind_another_accounts_turn(
    store, api, client, other_account, broker, django_capture_on_commit_callbacks
):
    """Through the API: queued jobs join the line of the store in use, and a poll's
    X-Queue-Position reads it (the DRF lane without Redis)."""
    import json

    from accounts.services import token_issue

    def queue(client, **headers) -> str:
        body = json.dumps({"url": "https://e.com/v"})
        response = client.post("/v1/api/transcribe", data=body, content_type="application/json", **headers)
        assert response.status_code == 200, response.content
        return response.json()["id"]

    other = {"HTTP_AUTHORIZATION": f"Bearer {token_issue(other_account)}"}
    with django_capture_on_commit_callbacks(execute=True):
        batch = [queue(api) for _ in range(5)]
    assert lines.take("media").job_id == batch[0]  # a worker runs it now
    with django_capture_on_commit_callbacks(execute=True):
        single = queue(client, **other)
    assert client.get(f"/v1/api/transcription/{single}", **other)["X-Queue-Position"] == "1"
    assert api.get(f"/v1/api/transcription/{batch[4]}")["X-Queue-Position"] == "5"
    assert take_all("media") == [single, *batch[1:]]
