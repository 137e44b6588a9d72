"""The account holder's API page: sign up, the token (create, replace, revoke), minutes, usage, jobs.

Server-rendered, with Django's session authentication and CSRF. A new token is rendered into the
response of the POST that made it and stored nowhere (only its digest): it is seen once. Pages
that can show a token are never cached.
"""

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from billing.pricing import format_minutes, format_signed_minutes
from billing.selectors import account_balance
from transcription.models import Job

from .forms import ConfirmForm, SignupForm
from .models import Account, ApiToken
from .services import account_create, token_issue, token_revoke

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
    if request.user.is_authenticated:
        return redirect("accounts:api")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            account = account_create(form.cleaned_data["email"], password=form.cleaned_data["password"])
        except IntegrityError:  # the same email signed up a moment ago
            form.add_error("email", "An account with this email already exists. Sign in instead.")
        else:
            login(request, account.user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, "Welcome! Your account is ready. Create an API token below to start.")
            return redirect("accounts:api")
    return render(request, "accounts/signup.html", {"form": form})


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
