"""The account holder's API page: sign up, the token (create, replace, revoke), minutes, usage, jobs.

Server-rendered, with Django's session authentication and CSRF. A new token is rendered into the
response of the POST that made it and stored nowhere (only its digest): it is seen once. Pages
that can show a token are never cached.
"""

from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from billing.pricing import format_minutes, format_signed_minutes
from billing.selectors import account_balance
from transcription.models import Job

from .client import client_address
from .confirmation import send_confirmation, user_from_link
from .forms import ConfirmForm, SignupForm
from .models import Account, ApiToken
from .services import account_confirm_email, account_create, signups_from, token_issue, token_revoke

RECENT_JOBS = 20
LEDGER_ROWS = 50


def _account(request) -> Account | None:
    return Account.objects.select_related("user", "plan").filter(user=request.user).first()


def _render_api_page(request, account: Account | None, *, new_token: str | None = None, status: int = 200):
    context = {"account": account, "new_token": new_token}
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
    """Sign-up makes an inactive login and mails a confirmation link; the free minutes and the
    API page come after the link (confirm_email). At most SIGNUPS_PER_HOUR from one address."""
    if request.user.is_authenticated:
        return redirect("accounts:api")
    form = SignupForm(request.POST or None)
    if request.method == "POST":
        address = client_address(request)
        if signups_from(address, timezone.now() - timedelta(hours=1)) >= settings.SIGNUPS_PER_HOUR:
            form.add_error(None, "Too many sign-ups from your address. Try again in an hour.")
            return render(request, "accounts/signup.html", {"form": form}, status=429)
        if form.is_valid():
            email = form.cleaned_data["email"]
            user = form.unconfirmed_user  # signed up before, never confirmed: the same login, a new link
            if user is None:
                try:
                    user = account_create(
                        email, password=form.cleaned_data["password"], confirmed=False, signup_address=address
                    ).user
                except IntegrityError:  # the same email signed up a moment ago
                    form.add_error("email", "An account with this email already exists. Sign in instead.")
            if user is not None:
                send_confirmation(request, user)
                return render(request, "accounts/signup_sent.html", {"email": user.email})
    return render(request, "accounts/signup.html", {"form": form})


@never_cache
@require_http_methods(["GET"])
def confirm_email(request, uid, token):
    user = user_from_link(uid, token)
    if user is None:
        return render(request, "accounts/confirm_invalid.html", status=400)
    account_confirm_email(user)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    messages.success(request, "Email confirmed. Your account is ready. Create an API token below to start.")
    return redirect("accounts:api")


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
