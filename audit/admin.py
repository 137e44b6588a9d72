"""The audit log in the admin: read-only for everyone, superusers included."""

from django.contrib import admin

from config.admin import ReadOnlyAdminMixin

from .models import AuditEvent


class AuditEventInline(ReadOnlyAdminMixin, admin.TabularInline):
    """An account's audit log on its admin page."""

    model = AuditEvent
    fk_name = "account"
    fields = readonly_fields = ("created_at", "action", "actor", "detail")
    extra = 0
    verbose_name_plural = "audit log (newest first)"


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "action", "account", "actor", "detail"]
    list_filter = ["action", ("created_at", admin.DateFieldListFilter)]
    list_select_related = ["account__user", "actor"]
    search_fields = ["account__user__email", "actor__username", "detail"]
    fields = readonly_fields = ("created_at", "action", "account", "actor", "detail")
    actions = None
