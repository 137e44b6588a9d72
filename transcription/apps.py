from django.apps import AppConfig


class TranscriptionConfig(AppConfig):
    name = "transcription"
    default_auto_field = "django.db.models.BigAutoField"
