"""Accounts for support staff: balance, token, jobs; token actions; staff grants; the audit log.

A new token appears once, in the admin's message after the action, and never again (only its
digest is stored). Every token action and grant is audited by the services it calls.
"""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Count, IntegerField, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from audit.admin import AuditEventInline
from billing.admin import LedgerEntryInline
from billing.limits import GrantNeedsSuperuser
from billing.models import LedgerEntry
from billing.pricing import format_minutes
from billing.services import grant_staff_minutes, plan_change, plan_change_check
from transcription import states
from transcription.models import Job

from .models import Account
from .services import account_deactivate, account_reactivate, token_issue, token_revoke


def _subquery_total(queryset, expression):
    """An integer per account from a related table, as a subquery (joins would multiply rows)."""
    return Coalesce(
        Subquery(
            queryset.order_by().values("account").annotate(total=expression).values("total"),
            output_field=IntegerField(),
        ),
        Value(0),
    )


class GrantMinutesForm(forms.Form):
    minutes = forms.IntegerField(label="Minutes to grant", min_value=1, max_value=1_000_000)
    reason = forms.CharField(
        label="Reason",
        max_length=300,
        help_text="Required. The account holder sees it in their usage history.",
    )


class AccountAdminForm(forms.ModelForm):
    """Plan and renewal date, the only fields staff change here (through billing's plan_change,
    which audits them). A renewal date in the past would grant periods nobody paid for; what the
    change lets renewals grant is bounded like a grant (billing.limits). `by`: the staff user,
    set by AccountAdmin.get_form."""

    by = None

    class Meta:
        model = Account
        fields = ["plan", "renews_on"]

    def clean_renews_on(self):
        renews_on = self.cleaned_data.get("renews_on")
        if "renews_on" in self.changed_data and renews_on is not None and renews_on < timezone.localdate():
            raise forms.ValidationError("The renewal date cannot be in the past.")
        return renews_on

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("plan") is not None and cleaned.get("renews_on") is None and "renews_on" not in self.errors:
            self.add_error("renews_on", "An account with a plan needs a renewal date.")
        if not self.errors:
            try:
                plan_change_check(
                    self.instance, plan=cleaned.get("plan"), renews_on=cleaned.get("renews_on"), by=self.by
                )
            except GrantNeedsSuperuser as error:
                self.add_error(None, str(error))
        return cleaned


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    form = AccountAdminForm
    list_display = [
        "email",
        "active",
        "plan",
        "balance",
        "token_prefix",
        "token_created",
        "token_last_used",
        "jobs_total",
        "jobs_active",
        "jobs_failed",
        "created_at",
    ]
    list_filter = ["plan"]
    search_fields = ["user__email"]
    ordering = ["-created_at"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "email",
                    "active",
                    "user",
                    "plan",
                    "renews_on",
                    "plan_assigned_on",
                    "plan_assigned_by",
                    "created_at",
                ]
            },
        ),
        ("Minutes", {"fields": ["balance"]}),
        ("API token", {"fields": ["token_prefix", "token_created", "token_last_used"]}),
        ("Jobs", {"fields": ["jobs_total", "jobs_active", "jobs_failed", "jobs_link"]}),
    ]
    readonly_fields = [
        "email",
        "active",
        "user",
        "plan_assigned_on",
        "plan_assigned_by",
        "created_at",
        "balance",
        "token_prefix",
        "token_created",
        "token_last_used",
        "jobs_total",
        "jobs_active",
        "jobs_failed",
        "jobs_link",
    ]
    inlines = [LedgerEntryInline, AuditEventInline]
    actions = ["issue_token", "replace_token", "revoke_token", "deactivate", "reactivate", "grant_minutes"]
    change_form_template = "admin/accounts/account/change_form.html"

    # Accounts are created by sign-up or `manage.py create_account` (login + sign-up minutes),
    # and never deleted: the ledger and the jobs point at them.
    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"by": request.user})

    def save_model(self, request, obj, form, change):
        # The form checked the grant limits; plan_change checks them again under the person's lock.
        plan_change(obj, plan=form.cleaned_data["plan"], renews_on=form.cleaned_data["renews_on"], by=request.user)

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("user", "plan", "api_token")
            .annotate(
                balance_seconds=_subquery_total(LedgerEntry.objects.filter(account=OuterRef("pk")), Sum("seconds")),
                jobs_total_count=_subquery_total(Job.objects.filter(account=OuterRef("pk")), Count("pk")),
                jobs_active_count=_subquery_total(
                    Job.objects.filter(account=OuterRef("pk")).exclude(state__in=states.FINAL_STATES), Count("pk")
                ),
                jobs_failed_count=_subquery_total(
                    Job.objects.filter(account=OuterRef("pk"), state=states.FAILED), Count("pk")
                ),
            )
        )

    # --- columns and read-only fields -------------------------------------------------------

    @admin.display(description="Email", ordering="user__email")
    def email(self, account):
        return account.user.email

    @admin.display(description="Active", boolean=True, ordering="user__is_active")
    def active(self, account):
        """Deactivated (the Deactivate action): its token, MCP and website are refused."""
        return account.user.is_active

    @admin.display(description="Balance", ordering="balance_seconds")
    def balance(self, account):
        return format_minutes(account.balance_seconds)

    @staticmethod
    def _token(account):
        try:
            return account.api_token
        except Account.api_token.RelatedObjectDoesNotExist:
            return None

    @admin.display(description="Token", ordering="api_token__prefix")
    def token_prefix(self, account):
        token = self._token(account)
        return f"{token.prefix}…" if token else "none"

    @admin.display(description="Token created", ordering="api_token__created_at")
    def token_created(self, account):
        token = self._token(account)
        return token.created_at if token else None

    @admin.display(description="Token last used", ordering="api_token__last_used_at")
    def token_last_used(self, account):
        token = self._token(account)
        if token is None:
            return None
        return token.last_used_at or "never"

    @admin.display(description="Jobs", ordering="jobs_total_count")
    def jobs_total(self, account):
        return account.jobs_total_count

    @admin.display(description="Running", ordering="jobs_active_count")
    def jobs_active(self, account):
        return account.jobs_active_count

    @admin.display(description="Failed", ordering="jobs_failed_count")
    def jobs_failed(self, account):
        return account.jobs_failed_count

    @admin.display(description="All jobs")
    def jobs_link(self, account):
        url = reverse("admin:transcription_job_changelist") + f"?account__id__exact={account.pk}"
        return format_html('<a href="{}">Jobs of {}</a>', url, account.user.email)

    # --- token actions (each audited by accounts.services) -------------------------------------

    def _show_token(self, request, account, token, verb):
        self.message_user(
            request,
            format_html(
                '{} API token for {}: <code class="new-token">{}</code> — copy it now and pass it on '
                "safely; it is not stored and will not be shown again.",
                verb,
                account.user.email,
                token,
            ),
            messages.SUCCESS,
        )

    def _issue_tokens(self, request, queryset, *, replacing: bool, verb: str, refusal: str):
        """A new token for each selected account that has one (`replacing`) or has none (not); each
        other account gets `refusal`, with {email} filled in, so that a misclick changes nothing."""
        for account in queryset.select_related("user"):
            if (self._token(account) is not None) != replacing:
                self.message_user(request, refusal.format(email=account.user.email), messages.WARNING)
                continue
            self._show_token(request, account, token_issue(account, by=request.user), verb)

    @admin.action(description="Issue an API token (accounts without one)", permissions=["change"])
    def issue_token(self, request, queryset):
        refusal = "{email} already has a token; use “Replace” to change it."
        self._issue_tokens(request, queryset, replacing=False, verb="New", refusal=refusal)

    @admin.action(description="Replace the API token (the old one stops working at once)", permissions=["change"])
    def replace_token(self, request, queryset):
        refusal = "{email} has no token to replace; use “Issue”."
        self._issue_tokens(request, queryset, replacing=True, verb="Replacement", refusal=refusal)

    @admin.action(description="Revoke the API token", permissions=["change"])
    def revoke_token(self, request, queryset):
        for account in queryset.select_related("user"):
            if token_revoke(account, by=request.user):
                self.message_user(request, f"Revoked the API token of {account.user.email}.", messages.SUCCESS)
            else:
                self.message_user(request, f"{account.user.email} had no token.", messages.WARNING)

    # Deactivation, in its own words: staff see on the button what it stops and that it is undone
    # by the next action (accounts.services.account_deactivate; audited).
    @admin.action(
        description="Deactivate: refuse the API token, MCP and the website at once (reversible; keeps token, "
        "jobs and minutes)",
        permissions=["change"],
    )
    def deactivate(self, request, queryset):
        for account in queryset.select_related("user"):
            if account_deactivate(account, by=request.user):
                self.message_user(
                    request,
                    f"Deactivated {account.user.email}: its API token, MCP and website sessions are refused from "
                    "the next request. Reactivate to undo.",
                    messages.SUCCESS,
                )
            else:
                self.message_user(request, f"{account.user.email} was already deactivated.", messages.WARNING)

    @admin.action(description="Reactivate: the same API token, MCP and the website work again", permissions=["change"])
    def reactivate(self, request, queryset):
        for account in queryset.select_related("user"):
            if account_reactivate(account, by=request.user):
                self.message_user(request, f"Reactivated {account.user.email}.", messages.SUCCESS)
            else:
                self.message_user(request, f"{account.user.email} was active.", messages.WARNING)

    @admin.action(description="Grant minutes…", permissions=["grant"])
    def grant_minutes(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Grant minutes to one account at a time.", messages.WARNING)
            return None
        return HttpResponseRedirect(reverse("admin:accounts_account_grant", args=[queryset.get().pk]))

    def has_grant_permission(self, request):
        return request.user.has_perm("billing.add_ledgerentry")

    # --- "Grant minutes" page ----------------------------------------------------------------

    def get_urls(self):
        return [
            path("<path:object_id>/grant/", self.admin_site.admin_view(self.grant_view), name="accounts_account_grant"),
            *super().get_urls(),
        ]

    def grant_view(self, request, object_id):
        account = self.get_object(request, unquote(object_id))
        if account is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not (self.has_view_permission(request, account) and self.has_grant_permission(request)):
            raise PermissionDenied
        form = GrantMinutesForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            minutes, reason = form.cleaned_data["minutes"], form.cleaned_data["reason"]
            try:
                grant_staff_minutes(account, minutes, reason=reason, by=request.user)
            except ValueError as error:
                form.add_error(None, str(error))
            else:
                self.message_user(
                    request,
                    f"Granted {format_minutes(minutes * 60)} to {account.user.email}: {reason.strip()}",
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(reverse("admin:accounts_account_change", args=[account.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Grant minutes to {account.user.email}",
            "subtitle": None,
            "opts": self.opts,
            "original": account,
            "form": form,
            "balance": format_minutes(account.balance_seconds),
            "media": self.media + form.media,
        }
        return TemplateResponse(request, "admin/accounts/account/grant_minutes.html", context)
