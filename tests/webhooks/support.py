"""Helpers of the webhook tests: jobs that end through transcription.writes.services (as the stages end
them), and waiting for an event's delivery."""

from tests.support import wait_until


def new_job(account, **fields):
    from transcription.models import Job

    return Job.objects.create(
        account=account,
        **{
            "url": "https://example.com/talk.mp4",
            "type": "transcript",
            "state": "processing",
            **fields,
        },
    )


def fail_job(account, error="The page was not found (HTTP 404).", **fields):
    """A job that has just failed, through the service the runner uses."""
    from transcription.writes import services

    return services.job_fail(new_job(account, **fields).id, error)


def message_of(job, event_type=None):
    from webhooks.models import Message

    found = Message.objects.filter(job=job)
    return found.get(event_type=event_type) if event_type else found.get()


def wait_for_message(message_id, ready, what: str, timeout: float = 60):
    """Poll the database until `ready(message)` is true; return the message. Fails after `timeout`
    seconds saying what was awaited and where the message stood."""
    from webhooks.models import Message

    last: list[Message] = []

    def message_ready():
        last[:] = [Message.objects.get(pk=message_id)]
        return last[0] if ready(last[0]) else None

    def where() -> str:
        message = last[0]
        outcomes = [attempt.outcome for attempt in message.attempts.all()]
        return (
            f"{what} of message {message.webhook_id}; it is {message.state}, "
            f"claimed until {message.claimed_until}, attempts {outcomes}"
        )

    return wait_until(message_ready, where, timeout, interval=0.2)
