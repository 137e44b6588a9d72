"""The account holder's API page: sign up, the token (create, replace, revoke), minutes, usage, jobs.

Server-rendered, with Django's session authentication and CSRF. A new token is rendered into the
response of the POST that made it and stored nowhere (only its digest): it is seen once. Pages
that can show a token are never cached.
"""

import logging
from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from billing.pricing import format_minutes, format_signed_minutes
from billing.selectors import account_balance
from transcription.models import Job

from .client import counted_client_address
from .confirmation import send_confirmation, send_signup_notice, signup_from_link
from .forms import ConfirmForm, SignupConfirmForm, SignupForm
from .models import Account, ApiToken
from .services import SignupRefused, signup_confirm, signup_create, token_issue, token_revoke

logger = logging.getLogger(__name__)

RECENT_JOBS = 20
LEDGER_ROWS = 50


def _account(request) -> Account | None:
    return Account.objects.select_related("user", "plan").filter(user=request.user).first()


def _render_api_page(request, account: Account | None, *, new_token: str | None = None, status: int = 200):
    context: dict[str, Any] = {"account": account, "new_token": new_token}
    if account is not None:
        balance = account_balance(account.pk)
        ledger = list(account.ledger.order_by("-created_at", "-id")[:LEDGER_ROWS])
        context.update(
            token=ApiToken.objects.filter(account=account).first(),
            balance_seconds=balance,
            balance=format_minutes(max(balance, 0)),
            ledger=[(entry, format_signed_minutes(entry.seconds)) for entry in ledger],
            ledger_limit=LEDGER_ROWS,
            jobs=list(
                Job.objects.filter(account=account)
                .order_by("-created_at")
                .only("id", "type", "state", "progress", "title", "url", "error", "created_at")[:RECENT_JOBS]
            ),
            jobs_limit=RECENT_JOBS,
        )
    return render(request, "accounts/api.html", context, status=status)


@never_cache
@require_http_methods(["GET", "POST"])
def signup(request):
    """Sign-up records a pending sign-up and mails its link; the login, the free minutes and the
    API page come after the link's page is confirmed (confirm_email). Limits per client address
    and per recipient: accounts.services.signup_create. An address that has an account gets the
    same page, and its holder a notice instead of a link."""
    if request.user.is_authenticated:
        return redirect("accounts:api")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            pending, secret = signup_create(
                form.cleaned_data["email"],
                form.cleaned_data["password"],
                client_address=counted_client_address(request),
            )
        except SignupRefused as refused:
            form.add_error(refused.field, str(refused))
            return render(request, "accounts/signup.html", {"form": form}, status=refused.status)
        try:
            if secret is None:
                send_signup_notice(pending)
            else:
                send_confirmation(pending, secret)
        except OSError:  # SMTP refused or unreachable (smtplib's errors are OSErrors)
            logger.exception("Could not mail the confirmation link to %s", pending.email)
            pending.delete()  # no mail went out: it neither counts nor holds a link
            form.add_error(None, "We could not send the confirmation mail just now. Please try again in a few minutes.")
            return render(request, "accounts/signup.html", {"form": form}, status=503)
        return render(request, "accounts/signup_sent.html", {"email": pending.email})
    return render(request, "accounts/signup.html", {"form": form})


@never_cache
@require_http_methods(["GET", "POST"])
def confirm_email(request, uid, token):
    """The mailed link's page: a GET only shows it; its button (a CSRF-protected POST with the
    sign-up's password) confirms and signs the new login in. A browser already signed in is never
    switched to another account by it (login CSRF): it is asked to sign out first."""
    pending = signup_from_link(uid, token)
    if pending is None:
        return render(request, "accounts/confirm_invalid.html", status=400)
    context = {"email": pending.email}
    if request.user.is_authenticated:
        return render(request, "accounts/confirm_signed_in.html", context, status=409)
    form = SignupConfirmForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = signup_confirm(pending, form.cleaned_data["password"])
        except SignupRefused as refused:
            if refused.field is None:
                return render(request, "accounts/confirm_invalid.html", {"reason": str(refused)}, status=400)
            form.add_error(refused.field, str(refused))
            return render(request, "accounts/confirm.html", {**context, "form": form}, status=400)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")  # a new session key
        messages.success(request, "Email confirmed. Your account is ready. Create an API token below to start.")
        return redirect("accounts:api")
    return render(request, "accounts/confirm.html", {**context, "form": form}, status=400 if form.errors else 200)


@never_cache
@login_required
def api_page(request):
    return _render_api_page(request, _account(request))


@never_cache
@login_required
@require_POST
def token_create(request):
    account = _account(request)
    if account is None:
        return redirect("accounts:api")
    if ApiToken.objects.filter(account=account).exists():
        # Also what a reloaded "create" POST lands on: it never replaces a token silently.
        messages.warning(request, "You already have a token. Use “Replace token” to get a new one.")
        return redirect("accounts:api")
    return _render_api_page(request, account, new_token=token_issue(account, by=request.user))


def _confirmed(request) -> bool:
    return request.method == "POST" and ConfirmForm(request.POST).is_valid()


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def token_replace(request):
    account = _account(request)
    token = ApiToken.objects.filter(account=account).first() if account else None
    if token is None:
        return redirect("accounts:api")
    if _confirmed(request):
        return _render_api_page(request, account, new_token=token_issue(account, by=request.user))
    return render(request, "accounts/token_confirm.html", {"token": token, "action": "replace"})


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def token_revoke_view(request):
    account = _account(request)
    token = ApiToken.objects.filter(account=account).first() if account else None
    if token is None:
        return redirect("accounts:api")
    if _confirmed(request):
        token_revoke(account, by=request.user)
        messages.success(request, f"Token {token.prefix}… revoked. Requests with it are now refused.")
        return redirect("accounts:api")
    return render(request, "accounts/token_confirm.html", {"token": token, "action": "revoke"})
