"""A job's txt, srt and webvtt compressed with lz4 instead of pglz where the server has it
(PostgreSQL 14+ built with lz4, as Debian's): a correction of a 2-hour transcript writes all three
again (some 400 kB), and pglz's compression took 20-30 ms of it, lz4's 8-12 (bench/edits)."""

from django.db import migrations

COLUMNS = ("txt", "srt", "webvtt")


def _set(apps, schema_editor, method: str) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql" or connection.pg_version < 140000:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
        if row is None or method not in row[0]:
            return
        for column in COLUMNS:
            cursor.execute(f"ALTER TABLE transcription_job ALTER COLUMN {column} SET COMPRESSION {method}")


class Migration(migrations.Migration):
    dependencies = [("transcription", "0009_segments_parts")]

    operations = [
        migrations.RunPython(
            lambda apps, schema_editor: _set(apps, schema_editor, "lz4"),
            lambda apps, schema_editor: _set(apps, schema_editor, "pglz"),
        )
    ]
