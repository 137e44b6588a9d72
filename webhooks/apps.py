from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Imported here: the services import the models, which need the app registry.
        from transcription.events.signals import job_ended

        from . import services

        job_ended.connect(services.message_record_job_end, dispatch_uid="webhooks.message_record_job_end")
