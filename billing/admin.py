"""Plans and the ledger in the admin. The ledger is append-only: nobody, not even a superuser,
changes or deletes an entry here; staff add grants from the account ("Grant minutes"), which
goes through billing.services.grant_staff_minutes."""

from django.contrib import admin

from config.admin import ReadOnlyAdminMixin

from .models import LedgerEntry, Plan
from .pricing import format_signed_minutes as signed_minutes


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    list_display = ["name", "monthly_minutes", "active"]
    list_filter = ["active"]
    search_fields = ["name"]
    ordering = ["name"]


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
