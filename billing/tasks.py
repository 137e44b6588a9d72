from celery import shared_task

from .services import renew_due_plans


@shared_task
def renew_plans() -> int:
    return renew_due_plans()
