"""Celery tasks of the `hooks` queue: thin wrappers around webhooks.services."""

from celery import shared_task

from . import services


@shared_task(acks_late=True)
def deliver_message(message_id: str) -> None:
    services.message_deliver(message_id)


@shared_task
def send_due_messages() -> None:
    services.messages_sweep()
