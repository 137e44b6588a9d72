class ReadOnlyAdminMixin:
    """For records nobody edits from the admin (ledger, audit log, translations): no adds, no
    changes, no deletes, for anyone, superusers included."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
