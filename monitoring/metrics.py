"""Prometheus metrics, computed when Prometheus scrapes, from PostgreSQL and Redis.

Nothing is counted in process memory: a web process that restarts, or the second of two gunicorn
workers, gives the same figures, because they are read from the rows and queues every process
shares. A scrape costs a few indexed aggregate queries, a read of the timelines of the jobs that
ended in the last hour (at most STAGE_SAMPLE_LIMIT of them), one LLEN per queue and two Redis
round trips for the waiting lines (O(log n) each read, plus one per account shown).

Accounts are labelled by id, and only the TOP_ACCOUNTS with most jobs waiting in each line: the
series stay bounded however many customers there are, and an idle account has none.

| metric | type | labels |
|---|---|---|
| transcription_queue_messages | gauge | queue: messages waiting in the Celery queue (Redis) |
| transcription_broker_up | gauge | 1 when the broker answered this scrape |
| transcription_waiting_jobs | gauge | queue: jobs waiting in the queue's fair line (transcription.scheduling.lines) |
| transcription_waiting_seconds | gauge | queue: how long the job waiting longest has waited |
| transcription_account_waiting_jobs | gauge | queue, account: the same for the TOP_ACCOUNTS accounts with most jobs waiting |
| transcription_account_waiting_seconds | gauge | queue, account: their longest waits |
| transcription_lines_up | gauge | 1 when the waiting lines (the cache's Redis) answered this scrape |
| transcription_jobs | gauge | state, type: jobs in each state now |
| transcription_job_failures_total | counter | reason: failed jobs by Job.failure_reason |
| transcription_stage_seconds | gauge | stage, quantile (0.5/0.9/0.99/1): time jobs spent in each state, jobs that ended in the last hour |
| transcription_stage_samples | gauge | stage: how many stage times the quantiles above come from |
| transcription_translation_failures_total | counter | language: translations that failed, by target language code |
| transcription_webhook_failed_attempts_total | counter | delivery attempts without a 2xx answer |
| transcription_webhook_messages | gauge | state: webhook events pending, delivered, given up |
| transcription_store_bytes_total | counter | direction (written, read): bytes the web and workers put into and took out of the file store (a served link counts what it was asked for) |
| transcription_store_errors_total | counter | where (stage, door, link): failures of the store (a bucket down or refusing) met by a job's stage, an API door, a file link |
| transcription_recognition_chunks | gauge | state: pieces of long jobs' audio not yet recognised, waiting (never claimed), claimed (a worker's lease runs), lapsed (its worker's lease ran out: another takes it) |
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta

import redis
from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone
from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily

from config import shared_cache
from transcription import states
from transcription.models import FailureReason, Job, JobState, JobType, RecognitionChunk, Translation
from transcription.scheduling import lines
from transcription.storage import files
from webhooks.models import Attempt, Message

STAGE_WINDOW = timedelta(hours=1)
STAGE_SAMPLE_LIMIT = 5000
QUANTILES = (0.5, 0.9, 0.99, 1.0)
# kombu's Redis transport keeps a queue's messages of priority p > 0 in "<queue>\x06\x16<p>".
PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")
TOP_ACCOUNTS = 10


def queue_names() -> list[str]:
    return sorted({route["queue"] for route in settings.CELERY_TASK_ROUTES.values()})


def _broker():
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    return shared_cache.connect(url)


def _queue_metrics():
    depth = GaugeMetricFamily("transcription_queue_messages", "Messages waiting in a Celery queue.", labels=["queue"])
    up = GaugeMetricFamily("transcription_broker_up", "1 when the Redis broker answered this scrape.")
    client = _broker()
    if client is None:
        return [up]  # the embedded filesystem broker: nothing to read
    try:
        with client.pipeline(transaction=False) as pipe:
            for queue in queue_names():
                for suffix in PRIORITY_SUFFIXES:
                    pipe.llen(queue + suffix)
            lengths = pipe.execute()
    except redis.RedisError:
        up.add_metric([], 0)
        return [up]
    finally:
        client.close()
    up.add_metric([], 1)
    for index, queue in enumerate(queue_names()):
        chunk = lengths[index * len(PRIORITY_SUFFIXES) : (index + 1) * len(PRIORITY_SUFFIXES)]
        depth.add_metric([queue], sum(chunk))
    return [depth, up]


def _line_metrics():
    up = GaugeMetricFamily("transcription_lines_up", "1 when the waiting lines answered this scrape.")
    try:
        found = lines.stats(top=TOP_ACCOUNTS)
    except shared_cache.Unavailable:
        up.add_metric([], 0)
        return [up]
    up.add_metric([], 1)
    waiting = GaugeMetricFamily("transcription_waiting_jobs", "Jobs waiting in a queue's line.", labels=["queue"])
    waited = GaugeMetricFamily(
        "transcription_waiting_seconds", "How long the job waiting longest in a queue has waited.", labels=["queue"]
    )
    by_account = GaugeMetricFamily(
        "transcription_account_waiting_jobs",
        f"Jobs waiting in a queue's line, for the {TOP_ACCOUNTS} accounts with most.",
        labels=["queue", "account"],
    )
    account_waited = GaugeMetricFamily(
        "transcription_account_waiting_seconds",
        "How long the account's job waiting longest in a queue has waited.",
        labels=["queue", "account"],
    )
    for line in found:
        waiting.add_metric([line.queue], line.waiting)
        waited.add_metric([line.queue], line.oldest_wait)
        for account, count, oldest in line.accounts:
            by_account.add_metric([line.queue, account], count)
            account_waited.add_metric([line.queue, account], oldest)
    return [waiting, waited, by_account, account_waited, up]


def _job_metrics():
    jobs = GaugeMetricFamily("transcription_jobs", "Jobs in each state now.", labels=["state", "type"])
    counts = {
        (row["state"], row["type"]): row["n"] for row in Job.objects.values("state", "type").annotate(n=Count("id"))
    }
    for state in JobState.values:
        for job_type in JobType.values:
            jobs.add_metric([state, job_type], counts.get((state, job_type), 0))

    failures = CounterMetricFamily(
        "transcription_job_failures", "Jobs that ended failed, by reason.", labels=["reason"]
    )
    by_reason = dict(
        Job.objects.filter(state=states.FAILED).values_list("failure_reason").annotate(n=Count("id")).order_by()
    )
    for reason in FailureReason.values:
        failures.add_metric([reason], by_reason.pop(reason, 0))
    # Jobs that failed before reasons were recorded.
    failures.add_metric(["unrecorded"], sum(by_reason.values()))
    return [jobs, failures]


def _quantile(values: list[float], q: float) -> float:
    """The nearest-rank quantile of sorted `values`."""
    return values[max(0, math.ceil(q * len(values)) - 1)]


def stage_times(timelines) -> dict[str, list[float]]:
    """Seconds spent in each state, from jobs' timelines ([state, ISO time entered], in order)."""
    seconds = defaultdict(list)
    for timeline in timelines:
        for (state, entered), (_, left) in zip(timeline, timeline[1:]):
            if state in states.FINAL_STATES:
                continue
            try:
                spent = (datetime.fromisoformat(left) - datetime.fromisoformat(entered)).total_seconds()
            except (TypeError, ValueError):
                continue
            seconds[state].append(max(0.0, spent))
    return seconds


def _stage_metrics():
    quantiles = GaugeMetricFamily(
        "transcription_stage_seconds",
        "Seconds jobs that ended in the last hour spent in each state (quantile 1 is the longest).",
        labels=["stage", "quantile"],
    )
    samples = GaugeMetricFamily(
        "transcription_stage_samples", "Stage times the quantiles are computed from.", labels=["stage"]
    )
    recent = (
        Job.objects.filter(state__in=states.FINAL_STATES, updated_at__gte=timezone.now() - STAGE_WINDOW)
        .order_by("-updated_at")
        .values_list("timeline", flat=True)[:STAGE_SAMPLE_LIMIT]
    )
    for stage, values in sorted(stage_times(recent).items()):
        values.sort()
        samples.add_metric([stage], len(values))
        for q in QUANTILES:
            quantiles.add_metric([stage, str(q)], _quantile(values, q))
    return [quantiles, samples]


def _translation_and_webhook_metrics():
    translations = CounterMetricFamily(
        "transcription_translation_failures", "Translations that failed, by target language.", labels=["language"]
    )
    failed = (
        Translation.objects.filter(state=states.TRANSLATION_FAILED)
        .values_list("language_code")
        .annotate(n=Count("id"))
        .order_by()
    )
    for language, count in failed:
        translations.add_metric([language], count)

    attempts = CounterMetricFamily(
        "transcription_webhook_failed_attempts", "Webhook delivery attempts that got no 2xx answer."
    )
    answered_2xx = Q(status_code__gte=200, status_code__lt=300)
    attempts.add_metric([], Attempt.objects.exclude(answered_2xx).count())

    messages = GaugeMetricFamily("transcription_webhook_messages", "Webhook events by state.", labels=["state"])
    by_state = dict(Message.objects.values_list("state").annotate(n=Count("id")).order_by())
    for state in Message.State.values:
        messages.add_metric([state], by_state.get(state, 0))
    return [translations, attempts, messages]


def _chunk_metrics():
    chunks = GaugeMetricFamily(
        "transcription_recognition_chunks",
        "Pieces of long jobs' audio not recognised yet: never claimed, claimed, or their claim lapsed.",
        labels=["state"],
    )
    now = timezone.now()
    counts = (
        RecognitionChunk.objects.filter(done=False)
        .exclude(job__state__in=states.FINAL_STATES)
        .aggregate(
            waiting=Count("id", filter=Q(lease_until__isnull=True)),
            claimed=Count("id", filter=Q(lease_until__gt=now)),
            lapsed=Count("id", filter=Q(lease_until__lte=now)),
        )
    )
    for state in ("waiting", "claimed", "lapsed"):
        chunks.add_metric([state], counts[state])
    return [chunks]


def _store_metrics():
    """The store's counters, which every role adds to in Redis (transcription.storage.files)."""
    names = [f"store:bytes:{d}" for d in files.DIRECTIONS] + [f"store:errors:{w}" for w in files.ERROR_PLACES]
    try:
        counts = shared_cache.read_counts(names)
    except shared_cache.Unavailable:
        return []  # transcription_lines_up says the cache's Redis is down
    moved = CounterMetricFamily(
        "transcription_store_bytes",
        "Bytes put into (written) and taken out of (read) the file store.",
        labels=["direction"],
    )
    for direction in files.DIRECTIONS:
        moved.add_metric([direction], counts[f"store:bytes:{direction}"])
    errors = CounterMetricFamily(
        "transcription_store_errors", "Failures of the file store, by where they were met.", labels=["where"]
    )
    for where in files.ERROR_PLACES:
        errors.add_metric([where], counts[f"store:errors:{where}"])
    return [moved, errors]


class ServiceCollector:
    def collect(self):
        yield from _queue_metrics()
        yield from _line_metrics()
        yield from _job_metrics()
        yield from _stage_metrics()
        yield from _translation_and_webhook_metrics()
        yield from _chunk_metrics()
        yield from _store_metrics()


# Its own registry: the default one would add this process's own figures (memory, GC), which
# differ between the web processes a load balancer spreads scrapes over.
registry = CollectorRegistry(auto_describe=False)
registry.register(ServiceCollector())
