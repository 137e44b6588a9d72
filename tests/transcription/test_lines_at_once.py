"""The waiting lines taken from by several workers at once, on both stores (transcription.scheduling.lines;
in a module of its own: its database tests commit)."""

import threading

import pytest

from transcription.scheduling import lines


@pytest.mark.parametrize("store", ["redis", "database"])
@pytest.mark.django_db(transaction=True)  # each thread commits on its own connection
def test_workers_taking_at_once_take_each_job_once(store, settings):
    """Four workers taking from one line at the same moment (the database's row lock, Redis's
    scripts): every job is taken exactly once."""
    if store == "database":
        settings.REDIS_URL = ""
    for n in range(40):
        lines.join("asr", f"j{n:02d}", n % 3)
    taken: list[str] = []
    start = threading.Barrier(4)

    def worker():
        from django.db import connection

        start.wait()
        try:
            while (job := lines.take("asr")) is not None:
                taken.append(job.job_id)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(taken) == [f"j{n:02d}" for n in range(40)]
