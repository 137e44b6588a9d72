from django.apps import AppConfig


class TranscriptionConfig(AppConfig):
    name = "transcription"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.core import checks as django_checks

        from . import checks, poll_cache  # imports the models: only once the app registry is ready

        poll_cache.connect()
        django_checks.register(checks.speaker_weights)
