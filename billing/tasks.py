from celery import shared_task


@shared_task
def renew_plans() -> int:
    from .services import renew_due_plans

    return renew_due_plans()
