"""What the jobs app tells other apps, without importing them.

`job_ended` is sent by services.job_finish and services.job_fail inside the transaction that ends
the job (keyword argument `job`), so what a receiver writes commits with the job's end or not at
all. The webhooks app records its outbox rows this way; jobs never import webhooks.
"""

from django.dispatch import Signal

job_ended = Signal()
