"""Plans and the ledger in the admin. The ledger is append-only: nobody, not even a superuser,
changes or deletes an entry here; staff add grants from the account ("Grant minutes"), which
goes through billing.services.grant_staff_minutes. A plan is saved by billing.services.plan_save:
raising what accounts on it are granted is bounded like a grant, audited and mailed."""

from django import forms
from django.contrib import admin

from config.admin import ReadOnlyAdminMixin

from .limits import GrantNeedsSuperuser
from .models import LedgerEntry, LiveStream, Plan
from .pricing import format_signed_minutes as signed_minutes
from .services import plan_save, plan_save_check


class PlanAdminForm(forms.ModelForm):
    """`by`: the staff user, set by PlanAdmin.get_form."""

    by = None

    class Meta:
        model = Plan
        fields = "__all__"

    def clean(self):
        cleaned = super().clean()
        if not self.errors:
            edited = Plan(
                pk=self.instance.pk,
                name=cleaned.get("name"),
                monthly_minutes=cleaned.get("monthly_minutes"),
                active=cleaned.get("active"),
            )
            try:
                plan_save_check(edited, by=self.by)
            except GrantNeedsSuperuser as error:
                self.add_error(None, str(error))
        return cleaned


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    form = PlanAdminForm
    list_display = ["name", "monthly_minutes", "active"]
    list_filter = ["active"]
    search_fields = ["name"]
    ordering = ["name"]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"by": request.user})

    def save_model(self, request, obj, form, change):
        plan_save(obj, by=request.user)


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "account", "kind", "source", "minutes", "reason", "job", "created_by"]
    list_filter = ["kind", "source", ("created_at", admin.DateFieldListFilter)]
    list_select_related = ["account__user", "created_by", "job"]
    search_fields = ["account__user__email", "reason"]
    fields = readonly_fields = (
        "account",
        "kind",
        "source",
        "minutes",
        "seconds",
        "reason",
        "job",
        "translation",
        "period",
        "created_by",
        "created_at",
    )
    actions = None  # the only built-in action is "delete selected"

    @admin.display(description="Minutes", ordering="seconds")
    def minutes(self, entry):
        return signed_minutes(entry.seconds)


@admin.register(LiveStream)
class LiveStreamAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Live streams (/v1/realtime): what a customer asking about a live charge is shown. Read-only:
    the door and the sweeper settle them (billing.services.live_settle), once."""

    list_display = ["started_at", "account", "seconds", "held", "settled_at", "ended", "job"]
    list_filter = [("started_at", admin.DateFieldListFilter), ("settled_at", admin.EmptyFieldListFilter)]
    list_select_related = ["account__user", "job"]
    search_fields = ["account__user__email"]
    fields = readonly_fields = (
        "id",
        "account",
        "seconds",
        "held",
        "started_at",
        "touched_at",
        "settled_at",
        "ended",
        "job",
    )
    actions = None


class LedgerEntryInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = LedgerEntry
    fk_name = "account"
    fields = readonly_fields = ("created_at", "kind", "source", "minutes", "reason", "job", "created_by")
    extra = 0
    show_change_link = True
    verbose_name_plural = "ledger (newest first; read-only — add minutes with “Grant minutes”)"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("created_by", "job")

    @admin.display(description="Minutes")
    def minutes(self, entry):
        return signed_minutes(entry.seconds)
