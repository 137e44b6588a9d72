"""The scheduling: which Celery task runs a job's next stage, and the fair lines jobs wait in."""
