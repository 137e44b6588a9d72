"""The job form. It only turns what a browser posts (text and checkboxes) into the JSON body the
API takes; the API's serializers then check it, so a mistake gets the API's own message, on the
field it names."""

from __future__ import annotations

from django import forms

from transcription.api.front import operations
from transcription.api.front.caller import Operation
from transcription.job_options import OPTIONS, JobOption, Kind, options_for, playlist_options
from transcription.models import JobType
from transcription.pipeline.recognition.languages import speech_language_choices

TYPE_CHOICES = [
    (JobType.TRANSCRIPT, "Transcript: text with timestamps and speakers"),
    (JobType.SUBTITLES, "Subtitles: SRT and WebVTT files"),
    (JobType.BURNED, "Video with the subtitles burned in"),
]


def option_form_field(option: JobOption) -> forms.Field:
    """The form field of a job option (transcription.job_options). Only text and checkboxes: the
    API's serializer checks the value and says what is wrong."""
    if option.kind is Kind.BOOLEAN:
        return forms.BooleanField(label=option.label, required=False)
    widget: forms.Widget | None = None
    if option.kind is Kind.TERMS:
        # one term per line: a firm's name may hold a comma ("Fox, Lee & Partners"), and a glossary
        # pasted from a spreadsheet's column comes one a line
        widget = forms.Textarea(attrs={"rows": 3})
    elif option.kind is Kind.CHOICE:
        widget = forms.Select(choices=option.choices)
    elif option.kind is Kind.LANGUAGE:
        widget = forms.Select(choices=[("", "Detect it"), *speech_language_choices()])
    initial = "" if option.kind is Kind.TERMS else option.default
    return forms.CharField(
        label=option.label, required=False, initial=initial, help_text=option.website_help, widget=widget
    )


def option_value(option: JobOption, value):
    """A form field's value as the API's JSON body carries it."""
    if option.kind is Kind.LANGUAGES:
        return [item.strip() for item in value.split(",") if item.strip()] or None
    if option.kind is Kind.TERMS:  # blank lines are left out, for the API to check the rest
        return [line.strip() for line in value.splitlines() if line.strip()]
    if option.kind in (Kind.LANGUAGE, Kind.CHOICE):
        return value or option.default
    return value


OPERATIONS_BY_TYPE = {
    JobType.TRANSCRIPT: operations.transcribe,
    JobType.SUBTITLES: operations.create_subtitles,
    JobType.BURNED: operations.burn_subtitles,
    "playlist": operations.transcribe_playlist,
}


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

    def __init__(self, *args, options: tuple[JobOption, ...] = OPTIONS, **kwargs):
        super().__init__(*args, **kwargs)
        self.options = options
        for option in options:
            self.fields[option.name] = option_form_field(option)

    def option_fields(self) -> list[tuple[forms.BoundField, str, bool]]:
        """(field, the job types it is shown for, is it a checkbox) of every option, for the template."""
        return [(self[option.name], " ".join(option.types), option.kind is Kind.BOOLEAN) for option in self.options]

    def api_request(self) -> tuple[Operation, dict]:
        """The front door's operation for this request (one of transcription.api.front.operations)
        and the JSON body the API would have received: the chosen type's options, as sent (a blank
        text option is left out, for the API's default)."""
        data = self.cleaned_data
        job_type = data["type"]
        if data["playlist"]:
            # translations typed for a transcript playlist are sent, for the API to refuse by name
            chosen = [
                option
                for option in playlist_options(self.options)
                if job_type in option.types or option.kind is Kind.LANGUAGES
            ]
            body = {"url": data["url"], "type": job_type}
        else:
            chosen = list(options_for(job_type, self.options))
            body = {"upload_id": data["upload_id"]} if data["upload_id"] else {"url": data["url"]}
        for option in chosen:
            if option.kind is not Kind.TEXT or data[option.name]:
                body[option.name] = option_value(option, data[option.name])
        return OPERATIONS_BY_TYPE["playlist" if data["playlist"] else job_type], body

    def add_api_errors(self, errors: list[dict]) -> None:
        """Put the API's 422 entries on the fields they name (an item of a list by its number)."""
        for error in errors:
            loc = error["loc"][1:]
            field = loc[0] if loc and loc[0] in self.fields and loc[0] != "upload_id" else None
            message = error["msg"]
            if field and len(loc) > 1 and isinstance(loc[1], int):
                message = f"Item {loc[1] + 1}: {message}"
            self.add_error(field, message)
