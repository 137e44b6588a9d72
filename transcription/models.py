import uuid

from django.db import models

from . import states


class JobType(models.TextChoices):
    TRANSCRIPT = "transcript"
    SUBTITLES = "subtitles"
    BURNED = "burned"


class JobState(models.TextChoices):
    WAITING = states.WAITING
    PREPARING = states.PREPARING
    DOWNLOADING = states.DOWNLOADING
    CONVERTING = states.CONVERTING
    UPLOADING = states.UPLOADING
    PROCESSING = states.PROCESSING
    MERGING = states.MERGING
    ALIGNING = states.ALIGNING
    TRANSLATING = states.TRANSLATING
    BURNING = states.BURNING
    DONE = states.DONE
    FAILED = states.FAILED


class TranslationState(models.TextChoices):
    PENDING = states.TRANSLATION_PENDING
    TRANSLATING = states.TRANSLATION_TRANSLATING
    BURNING = states.TRANSLATION_BURNING
    DONE = states.TRANSLATION_DONE
    FAILED = states.TRANSLATION_FAILED


class Quality(models.TextChoices):
    DEFAULT = "default"
    HD = "hd"
    UHD = "uhd"


class FontSize(models.TextChoices):
    DEFAULT = "default"
    LARGE = "large"
    XL = "xl"


class SubtitleFormat(models.TextChoices):
    SRT = "srt"
    WEBVTT = "webvtt"


class FailureReason(models.TextChoices):
    """Why a job failed, in a word an operator can count (metrics); `error` says it to the client."""

    SOURCE = "source", "the video could not be fetched"
    MEDIA = "media", "the file could not be read or converted"
    MODEL = "model", "the speech model could not be loaded"
    BURN = "burn", "the subtitles could not be drawn"
    STORAGE = "storage", "the file store could not be reached"
    BALANCE = "balance", "the account had no minutes for it"
    STALLED = "stalled", "its workers kept dying"
    CANCELLED = "cancelled", "cancelled by support"
    INTERNAL = "internal", "an unexpected error"
    OTHER = "other", "another reason"


class UploadState(models.TextChoices):
    RECEIVING = "receiving"  # bytes are still arriving (a tus upload between two PATCHes)
    READY = "ready"  # whole, and ffprobe found audio in it: jobs may name it


class Upload(models.Model):
    """A file an account sent us instead of a link (transcription.api.doors.uploads): the media stage reads
    it from storage where it would download a URL. Deleted by the retention sweep (retention.py)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="uploads")
    filename = models.CharField(max_length=255, blank=True, help_text="As the client named it.")
    size = models.PositiveBigIntegerField(help_text="Bytes the client announced.")
    received = models.PositiveBigIntegerField(default=0, help_text="Bytes stored so far (tus Upload-Offset).")
    state = models.CharField(max_length=10, choices=UploadState.choices, default=UploadState.RECEIVING)
    duration = models.PositiveIntegerField(null=True, blank=True, help_text="Seconds of audio, rounded up.")
    has_video = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return self.filename or str(self.id)


class JobOptions(models.Model):
    """What the client asked for; shared by a job and the batch that queued it."""

    type = models.CharField(max_length=12, choices=JobType.choices)
    language_code = models.CharField(max_length=12, null=True, blank=True)
    verbatim = models.BooleanField(default=False)
    tag_audio_events = models.BooleanField(default=False)
    quality = models.CharField(max_length=8, choices=Quality.choices, default=Quality.DEFAULT)
    font_size = models.CharField(max_length=8, choices=FontSize.choices, default=FontSize.DEFAULT)
    background = models.BooleanField(default=False)
    target_languages = models.JSONField(default=list, blank=True, help_text="As the client sent them.")
    prompt = models.TextField(
        blank=True, default="", help_text="Names and spellings the recogniser should prefer (its initial prompt)."
    )
    key_terms = models.JSONField(
        default=list, blank=True, help_text="Names and terms recognition is biased towards, as the client sent them."
    )

    class Meta:
        abstract = True


class Batch(JobOptions):
    """A playlist or channel queued as separate jobs."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="batches")
    url = models.TextField()
    title = models.CharField(max_length=500, blank=True)
    total = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "batches"
        ordering = ["-created_at"]

    def __str__(self):
        return self.title or str(self.id)


class Job(JobOptions):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="jobs")
    batch = models.ForeignKey(Batch, null=True, blank=True, on_delete=models.PROTECT, related_name="jobs")
    position = models.PositiveIntegerField(default=0, help_text="Queue order inside its batch.")
    url = models.TextField(help_text="The video's link, or upload:<id> for an uploaded file.")
    upload = models.ForeignKey(Upload, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs")
    subtitle_format = models.CharField(max_length=8, choices=SubtitleFormat.choices, default=SubtitleFormat.SRT)

    state = models.CharField(max_length=12, choices=JobState.choices, default=JobState.WAITING, db_index=True)
    progress = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(null=True, blank=True)
    failure_reason = models.CharField(max_length=12, choices=FailureReason.choices, blank=True, default="")
    # (state, ISO time it was entered), in order: how long each stage took.
    timeline = models.JSONField(default=list, blank=True)
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Times the sweeper re-queued a stage whose worker died."
    )
    # Set while a worker runs one of the job's stages and renewed by its heartbeat: a second delivery
    # of the task leaves the job alone, and the sweeper never takes a long stage for a dead worker.
    lease_until = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="A worker is running this job until at least then."
    )

    title = models.CharField(max_length=500, blank=True)
    duration = models.PositiveIntegerField(null=True, blank=True, help_text="Seconds of source video, rounded up.")
    detected_language = models.CharField(max_length=12, null=True, blank=True)
    detected_language_probability = models.FloatField(
        null=True,
        blank=True,
        help_text="Whisper's probability for the detected language (0-1); empty when the language was given.",
    )
    is_preview = models.BooleanField(default=False)
    preview_minutes = models.PositiveIntegerField(null=True, blank=True)

    txt = models.TextField(null=True, blank=True)
    srt = models.TextField(null=True, blank=True)
    webvtt = models.TextField(null=True, blank=True)
    burned_video = models.CharField(max_length=500, null=True, blank=True, help_text="Storage name of the video.")
    # {"1": "Alice"}: names of "Speaker N", given by the account holder or an enrolled voice; the text
    # above keeps "Speaker N" and the names are laid over it when read (pipeline.transcripts.speaker_names).
    speaker_names = models.JSONField(default=dict, blank=True)
    # The job reads a voice sample for an enrolled Voice: no recognition, no text; shown with the voice.
    is_voice_sample = models.BooleanField(default=False, editable=False)

    # Retention counts from here, not from updated_at: an edit or a rename of a done job writes its
    # row, and must not keep its files longer (issue 56). Set where a job ends (services.job_finish,
    # job_fail) and where a paid re-burn delivers new videos (reburn_services.reburn_end).
    ended_at = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="When the job last ended; its files are kept from then."
    )
    # What the job's files take in storage (its kept source, burned videos, the audio kept for the
    # player, the copies handed between workers), measured after each stage and each deletion
    # (services.job_files_measured): part of the account's storage quota (quota.py).
    kept_bytes = models.PositiveBigIntegerField(
        default=0, editable=False, help_text="Bytes of storage the job's files take (counted in the quota)."
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["batch", "position"])]
        constraints = [
            models.CheckConstraint(condition=models.Q(progress__lte=100), name="job_progress_at_most_100"),
        ]

    def __str__(self):
        return f"{self.type} {self.id}"


class JobSegments(models.Model):
    """The recognised segments and words of a finished job, kept apart from the Job row (a long
    video's words are megabytes that polls never read): the OpenAI-compatible door's verbose_json
    and diarized_json answers are built from them."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, primary_key=True, related_name="segments")
    language = models.CharField(max_length=12, blank=True)
    duration = models.FloatField(default=0.0, help_text="Seconds of audio recognised.")
    segments = models.JSONField(default=list, help_text="[{start, end, text, speaker, words: [{start, end, word}]}]")
    # The owner's corrections (api.front.editing): the recognition as the speech stage kept it, copied at
    # the first edit (null until then); the document's version, which its ETag names (each edit adds
    # one, so two editors never overwrite each other); and every edit's who, when and what.
    original = models.JSONField(null=True, blank=True, help_text="The segments as recognised, before any edit.")
    version = models.PositiveIntegerField(default=1)
    history = models.JSONField(default=list, blank=True, help_text="[{at, by, door, ops, version}]")
    # An edited document is kept in parts (SegmentsPart), so that an edit writes the part it changed,
    # not the megabytes of a long job's document: `parts` holds their sizes in order; null until the
    # first edit (the document is `segments`), after which `segments` is empty and `original` holds
    # the recognition. Read the document with document().
    parts = models.JSONField(null=True, blank=True, help_text="Segments in each SegmentsPart, in order.")

    def document(self) -> list[dict]:
        """The segments document as it is now (edited or not)."""
        if self.parts is None:
            return self.segments
        rows = self.part_rows.order_by("position").values_list("segments", flat=True)
        return [segment for part in rows for segment in part]


class SegmentsPart(models.Model):
    """A run of consecutive segments of an edited document (JobSegments.parts)."""

    job = models.ForeignKey(JobSegments, on_delete=models.CASCADE, related_name="part_rows")
    position = models.PositiveIntegerField()
    segments = models.JSONField(default=list)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "position"], name="one_segments_part_per_position")]


class RecognitionChunk(models.Model):
    """A piece of a long job's audio recognised by whichever asr worker is free (issue 44: one long
    video across the fleet). The job's coordinating worker plans them, one row per piece; any
    worker claims one (lease_until, renewed like a job's claim), recognises it and stores its
    transcript here; a claim that lapsed (its worker died) frees the piece for another. The rows
    stay after the merge (results cleared): who recognised what, for support staff and the tests."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="recognition_chunks")
    index = models.PositiveIntegerField()
    start = models.FloatField(help_text="Seconds from the audio's start.")
    end = models.FloatField()
    # the speech found in [start, end] by the coordinator's one VAD pass ([[start, end], ...]): a
    # chunk worker recognises exactly what one worker alone would have
    speech = models.JSONField(default=list)
    done = models.BooleanField(default=False)
    planned_by = models.CharField(max_length=200, blank=True, help_text="The coordinating worker.")
    claimed_by = models.CharField(max_length=200, blank=True, help_text="The worker that recognises it (or did).")
    lease_until = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True, help_text="The chunk's transcript until the merge.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="one_recognition_chunk_per_index")]


class Translation(models.Model):
    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="translations")
    position = models.PositiveSmallIntegerField(default=0)
    language = models.CharField(max_length=100, help_text="As the client sent it.")
    language_code = models.CharField(max_length=12, help_text="ISO 639 code it was read as.")
    state = models.CharField(max_length=12, choices=TranslationState.choices, default=TranslationState.PENDING)
    srt = models.TextField(null=True, blank=True)
    webvtt = models.TextField(null=True, blank=True)
    burned_video = models.CharField(max_length=500, null=True, blank=True)
    error = models.TextField(null=True, blank=True)
    # After an edit of a done job (issue 46): the new cues, each with the translated lines it keeps
    # or null to translate again (pipeline.transcripts.retranslation), and the seconds charged for them; null
    # when the translation is up to date with its transcript.
    redo = models.JSONField(null=True, blank=True, editable=False, help_text="{plan, charged}")
    # The cues `srt` and `webvtt` were written from (captions.cue_records: times, lines, voices),
    # written with them: what a retranslation, a burn and the OpenAI door read, never the SRT.
    cues = models.JSONField(null=True, blank=True, editable=False, help_text="[{start, end, lines, speakers}]")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["job", "position"]
        constraints = [
            models.UniqueConstraint(fields=["job", "language_code"], name="one_translation_per_language"),
        ]

    def __str__(self):
        return f"{self.language} ({self.state})"


class VoiceState(models.TextChoices):
    PROCESSING = "processing"
    READY = "ready"
    FAILED = "failed"


class Voice(models.Model):
    """An enrolled voice: a name and the embedding of its sample, which names the speaker of a later
    job of the same account who sounds like it. The sample itself is read by a job of its own
    (is_voice_sample) and never kept: the embedding is all that stays, until the voice or the
    account is deleted. Its state follows from that job: `ready` once the embedding is stored,
    `failed` (with the job's error) when the job failed, else `processing`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="voices")
    name = models.CharField(max_length=40)
    job = models.OneToOneField(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="voice")
    embedding = models.BinaryField(null=True, blank=True, editable=False, help_text="float32 values.")
    encoder = models.CharField(max_length=40, blank=True, help_text="The speaker encoder that made the embedding.")
    seconds = models.PositiveIntegerField(null=True, blank=True, help_text="Length of the sample, rounded up.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self):
        return self.name


class LineEntry(models.Model):
    """A job waiting in a queue's line, where the lines are kept in the database: without REDIS_URL
    (the embedded default that `make run` starts; transcription.scheduling.line_services). Its fields are the
    strings and tags Redis's lines hold, so the same rule gives the same order."""

    queue = models.CharField(max_length=8)
    job = models.CharField(max_length=64)
    account = models.CharField(max_length=32)
    tag = models.BigIntegerField()
    since = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["queue", "job"], name="one_line_entry_per_queue_and_job")]
        indexes = [
            models.Index(fields=["queue", "tag", "job"], name="line_entry_order"),
            models.Index(fields=["queue", "account"], name="line_entry_account"),
        ]


class LineTurn(models.Model):
    """A line's tags kept in the database: its clock (account ""), the tag of the job taken last,
    and the next tag of each account while it has jobs waiting (transcription.scheduling.line_services)."""

    queue = models.CharField(max_length=8)
    account = models.CharField(max_length=32, blank=True)
    tag = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["queue", "account"], name="one_line_turn_per_account")]
