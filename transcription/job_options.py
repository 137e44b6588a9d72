"""A job's options, declared once: every door's fields are made from this list.

An option is what a client chooses about a job beyond its source (`url` or `upload_id`): the spoken
language, verbatim text, names and terms to spell right, the subtitle format, a burned video's look,
the translations. From each declaration come the REST request serializers (and so the OpenAPI
document and the MCP tools' schemas), the MCP tools' parameters, the website's job form, the
OpenAI-compatible door's mapping, a retried job's options and the admin's "Options" section. A new
option added here reaches every door; tests/transcription/test_job_options.py adds a dummy one and
follows it through each.

Plain data: nothing of DRF, Django forms or the MCP SDK is imported here (a choice's values are its
model's TextChoices); each door turns a
declaration into its own kind of field (api/wire/serializers.py, api/doors/mcp_server.py, website/forms.py,
admin.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from django.db.models import TextChoices

from .models import FontSize, JobType, Quality, SubtitleFormat

# Whisper reads at most its last 223 tokens of a prompt (half its context); 800 characters is about
# that much English, so nothing a client sends is silently cut.
PROMPT_MAX_LENGTH = 800
TARGET_LANGUAGES_MAX = 10
# Key terms: at most this many, each this long. The recogniser is given them after its prompt in
# every window (asr.key_term_decoding), where Whisper keeps the last 223 tokens, so the prompt gives
# way before any term. An invented name is about 2.3 characters a token (bench/asr/key_terms.py's
# 32 names: 374 characters, 163 tokens); 20 terms of 20 characters are at most 438 characters, about
# 190 tokens of such names (233 for 20-character names made of the densest syllables). A limit the
# published schema states exactly (maxItems, maxLength): no request it allows is refused.
KEY_TERMS_MAX = 20
KEY_TERM_MAX_LENGTH = 20

ALL_TYPES = (JobType.TRANSCRIPT, JobType.SUBTITLES, JobType.BURNED)
TRANSLATED_TYPES = (JobType.SUBTITLES, JobType.BURNED)


class Kind(Enum):
    """What an option's value is; each door has one field class per kind."""

    BOOLEAN = "boolean"  # true or false
    CHOICE = "choice"  # one of `choices`
    TEXT = "text"  # free text up to `max_length`
    LANGUAGE = "language"  # one spoken language (a code or a name), or none to detect it
    LANGUAGES = "languages"  # a list of target languages (codes or names)
    TERMS = "terms"  # a list of short texts (names and terms), each up to `max_length`


@dataclass(frozen=True)
class JobOption:
    name: str  # the field's name at every door (REST body, MCP argument, form field)
    kind: Kind
    types: tuple[str, ...]  # the job types whose requests take it
    label: str  # the website's label
    help: str = ""  # the API's description (OpenAPI, MCP)
    help_by_type: dict[str, str] = field(default_factory=dict)  # a type's own description
    website_help: str = ""
    default: Any = None
    values: type[TextChoices] | None = None  # a choice's values (their model's choices)
    choices: tuple[tuple[str, str], ...] = ()  # (value, the website's label for it)
    max_length: int | None = None
    column: str = ""  # the Job's field that keeps it, when not named `name`
    in_playlists: bool = False  # transcribe_playlist takes it too (for the jobs of its types)
    openai_name: str = ""  # the OpenAI-compatible form field that carries it, if any

    @property
    def job_field(self) -> str:
        return self.column or self.name

    def describe(self, job_type: str) -> str:
        return self.help_by_type.get(job_type, self.help)


OPTIONS: tuple[JobOption, ...] = (
    JobOption(
        "language_code",
        Kind.LANGUAGE,
        ALL_TYPES,
        label="Spoken language",
        in_playlists=True,
        openai_name="language",
    ),
    JobOption(
        "verbatim",
        Kind.BOOLEAN,
        ALL_TYPES,
        label="Verbatim: keep filler words and repetitions",
        help="Keep filler words and repetitions",
        default=False,
        in_playlists=True,
    ),
    JobOption(
        "tag_audio_events",
        Kind.BOOLEAN,
        ALL_TYPES,
        label="Keep sounds as tags ([music], [applause], [laughter])",
        help="Keep non-speech events as bracketed tags ([music], [applause])",
        default=False,
    ),
    JobOption(
        "prompt",
        Kind.TEXT,
        ALL_TYPES,
        label="Names and words to spell right",
        help="Extension: names, jargon and spellings the recogniser should prefer (its initial prompt); "
        f"at most {PROMPT_MAX_LENGTH} characters",
        website_help="Optional: names, jargon and spellings the speech recogniser should prefer "
        f"(up to {PROMPT_MAX_LENGTH} characters).",
        default="",
        max_length=PROMPT_MAX_LENGTH,
        openai_name="prompt",
    ),
    JobOption(
        "key_terms",
        Kind.TERMS,
        ALL_TYPES,
        label="Key terms: names and terms the recording is full of",
        help="Extension: names and terms (products, people, places, jargon) recognition is biased towards, "
        f"spelt as they should be written; at most {KEY_TERMS_MAX} terms of 1 to {KEY_TERM_MAX_LENGTH} "
        "characters without control characters; spaces at either end are dropped, a repeated term kept once",
        website_help="Optional: one term per line, spelt as it should be written (Zorvex, Mr. Okonkwe-Laddis); "
        f"at most {KEY_TERMS_MAX} terms of up to {KEY_TERM_MAX_LENGTH} characters.",
        default=(),
        max_length=KEY_TERM_MAX_LENGTH,
        in_playlists=True,
    ),
    JobOption(
        "format",
        Kind.CHOICE,
        (JobType.SUBTITLES,),
        label="Subtitle format the API reports",
        website_help="Both SRT and WebVTT are always made; this is the one a client of the API reads.",
        default=SubtitleFormat.SRT,
        values=SubtitleFormat,
        choices=((SubtitleFormat.SRT, "SRT"), (SubtitleFormat.WEBVTT, "WebVTT")),
        column="subtitle_format",
    ),
    JobOption(
        "background",
        Kind.BOOLEAN,
        (JobType.BURNED,),
        label="Draw a dark box behind the subtitles (instead of an outline)",
        default=False,
        in_playlists=True,
    ),
    JobOption(
        "font_size",
        Kind.CHOICE,
        (JobType.BURNED,),
        label="Subtitle size",
        default=FontSize.DEFAULT,
        values=FontSize,
        choices=(
            (FontSize.DEFAULT, "Default (about 7% of the height)"),
            (FontSize.LARGE, "Large (about 10%)"),
            (FontSize.XL, "Extra large (about 12.5%)"),
        ),
        in_playlists=True,
    ),
    JobOption(
        "quality",
        Kind.CHOICE,
        (JobType.BURNED,),
        label="Video quality",
        default=Quality.DEFAULT,
        values=Quality,
        choices=((Quality.DEFAULT, "720p"), (Quality.HD, "1080p"), (Quality.UHD, "4K")),
        in_playlists=True,
    ),
    JobOption(
        "target_languages",
        Kind.LANGUAGES,
        TRANSLATED_TYPES,
        label="Translate into",
        help=f"Only for subtitles and burned; max {TARGET_LANGUAGES_MAX}",
        help_by_type={
            JobType.SUBTITLES: f"Also translate into these languages; max {TARGET_LANGUAGES_MAX}",
            JobType.BURNED: f"Also produce a burned video per translated language; max {TARGET_LANGUAGES_MAX}",
        },
        website_help="Subtitles and burned videos only. Language names or codes, separated by commas "
        f"(Spanish, fr); at most {TARGET_LANGUAGES_MAX}. Each one is charged as shown in the prices.",
        in_playlists=True,
    ),
)


def options_for(job_type: str, options: tuple[JobOption, ...] = OPTIONS) -> tuple[JobOption, ...]:
    """The options a request for one job of `job_type` takes, in declaration order."""
    return tuple(option for option in options if job_type in option.types)


def playlist_options(options: tuple[JobOption, ...] = OPTIONS) -> tuple[JobOption, ...]:
    """The options transcribe_playlist takes (each applies to the jobs of its types)."""
    return tuple(option for option in options if option.in_playlists)


def job_columns(job_type: str, values: dict[str, Any], options: tuple[JobOption, ...] = OPTIONS) -> dict[str, Any]:
    """A validated request's options under the Job's field names (format -> subtitle_format)."""
    return {option.job_field: values[option.name] for option in options_for(job_type, options) if option.name in values}


def retried_options(job: Any, options: tuple[JobOption, ...] = OPTIONS) -> dict[str, Any]:
    """A job's options as a new job of its type takes them again (support's retry)."""
    return {option.job_field: getattr(job, option.job_field) for option in options_for(job.type, options)}


def openai_options(form: dict[str, Any], options: tuple[JobOption, ...] = OPTIONS) -> dict[str, Any]:
    """The job options an OpenAI-compatible form carries (`language` -> `language_code`, `prompt`)."""
    return {option.name: form.get(option.openai_name) for option in options if option.openai_name}
