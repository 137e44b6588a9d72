from django import forms

from .services import MAX_URL_LENGTH


class EndpointUrlForm(forms.Form):
    # A plain text field: the address guard (services.endpoint_check_url) says what is wrong with it.
    url = forms.CharField(
        label="Webhook URL",
        max_length=MAX_URL_LENGTH,
        widget=forms.URLInput(attrs={"placeholder": "https://example.com/hooks/transcription", "spellcheck": "false"}),
        help_text="We POST job.done, job.failed and batch.done events here, signed per Standard Webhooks.",
    )
