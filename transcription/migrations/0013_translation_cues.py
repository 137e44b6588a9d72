"""Translation.cues: the cues a translation's SRT and WebVTT are written from, kept with them so that
no stage reads the SRT back. Translations made before are read from their SRT once, here (the
voices from their WebVTT), as the stages read them until now."""

import re

import pysubs2
from django.db import migrations, models

_VOICE = re.compile(r"<v Speaker (\d+)>")


def _cues(srt: str, webvtt: str | None) -> list[dict]:
    subs = pysubs2.SSAFile.from_string(srt, format_="srt", keep_html_tags=True) if srt.strip() else []
    cues = []
    for event in subs:
        lines = [line.strip() for line in re.split(r"\\N|\n", event.text)]
        cues.append({"start": event.start / 1000, "end": event.end / 1000, "lines": [x for x in lines if x]})
    blocks = [b for b in re.split(r"\n\s*\n", (webvtt or "").strip()) if "-->" in b]
    voices = [[int(n) for n in _VOICE.findall(block)] for block in blocks]
    for cue, speakers in zip(cues, voices if len(voices) == len(cues) else [[]] * len(cues)):
        cue["speakers"] = speakers
    return cues


def keep_cues(apps, schema_editor):
    Translation = apps.get_model("transcription", "Translation")
    for translation in Translation.objects.filter(cues=None).exclude(srt=None).iterator():
        translation.cues = _cues(translation.srt, translation.webvtt)
        translation.save(update_fields=["cues"])


class Migration(migrations.Migration):
    dependencies = [("transcription", "0012_job_ended_at_kept_bytes")]

    operations = [
        migrations.AddField(
            model_name="translation",
            name="cues",
            field=models.JSONField(
                blank=True, editable=False, help_text="[{start, end, lines, speakers}]", null=True
            ),
        ),
        migrations.RunPython(keep_cues, migrations.RunPython.noop),
    ]
