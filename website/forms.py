"""The job form. It only turns what a browser posts (text and checkboxes) into the JSON body the
API takes; the API's serializers then check it, so a mistake gets the API's own message, on the
field it names."""

from __future__ import annotations

from django import forms

from transcription.models import FontSize, JobType, Quality, SubtitleFormat
from transcription.pipeline.languages import speech_language_choices

TYPE_CHOICES = [
    (JobType.TRANSCRIPT, "Transcript: text with timestamps and speakers"),
    (JobType.SUBTITLES, "Subtitles: SRT and WebVTT files"),
    (JobType.BURNED, "Video with the subtitles burned in"),
]
QUALITY_CHOICES = [(Quality.DEFAULT, "720p"), (Quality.HD, "1080p"), (Quality.UHD, "4K")]
FONT_SIZE_CHOICES = [
    (FontSize.DEFAULT, "Default (about 7% of the height)"),
    (FontSize.LARGE, "Large (about 10%)"),
    (FontSize.XL, "Extra large (about 12.5%)"),
]
FORMAT_CHOICES = [(SubtitleFormat.SRT, "SRT"), (SubtitleFormat.WEBVTT, "WebVTT")]


class JobForm(forms.Form):
    # Every field but `type` is optional here: the API's serializer says what is missing or wrong.
    url = forms.CharField(
        label="Video, playlist or channel URL",
        required=False,
        widget=forms.URLInput(attrs={"placeholder": "https://…", "autocomplete": "url", "inputmode": "url"}),
    )
    # The file itself goes to the uploads' door first (job_form.js, with a progress bar); the form
    # then carries the upload's id in place of a URL.
    upload_id = forms.CharField(required=False, widget=forms.HiddenInput)
    playlist = forms.BooleanField(
        label="This is a playlist or channel: queue each of its public videos (up to 25) as a job",
        required=False,
    )
    type = forms.ChoiceField(
        label="What to make", choices=TYPE_CHOICES, initial=JobType.TRANSCRIPT, widget=forms.RadioSelect
    )
    language_code = forms.CharField(
        label="Spoken language",
        required=False,
        widget=forms.Select(choices=[("", "Detect it")]),
    )
    target_languages = forms.CharField(
        label="Translate into",
        required=False,
        help_text="Subtitles and burned videos only. Language names or codes, separated by commas "
        "(Spanish, fr); at most 10. Each one is charged as shown in the prices.",
    )
    format = forms.CharField(
        label="Subtitle format the API reports",
        required=False,
        initial=SubtitleFormat.SRT,
        help_text="Both SRT and WebVTT are always made; this is the one a client of the API reads.",
        widget=forms.Select(choices=FORMAT_CHOICES),
    )
    quality = forms.CharField(
        label="Video quality", required=False, initial=Quality.DEFAULT, widget=forms.Select(choices=QUALITY_CHOICES)
    )
    font_size = forms.CharField(
        label="Subtitle size", required=False, initial=FontSize.DEFAULT, widget=forms.Select(choices=FONT_SIZE_CHOICES)
    )
    background = forms.BooleanField(
        label="Draw a dark box behind the subtitles (instead of an outline)", required=False
    )
    prompt = forms.CharField(
        label="Names and words to spell right",
        required=False,
        help_text="Optional: names, jargon and spellings the speech recogniser should prefer (up to 800 characters).",
    )
    verbatim = forms.BooleanField(label="Verbatim: keep filler words and repetitions", required=False)
    tag_audio_events = forms.BooleanField(label="Keep sounds as tags ([music], [applause], [laughter])", required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["language_code"].widget.choices = [("", "Detect it"), *speech_language_choices()]

    def api_request(self) -> tuple[str, dict]:
        """The front door's operation for this request (transcription.api.front_door.OPERATIONS)
        and the JSON body the API would have received."""
        data = self.cleaned_data
        targets = [item.strip() for item in data["target_languages"].split(",") if item.strip()]
        source = (
            {"upload_id": data["upload_id"]} if data["upload_id"] and not data["playlist"] else {"url": data["url"]}
        )
        body = {
            **source,
            "language_code": data["language_code"] or None,
            "verbatim": data["verbatim"],
        }
        job_type = data["type"]
        if data["playlist"]:
            body.update(type=job_type, target_languages=targets or None)
            if job_type == JobType.BURNED:
                body.update(quality=data["quality"], font_size=data["font_size"], background=data["background"])
            return "transcribe_playlist", body
        body["tag_audio_events"] = data["tag_audio_events"]
        if data["prompt"]:
            body["prompt"] = data["prompt"]
        if job_type == JobType.TRANSCRIPT:
            return "transcribe", body
        body["target_languages"] = targets or None
        if job_type == JobType.SUBTITLES:
            body["format"] = data["format"] or SubtitleFormat.SRT
            return "create_subtitles", body
        body.update(quality=data["quality"], font_size=data["font_size"], background=data["background"])
        return "burn_subtitles", body

    def add_api_errors(self, errors: list[dict]) -> None:
        """Put the API's 422 entries on the fields they name (an item of a list by its number)."""
        for error in errors:
            loc = error["loc"][1:]
            field = loc[0] if loc and loc[0] in self.fields and loc[0] != "upload_id" else None
            message = error["msg"]
            if field and len(loc) > 1 and isinstance(loc[1], int):
                message = f"Item {loc[1] + 1}: {message}"
            self.add_error(field, message)
