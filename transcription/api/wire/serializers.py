"""Request and response shapes of spec/api-v1.md. Class names give the OpenAPI schema names."""

from typing import Any

from django.conf import settings
from rest_framework import serializers

from transcription.api.wire.fields import (
    KeyTermsField,
    LanguageCodeField,
    SpeakerNameField,
    SpeakerNamesField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    TargetLanguagesField,
    UrlField,
)
from transcription.job_options import (
    KEY_TERMS_MAX,
    OPTIONS,
    TARGET_LANGUAGES_MAX,
    JobOption,
    Kind,
    options_for,
    playlist_options,
)
from transcription.models import FontSize, JobState, JobType, Quality, SubtitleFormat, TranslationState, VoiceState
from transcription.pipeline.transcripts import transcript_edits
from transcription.pipeline.types import AUDIO_EVENTS

# --- Requests --------------------------------------------------------------------------------


def option_field(option: JobOption, job_type: str | None = None) -> serializers.Field:
    """The REST field of a job option (transcription.job_options): its kind's strict field, with the
    declared default and description (`job_type`'s own, where it has one)."""
    help_text = option.describe(job_type) if job_type else option.help
    described: dict[str, Any] = {"help_text": help_text} if help_text else {}
    if option.kind is Kind.BOOLEAN:
        return StrictBooleanField(required=False, default=option.default, **described)
    if option.kind is Kind.CHOICE:
        assert option.values is not None, f"{option.name}: a choice declares its values"
        return StrictChoiceField(choices=option.values.choices, required=False, default=option.default, **described)
    if option.kind is Kind.TEXT:
        limit: dict[str, Any] = {"max_length": option.max_length} if option.max_length else {}
        return StrictCharField(required=False, default=option.default, allow_blank=True, **described, **limit)
    if option.kind is Kind.LANGUAGE:
        return LanguageCodeField(**described)
    if option.kind is Kind.TERMS:
        assert option.max_length is not None, f"{option.name}: a list of terms declares their length"
        return KeyTermsField(max_length=KEY_TERMS_MAX, term_length=option.max_length, **described)
    return TargetLanguagesField(max_length=TARGET_LANGUAGES_MAX, **described)


def option_fields(options: tuple[JobOption, ...], job_type: str | None = None) -> dict[str, serializers.Field]:
    return {option.name: option_field(option, job_type) for option in options}


class SourceSerializer(serializers.Serializer):
    # One source of media: a link (`url`) or an upload (`upload_id`). (A comment, not a docstring:
    # drf-spectacular would publish a docstring as every request schema's description.)

    url = UrlField(required=False, help_text="Video URL (or `upload_id`)")
    upload_id = serializers.UUIDField(
        required=False,
        help_text="Extension: the id of a file sent to `POST /v1/api/uploads`, in place of `url`",
        error_messages={"invalid": "Input should be a valid UUID."},
    )

    def to_internal_value(self, data):
        """The fields, and exactly one source: a link (`url`) or an upload (`upload_id`). Checked
        beside the fields' own errors, so one 422 still names every offending field."""
        errors = {}
        try:
            attrs = super().to_internal_value(data)
        except serializers.ValidationError as error:
            errors, attrs = dict(error.detail), {}
        sent = set(data) if isinstance(data, dict) else set()
        if not sent & {"url", "upload_id"}:
            errors.setdefault("url", [serializers.ErrorDetail("This field is required.", code="required")])
        elif {"url", "upload_id"} <= sent:
            message = "Send either url or upload_id, not both."
            errors.setdefault("upload_id", [serializers.ErrorDetail(message, code="not_allowed")])
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


def job_request_serializer(name: str, job_type: str, options: tuple[JobOption, ...] = OPTIONS) -> type:
    """The request serializer of one job of `job_type`: a source and the type's options. `name` is
    the class's, which names the OpenAPI schema."""
    return type(name, (SourceSerializer,), {**option_fields(options_for(job_type, options), job_type)})


class PlaylistRequestBase(serializers.Serializer):
    url = UrlField(help_text="Playlist or channel URL")
    type = StrictChoiceField(choices=JobType.choices, required=False, default=JobType.TRANSCRIPT)

    def validate(self, attrs):
        if attrs.get("target_languages") and attrs["type"] == JobType.TRANSCRIPT:
            raise serializers.ValidationError(
                {
                    "target_languages": serializers.ErrorDetail(
                        "target_languages is only allowed for type 'subtitles' or 'burned'.", code="not_allowed"
                    )
                }
            )
        return attrs


def playlist_request_serializer(options: tuple[JobOption, ...] = OPTIONS) -> type:
    return type("TranscribePlaylistRequestSerializer", (PlaylistRequestBase,), option_fields(playlist_options(options)))


TranscribeRequestSerializer = job_request_serializer("TranscribeRequestSerializer", JobType.TRANSCRIPT)
SubtitlesRequestSerializer = job_request_serializer("SubtitlesRequestSerializer", JobType.SUBTITLES)
BurnSubtitlesRequestSerializer = job_request_serializer("BurnSubtitlesRequestSerializer", JobType.BURNED)
TranscribePlaylistRequestSerializer = playlist_request_serializer()


class PlaylistQuerySerializer(serializers.Serializer):
    url = UrlField(help_text="Playlist or channel URL")
    type = StrictChoiceField(choices=JobType.choices, required=False, default=JobType.TRANSCRIPT)
    quality = StrictChoiceField(choices=Quality.choices, required=False, default=Quality.DEFAULT)
    target_languages = TargetLanguagesField()


class SpeakerNamesRequestSerializer(serializers.Serializer):
    names = SpeakerNamesField()


class SegmentEditSerializer(serializers.Serializer):
    """One correction of a job's transcript (api.front.editing); which fields an `op` needs is checked
    with the segments in hand (pipeline.transcripts.transcript_edits), each refusal naming its field."""

    op = StrictChoiceField(choices=[(op, op) for op in transcript_edits.OPS], help_text="What the edit does")
    index = serializers.IntegerField(
        required=False, min_value=0, help_text="The segment, as the last GET numbered it (every op but restore)"
    )
    text = serializers.CharField(
        required=False,
        trim_whitespace=False,
        min_length=1,
        max_length=transcript_edits.TEXT_MAX_CHARS,
        help_text="text: the segment's new words (1 to 500 characters, one line, no `-->`, no control or direction-override characters)",
    )
    speaker = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=transcript_edits.SPEAKER_MAX,
        help_text="speaker: a speaker of the job, or the next new number",
    )
    from_word = serializers.IntegerField(
        required=False, min_value=0, help_text="speaker: the first word (0-based) of the run given to `speaker`"
    )
    to_word = serializers.IntegerField(
        required=False, min_value=0, help_text="speaker: the last word of that run (inclusive)"
    )
    word = serializers.IntegerField(
        required=False, min_value=1, help_text="split: the word that begins the second segment"
    )
    start = serializers.FloatField(required=False, min_value=0, help_text="times: the new start, in seconds")
    end = serializers.FloatField(required=False, min_value=0, help_text="times: the new end, in seconds")


class SegmentEditsRequestSerializer(serializers.Serializer):
    edits = serializers.ListField(child=SegmentEditSerializer(), min_length=1, max_length=settings.EDITS_PER_SAVE)
    dry_run = StrictBooleanField(
        required=False,
        default=False,
        help_text="true: nothing is saved; the answer is the document the edits would make, with the `charge` "
        "a save would make now (the quote)",
    )


class VoiceRequestSerializer(SourceSerializer):
    """A name and one source, as a job takes it: a link (`url`) or an upload (`upload_id`)."""

    # The sample is read for its voice alone: none of a job's options apply.

    name = SpeakerNameField(help_text="What the voice's speaker is called in later transcripts")
    url = UrlField(required=False, help_text="Address of a 10 to 120 second recording of that one voice")


# --- Responses -------------------------------------------------------------------------------


class TranslationApiResponseSerializer(serializers.Serializer):
    language = serializers.CharField()
    state = serializers.ChoiceField(choices=TranslationState.choices)
    srt = serializers.CharField(allow_null=True, required=False)
    webvtt = serializers.CharField(allow_null=True, required=False)
    burned_video_url = serializers.URLField(allow_null=True, required=False)
    error = serializers.CharField(allow_null=True, required=False)


class TranscriptionApiResponseSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    state = serializers.ChoiceField(choices=JobState.choices)
    progress = serializers.IntegerField(min_value=0, max_value=100)
    type = serializers.ChoiceField(choices=JobType.choices)
    verbatim = serializers.BooleanField()
    quality = serializers.ChoiceField(choices=Quality.choices)
    font_size = serializers.ChoiceField(choices=FontSize.choices)
    background = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    txt = serializers.CharField(allow_null=True, required=False)
    srt = serializers.CharField(allow_null=True, required=False)
    webvtt = serializers.CharField(allow_null=True, required=False)
    burned_video_url = serializers.URLField(
        allow_null=True, required=False, help_text="Signed link to the burned video (7 days); answers byte ranges"
    )
    video_url = serializers.CharField(allow_null=True, required=False)
    duration = serializers.IntegerField(allow_null=True, required=False)
    error = serializers.CharField(allow_null=True, required=False)
    is_preview = serializers.BooleanField(required=False, default=False)
    preview_minutes = serializers.IntegerField(allow_null=True, required=False)
    translations = TranslationApiResponseSerializer(many=True, required=False)


class QueuedJobSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="The job's id: poll GET /v1/api/transcription/{id}")


class QueuedSubtitlesJobSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="The job's id: poll GET /v1/api/transcription/{id}")
    format = serializers.ChoiceField(choices=SubtitleFormat.choices)


class QueuedBatchSerializer(serializers.Serializer):
    batch_id = serializers.UUIDField(help_text="Poll every job at once with GET /v1/api/batch/{id}")
    title = serializers.CharField(allow_blank=True)
    count = serializers.IntegerField()
    skipped = serializers.IntegerField()
    ids = serializers.ListField(child=serializers.UUIDField(), help_text="Job ids in queue order")


class BatchStatusSerializer(serializers.Serializer):
    batch_id = serializers.UUIDField()
    title = serializers.CharField(allow_blank=True)
    items = TranscriptionApiResponseSerializer(many=True)


class PlaylistVideoSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    duration = serializers.IntegerField()
    thumbnail = serializers.CharField(allow_blank=True)
    is_age_restricted = serializers.BooleanField(required=False, default=False)
    is_live = serializers.BooleanField(required=False, default=False)
    language = serializers.CharField(allow_null=True, required=False)


class PlaylistPreviewSerializer(serializers.Serializer):
    id = serializers.CharField(allow_blank=True)
    title = serializers.CharField(allow_blank=True)
    total = serializers.IntegerField()
    skipped = serializers.IntegerField()
    max_videos = serializers.IntegerField()
    is_channel = serializers.BooleanField()
    tab = serializers.CharField()
    videos = PlaylistVideoSerializer(many=True)
    needed_seconds = serializers.IntegerField()
    remaining_seconds = serializers.IntegerField()
    fits = serializers.BooleanField()
    unknown_durations = serializers.IntegerField(
        required=False,
        help_text="Videos whose length could not be found (the listing gave none and reading the media's header "
        "failed or took too long): their `duration` is 0, they are not in `needed_seconds`, and `fits` is false.",
    )


class QueuedVoiceSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="The voice's id: it is listed by GET /v1/api/voices")
    name = serializers.CharField()
    state = serializers.ChoiceField(choices=VoiceState.choices)


class VoiceSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    state = serializers.ChoiceField(
        choices=VoiceState.choices,
        help_text="`processing` while the sample is read, `ready` once the voice names speakers, `failed` "
        "(with `error`) when the sample could not be used",
    )
    error = serializers.CharField(allow_null=True, help_text="Why the sample could not be used; null unless failed")
    seconds = serializers.IntegerField(allow_null=True, help_text="Length of the sample (what it was charged as)")
    created_at = serializers.DateTimeField()


class SegmentWordSerializer(serializers.Serializer):
    start = serializers.FloatField()
    end = serializers.FloatField()
    word = serializers.CharField()
    probability = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        help_text="How sure the speech model was of the word (0 to 1); 1 for a word a person typed. "
        "Absent in transcripts made before it was kept.",
    )


class SegmentSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="What an edit names the segment by")
    start = serializers.FloatField()
    end = serializers.FloatField()
    speaker = serializers.IntegerField(help_text="The N of `Speaker N`")
    text = serializers.CharField()
    words = SegmentWordSerializer(many=True)
    audio_event = serializers.ChoiceField(
        choices=list(AUDIO_EVENTS),
        required=False,
        help_text="On a sound heard where nobody speaks (`tag_audio_events`): what it is; its text is the tag "
        "(`[music]`), its start and end the sound's. Absent on speech.",
    )


class EditChargeSerializer(serializers.Serializer):
    seconds = serializers.IntegerField(
        help_text="Minutes' seconds charged (quoted, with dry_run) for translating the changed cues again: their "
        "seconds per translation, less what a retranslation still waiting was charged for them already"
    )
    minutes = serializers.CharField(help_text="The same, for people")
    cues = serializers.IntegerField(help_text="Cues to translate again (the most of any language)")
    languages = serializers.ListField(child=serializers.CharField(), help_text="The translations made again")
    error = serializers.CharField(
        allow_null=True, help_text="The balance does not cover it: nothing charged, those translations failed"
    )


class SegmentsDocumentSerializer(serializers.Serializer):
    segments = SegmentSerializer(many=True)
    version = serializers.IntegerField(help_text="Raised by one by every saved PATCH")
    etag = serializers.CharField(help_text="The ETag header's value: send it back as If-Match")
    edited = serializers.BooleanField(help_text="Whether the transcript was ever corrected")
    history = serializers.ListField(
        child=serializers.DictField(),
        help_text="Every saved PATCH: `at`, `by` (the login's id), `door`, `ops`, `version`",
    )
    dry_run = serializers.BooleanField(
        required=False, help_text="PATCH only: true when nothing was saved (the document is what a save would make)"
    )
    charge = EditChargeSerializer(required=False, help_text="PATCH only: what the save charged, or would charge")


class ErrorResponseSerializer(serializers.Serializer):
    detail = serializers.CharField()


class ValidationErrorSerializer(serializers.Serializer):
    loc = serializers.ListField(child=serializers.JSONField())
    msg = serializers.CharField()
    type = serializers.CharField()


class HTTPValidationErrorSerializer(serializers.Serializer):
    detail = ValidationErrorSerializer(many=True)
