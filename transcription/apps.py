from django.apps import AppConfig


class TranscriptionConfig(AppConfig):
    name = "transcription"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.conf import settings
        from django.core import checks as django_checks
        from django.core.signals import setting_changed

        from transcription import checks
        from transcription.events import poll_cache  # imports the models: only once the app registry is ready
        from transcription.pipeline import weights_dir

        poll_cache.connect()
        django_checks.register(checks.speaker_weights)
        # The pipeline reads no setting: the weights directory is handed down once, and again when
        # a test overrides it.
        weights_dir.use_weights_dir(settings.SPEAKER_WEIGHTS_DIR)
        setting_changed.connect(_weights_dir_changed)


def _weights_dir_changed(*, setting, value, **kwargs):
    if setting == "SPEAKER_WEIGHTS_DIR":
        from transcription.pipeline import weights_dir

        weights_dir.use_weights_dir(value)
