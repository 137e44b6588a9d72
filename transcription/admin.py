"""Jobs, batches and translations for support staff: read-only pages, plus two actions on jobs.

Retry queues a fresh job with the same options (the failed one stays failed); cancel fails a
waiting or running job and refunds it. Both go through transcription.writes.services and are audited.
Nothing is added, edited or deleted by hand here: a job's fields are written by the pipeline.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from django.contrib import admin, messages
from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django_celery_results.models import TaskResult

from billing.models import LedgerEntry
from billing.pricing import format_minutes
from config.admin import ReadOnlyAdminMixin
from transcription import states
from transcription.scheduling import dispatch
from transcription.writes import reburn_services, services

from .job_options import OPTIONS
from .models import Batch, Job, Translation


def stage_durations(timeline, now: datetime | None = None) -> list[tuple[str, datetime, float | None, bool]]:
    """(state, entered at, seconds spent in it, still in it) for each entry of Job.timeline.

    A stage lasts until the next entry; the current stage of a job that has not ended is counted
    up to `now`; a final state (done, failed) has no duration. Malformed entries are skipped.
    """
    parsed = []
    for entry in timeline or []:
        try:
            state, at = entry[0], datetime.fromisoformat(entry[1])
        except (TypeError, ValueError, IndexError):
            continue
        if timezone.is_naive(at):
            at = at.replace(tzinfo=UTC)
        parsed.append((state, at))
    now = now or timezone.now()
    rows: list[tuple[str, datetime, float | None, bool]] = []
    for index, (state, at) in enumerate(parsed):
        if index + 1 < len(parsed):
            rows.append((state, at, (parsed[index + 1][1] - at).total_seconds(), False))
        elif state in states.FINAL_STATES:
            rows.append((state, at, None, False))
        else:
            rows.append((state, at, max((now - at).total_seconds(), 0.0), True))
    return rows


def format_duration(seconds: float) -> str:
    """'0.4 s', '42 s', '3 min 05 s', '2 h 07 min'."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class TranslationInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Translation
    fields = readonly_fields = ("position", "language", "language_code", "state", "error", "updated_at")
    extra = 0


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["short_id", "account", "type", "state", "progress", "language_found", "created_at", "error_summary"]
    list_filter = [
        "state",
        "type",
        ("account", admin.RelatedOnlyFieldListFilter),
        ("created_at", admin.DateFieldListFilter),
    ]
    list_select_related = ["account__user"]
    search_fields = ["url", "title", "account__user__email"]
    actions = ["retry_jobs", "cancel_jobs"]
    inlines = [TranslationInline]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "id",
                    "account",
                    "batch",
                    "url",
                    "type",
                    "state",
                    "progress",
                    "error",
                    "attempts",
                    "lease_until",
                    "created_at",
                    "updated_at",
                ]
            },
        ),
        ("Time per stage", {"fields": ["stage_times"]}),
        (
            "Options",
            {
                # every option a client can choose (transcription.job_options)
                "fields": [option.job_field for option in OPTIONS]
            },
        ),
        (
            "Result",
            {
                "fields": [
                    "title",
                    "duration",
                    "detected_language",
                    "detected_language_probability",
                    "is_preview",
                    "preview_minutes",
                    "outputs",
                    "burned_video",
                ]
            },
        ),
        ("Minutes", {"fields": ["charges"]}),
        ("Tasks", {"fields": ["task_results"]}),
    ]
    readonly_fields = [name for _, section in fieldsets for name in section["fields"] if isinstance(name, str)]

    # A job is written by the pipeline only: its page is read-only for everyone. "Change" stays
    # on the list (obj is None) because that is what the retry and cancel actions require.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request, obj=None):
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).defer("txt", "srt", "webvtt")

    def get_search_results(self, request, queryset, search_term):
        """Also find a job by its id (what customers quote)."""
        try:
            job_id = uuid.UUID(search_term.strip())
        except ValueError:
            return super().get_search_results(request, queryset, search_term)
        return queryset.filter(pk=job_id), False

    @admin.display(description="Job", ordering="id")
    def short_id(self, job):
        return str(job.id)[:8]

    @admin.display(description="Language found", ordering="detected_language")
    def language_found(self, job):
        # Support staff see at a glance whether a poor transcript follows from an unsure detection.
        if not job.detected_language:
            return ""
        if job.detected_language_probability is None:
            return job.detected_language
        return f"{job.detected_language} ({job.detected_language_probability:.0%})"

    @admin.display(description="Error")
    def error_summary(self, job):
        if not job.error:
            return ""
        return job.error if len(job.error) <= 80 else job.error[:79] + "…"

    @admin.display(description="Time per stage")
    def stage_times(self, job):
        rows = stage_durations(job.timeline)
        if not rows:
            return "No stages recorded."
        body = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    state,
                    at.strftime("%Y-%m-%d %H:%M:%S"),
                    "—" if seconds is None else format_duration(seconds) + (" so far" if ongoing else ""),
                )
                for state, at, seconds, ongoing in rows
            ),
        )
        total = (rows[-1][1] - rows[0][1]).total_seconds() + (rows[-1][2] or 0)
        return format_html(
            '<table class="stage-times"><thead><tr><th scope="col">Stage</th><th scope="col">Entered (UTC)</th>'
            '<th scope="col">Time spent</th></tr></thead><tbody>{}</tbody>'
            '<tfoot><tr><th scope="row" colspan="2">Total</th><td>{}</td></tr></tfoot></table>',
            body,
            format_duration(total),
        )

    @admin.display(description="Outputs")
    def outputs(self, job):
        lengths = Job.objects.filter(pk=job.pk).values_list("txt", "srt", "webvtt").first() or (None, None, None)
        parts = [
            f"{name}: {len(value):,} characters" for name, value in zip(("txt", "srt", "webvtt"), lengths) if value
        ]
        return "; ".join(parts) or "none"

    @admin.display(description="Ledger entries of this job")
    def charges(self, job):
        entries = LedgerEntry.objects.filter(job=job).order_by("created_at", "id")
        if not entries:
            return "Not charged."
        return format_html_join(
            mark_safe("<br>"),
            "{} {} ({}) — {}",
            (
                (e.created_at.strftime("%Y-%m-%d %H:%M"), e.kind, format_minutes(abs(e.seconds)), e.reason)
                for e in entries
            ),
        )

    @admin.display(description="Task outcomes (kept a day)")
    def task_results(self, job):
        # a turn's message names the job that sent it, its result the job it ran (tasks._run_turn);
        # one that did not end well has no result but an error: it is shown with the job it names
        named = Q(task_args__contains=str(job.id)) & ~Q(status="SUCCESS")
        results = TaskResult.objects.filter(Q(result__contains=str(job.id)) | named).order_by("date_created")
        if not results:
            return "None kept."
        return format_html_join(
            mark_safe("<br>"),
            '{} <a href="{}">{}</a> {} on {}',
            (
                (
                    r.date_done.strftime("%Y-%m-%d %H:%M:%S") if r.date_done else "—",
                    reverse("admin:django_celery_results_taskresult_change", args=[r.pk]),
                    (r.task_name or "").rsplit(".", 1)[-1],
                    r.status,
                    r.worker or "—",
                )
                for r in results
            ),
        )

    # --- actions ------------------------------------------------------------------------------

    @admin.action(description="Retry failed jobs (queue a new job with the same options)", permissions=["change"])
    def retry_jobs(self, request, queryset):
        for job in queryset:
            if job.state != states.FAILED:
                self.message_user(request, f"Job {job.id} is {job.state}, not failed: not retried.", messages.WARNING)
                continue
            try:
                new = services.job_retry(job.id, by=request.user)
            except dispatch.QueueUnavailable as error:
                self.message_user(request, f"Job {job.id} not retried: {error}", messages.ERROR)
                break
            except ValueError as error:  # a voice sample's job
                self.message_user(request, f"Job {job.id} not retried: {error}", messages.WARNING)
                continue
            self.message_user(
                request,
                format_html(
                    'Job {} stays failed; queued a new job <a href="{}">{}</a> with the same URL and options.',
                    job.id,
                    reverse("admin:transcription_job_change", args=[new.pk]),
                    new.id,
                ),
                messages.SUCCESS,
            )

    @admin.action(description="Cancel waiting or running jobs (fail and refund)", permissions=["change"])
    def cancel_jobs(self, request, queryset):
        for job in queryset:
            if reburn_services.reburn_cancel(job.id, by=request.user) is not None:  # a done job burned again
                self.message_user(request, f"Cancelled the re-burn of job {job.id}; its minutes were refunded.")
                continue
            cancelled = services.job_cancel(job.id, by=request.user)
            if cancelled is None:
                self.message_user(
                    request, f"Job {job.id} had already ended ({job.state}): not cancelled.", messages.WARNING
                )
                continue
            refund = LedgerEntry.objects.filter(
                job=job, kind=LedgerEntry.Kind.REFUND, source=LedgerEntry.Source.JOB
            ).first()
            refunded = f"refunded {format_minutes(refund.seconds)}" if refund else "it had not been charged"
            self.message_user(request, f"Cancelled job {job.id}; {refunded}.", messages.SUCCESS)


class JobInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Job
    fk_name = "batch"
    fields = readonly_fields = ("position", "link", "url", "state", "progress", "error")
    extra = 0
    ordering = ["position"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("txt", "srt", "webvtt")

    @admin.display(description="Job")
    def link(self, job):
        return format_html(
            '<a href="{}">{}</a>', reverse("admin:transcription_job_change", args=[job.pk]), str(job.id)[:8]
        )


@admin.register(Batch)
class BatchAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["__str__", "account", "type", "total", "skipped", "job_count", "created_at"]
    list_filter = ["type", ("account", admin.RelatedOnlyFieldListFilter), ("created_at", admin.DateFieldListFilter)]
    list_select_related = ["account__user"]
    search_fields = ["url", "title", "account__user__email"]
    fields = readonly_fields = (
        "id",
        "account",
        "url",
        "title",
        "type",
        "total",
        "skipped",
        "language_code",
        "verbatim",
        "tag_audio_events",
        "quality",
        "font_size",
        "background",
        "target_languages",
        "key_terms",
        "created_at",
    )
    inlines = [JobInline]
    actions = None

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(job_total=Count("jobs"))

    @admin.display(description="Jobs", ordering="job_total")
    def job_count(self, batch):
        return batch.job_total


@admin.register(Translation)
class TranslationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["job", "language", "language_code", "state", "updated_at"]
    list_filter = ["state", ("updated_at", admin.DateFieldListFilter)]
    list_select_related = ["job"]
    search_fields = ["language", "language_code", "job__account__user__email"]
    fields = readonly_fields = (
        "job",
        "position",
        "language",
        "language_code",
        "state",
        "error",
        "burned_video",
        "created_at",
        "updated_at",
    )
    actions = None
