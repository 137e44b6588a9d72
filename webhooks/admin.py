"""Webhooks for support staff: set an account's URL, rotate its secret, read every event and
attempt, and send an event again. Every write goes through webhooks.services (audited there)."""

from __future__ import annotations

import json
import uuid

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from config.admin import ReadOnlyAdminMixin

from . import services
from .models import Attempt, Endpoint, Message


class EndpointForm(forms.ModelForm):
    # A plain text field: the address guard (services.endpoint_check_url) says what is wrong with it.
    url = forms.CharField(label="URL", max_length=services.MAX_URL_LENGTH)

    class Meta:
        model = Endpoint
        fields = ["account", "url"]

    def clean_url(self):
        try:
            return services.endpoint_check_url(self.cleaned_data["url"])
        except services.WebhookUrlError as error:
            raise forms.ValidationError(str(error)) from None


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    form = EndpointForm
    list_display = ["account", "url", "status", "secret_prefix", "updated_at"]
    list_select_related = ["account__user"]
    search_fields = ["account__user__email", "url"]
    autocomplete_fields = ["account"]
    actions = ["rotate_secret"]
    readonly_fields = ["status", "secret_prefix", "previous_secret_until", "created_at", "updated_at", "events"]

    def get_fields(self, request, obj=None):
        return ["account", "url"] if obj is None else ["account", "url", *self.readonly_fields]

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else ["account", *self.readonly_fields]

    def has_delete_permission(self, request, obj=None):
        return False  # removing a customer's webhook is the customer's call (API page)

    @admin.display(description="Status")
    def status(self, endpoint):
        return "enabled" if endpoint.enabled else f"disabled: {endpoint.disabled_reason}"

    @admin.display(description="Signing secret")
    def secret_prefix(self, endpoint):
        return endpoint.secret_prefix

    @admin.display(description="Events")
    def events(self, endpoint):
        url = reverse("admin:webhooks_message_changelist") + f"?account__id__exact={endpoint.account_id}"
        return format_html('<a href="{}">Events of {}</a>', url, endpoint.account)

    def _show_secret(self, request, endpoint, secret, what):
        self.message_user(
            request,
            format_html(
                '{} signing secret for {}: <code class="new-secret">{}</code> — pass it on safely; it will not '
                "be shown again.",
                what,
                endpoint.account,
                secret,
            ),
            messages.SUCCESS,
        )

    def save_model(self, request, obj, form, change):
        secret = services.endpoint_set(obj.account, obj.url, by=request.user)
        saved = Endpoint.objects.get(account=obj.account)
        obj.pk = saved.pk
        if secret:
            self._show_secret(request, saved, secret, "New")

    @admin.action(description="Rotate the signing secret (the old one signs for 24 h more)", permissions=["change"])
    def rotate_secret(self, request, queryset):
        for endpoint in queryset.select_related("account__user"):
            self._show_secret(
                request, endpoint, services.endpoint_rotate_secret(endpoint.account, by=request.user), "New"
            )


class AttemptInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Attempt
    fields = readonly_fields = (
        "number",
        "started_at",
        "duration_ms",
        "status_code",
        "error",
        "response_excerpt",
        "url",
    )
    extra = 0


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["created_at", "account", "event_type", "about", "state", "attempt_count", "last_outcome"]
    list_filter = ["state", "event_type", ("account", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["account__user"]
    search_fields = ["account__user__email"]
    actions = ["send_again"]
    inlines = [AttemptInline]
    fields = readonly_fields = (
        "webhook_id",
        "account",
        "endpoint",
        "event_type",
        "job",
        "batch",
        "state",
        "error",
        "created_at",
        "next_attempt_at",
        "delivered_at",
        "payload",
    )

    # Messages are written by the services only: the page is read-only. "Change" stays on the
    # list (obj is None) because that is what the send-again action requires.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request, obj=None):
        return False

    def get_search_results(self, request, queryset, search_term):
        """Also find events by the id customers quote: a webhook-id (msg_…), a job id or a batch id."""
        term = search_term.strip()
        try:
            found = uuid.UUID(term.removeprefix("msg_"))
        except ValueError:
            return super().get_search_results(request, queryset, search_term)
        return queryset.filter(pk=found) | queryset.filter(job_id=found) | queryset.filter(batch_id=found), False

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("attempts")

    @admin.display(description="Webhook id")
    def webhook_id(self, message):
        return message.webhook_id

    @admin.display(description="About")
    def about(self, message):
        return f"job {message.job_id}" if message.job_id else f"batch {message.batch_id}"

    @admin.display(description="Attempts")
    def attempt_count(self, message):
        return len(message.attempts.all())

    @admin.display(description="Last attempt")
    def last_outcome(self, message):
        attempts = list(message.attempts.all())
        return attempts[-1].outcome if attempts else "none yet"

    @admin.display(description="Body")
    def payload(self, message):
        return format_html("<pre>{}</pre>", json.dumps(json.loads(message.body), indent=2))

    @admin.action(description="Send again now (same webhook-id)", permissions=["change"])
    def send_again(self, request, queryset):
        for message in queryset:
            try:
                services.message_resend(message.id, by=request.user)
            except ValueError as error:
                self.message_user(request, f"{message.webhook_id} not sent: {error}", messages.WARNING)
            else:
                self.message_user(request, f"{message.event_type} {message.webhook_id} queued again.", messages.SUCCESS)
