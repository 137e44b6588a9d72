"""Celery tasks of the `hooks` queue for accounts: thin wrappers around accounts' services."""

from celery import shared_task

from . import password_services


@shared_task(acks_late=True)
def mail_password_reset(email: str) -> None:
    password_services.password_reset_mail(email)
