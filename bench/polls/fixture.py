"""The benchmark's database and what it polls: an account, its token and one job (done, or still
transcribing), made with the service's own models."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

BENCH_EMAIL = "bench-polls@example.com"
# The rate-limit counters are keyed by account id in a Redis that the test suite may share; a bench
# account with a small id would push a test account with the same id (in the test database) over
# its limit. The bench database hands out account ids from here on instead.
ACCOUNT_ID_FLOOR = 1_000_000_000


def log(message: str) -> None:
    print(f"[bench-polls] {message}", flush=True)


def ensure_database() -> None:
    """Create the benchmark's database if it is missing."""
    from harness.processes import ensure_database as create_when_missing

    if create_when_missing(os.environ["DATABASE_URL"]):
        log(f"created the database of {os.environ['DATABASE_URL']}")


def srt_time(seconds: float) -> str:
    ms = int(round(seconds * 1000))
    return f"{ms // 3_600_000:02}:{ms // 60_000 % 60:02}:{ms // 1000 % 60:02},{ms % 1000:03}"


def subtitles(sentences: list[str]) -> tuple[str, str, str]:
    """(txt, srt, webvtt) of one four-second cue per sentence."""
    srt, vtt = [], ["WEBVTT", ""]
    for i, sentence in enumerate(sentences):
        start, end = srt_time(i * 4), srt_time(i * 4 + 3.8)
        srt += [str(i + 1), f"{start} --> {end}", sentence, ""]
        vtt += [f"{start.replace(',', '.')} --> {end.replace(',', '.')}", sentence, ""]
    return " ".join(sentences), "\n".join(srt), "\n".join(vtt)


def sentences(language: str, count: int) -> list[str]:
    words = {
        "en": "today we look at how the pipeline turns a video into text and why each stage matters",
        "es": "hoy vemos cómo la canalización convierte un vídeo en texto y por qué importa cada etapa",
        "fr": "aujourd'hui nous voyons comment la chaîne transforme une vidéo en texte et pourquoi",
    }[language].split()
    return [" ".join(words[(i + k) % len(words)] for k in range(10)).capitalize() + "." for i in range(count)]


def create_fixture(job_state: str = "done") -> dict:
    """The account, its token and a 5-minute subtitles job with two translations (Spanish, French).

    "done": finished, with its text and both translations' subtitles (75 cues each): the largest
    answer a poll of a normal job gets (about 47 kB). "processing": still transcribing, no text yet:
    what most polls of a job see while waiting.
    """
    import django
    from django.core.management import call_command

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection

    call_command("migrate", interactive=False, verbosity=0)
    from accounts.models import Account
    from accounts.services import account_create, token_issue
    from transcription.models import Job, JobState, JobType, Translation, TranslationState

    user = get_user_model().objects.filter(username=BENCH_EMAIL).first()
    if user is not None:
        account = Account.objects.get(user=user)
    else:
        if "bench" in connection.settings_dict["NAME"]:  # the dedicated database only: never renumber a real one
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT setval(pg_get_serial_sequence('accounts_account', 'id'), "
                    "GREATEST(%s, (SELECT COALESCE(MAX(id), 0) FROM accounts_account)))",
                    [ACCOUNT_ID_FLOOR],
                )
        account = account_create(BENCH_EMAIL)
    token = token_issue(account)

    Job.objects.filter(account=account).delete()  # the previous run's job (translations cascade)
    done = job_state == "done"
    cues = 75  # 300 s of video, one cue every 4 s
    txt, srt, webvtt = subtitles(sentences("en", cues)) if done else (None, None, None)
    states = ["waiting", "preparing", "downloading", "converting", "processing", "aligning", "translating", "done"]
    states = states if done else states[:5]
    started = datetime.now(UTC) - timedelta(minutes=3)
    timeline = [[state, (started + timedelta(seconds=20 * i)).isoformat()] for i, state in enumerate(states)]
    job = Job.objects.create(
        account=account,
        url="https://example.com/videos/lecture-05.mp4",
        type=JobType.SUBTITLES,
        target_languages=["Spanish", "French"],
        state=JobState.DONE if done else JobState.PROCESSING,
        progress=100 if done else 55,
        timeline=timeline,
        title="Lecture 5",
        duration=300,
        detected_language="en",
        txt=txt,
        srt=srt,
        webvtt=webvtt,
    )
    for position, (language, code) in enumerate([("Spanish", "es"), ("French", "fr")]):
        _, srt, webvtt = subtitles(sentences(code, cues)) if done else (None, None, None)
        Translation.objects.create(
            job=job,
            position=position,
            language=language,
            language_code=code,
            state=TranslationState.DONE if done else TranslationState.PENDING,
            srt=srt,
            webvtt=webvtt,
        )
    connection.close()
    return {"account_id": account.pk, "token": token, "job_id": str(job.id)}
