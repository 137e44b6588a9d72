"""The webhook part of the account holder's API page: set the URL, rotate the secret, remove it.

A new secret is rendered into the response of the POST that made it and shown nowhere else: it is
seen once (the server keeps it to sign, but never shows it again). Pages are never cached.
"""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts.forms import ConfirmForm
from accounts.models import Account

from .forms import EndpointUrlForm
from .models import Endpoint
from .services import WebhookUrlError, endpoint_remove, endpoint_rotate_secret, endpoint_set


def _account(request) -> Account | None:
    return Account.objects.filter(user=request.user).first()


def _show_secret(request, endpoint: Endpoint, secret: str, *, rotated: bool):
    return render(request, "webhooks/secret.html", {"endpoint": endpoint, "secret": secret, "rotated": rotated})


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def endpoint_edit(request):
    account = _account(request)
    if account is None:
        return redirect("accounts:api")
    endpoint = Endpoint.objects.filter(account=account).first()
    form = EndpointUrlForm(request.POST or None, initial={"url": endpoint.url if endpoint else ""})
    if request.method == "POST" and form.is_valid():
        try:
            secret = endpoint_set(account, form.cleaned_data["url"], by=request.user)
        except WebhookUrlError as error:
            form.add_error("url", str(error))
        else:
            if secret is not None:
                return _show_secret(request, Endpoint.objects.get(account=account), secret, rotated=False)
            messages.success(request, "Webhook URL saved.")
            return redirect("accounts:api")
    return render(
        request, "webhooks/edit.html", {"form": form, "endpoint": endpoint, "timeout": settings.WEBHOOK_TIMEOUT_SECONDS}
    )


def _confirmed(request) -> bool:
    return request.method == "POST" and ConfirmForm(request.POST).is_valid()


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def endpoint_rotate(request):
    account = _account(request)
    endpoint = Endpoint.objects.filter(account=account).first() if account else None
    if endpoint is None:
        return redirect("accounts:api")
    if _confirmed(request):
        secret = endpoint_rotate_secret(account, by=request.user)
        return _show_secret(request, Endpoint.objects.get(account=account), secret, rotated=True)
    return render(request, "webhooks/confirm.html", {"endpoint": endpoint, "action": "rotate"})


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def endpoint_delete(request):
    account = _account(request)
    endpoint = Endpoint.objects.filter(account=account).first() if account else None
    if endpoint is None:
        return redirect("accounts:api")
    if _confirmed(request):
        endpoint_remove(account, by=request.user)
        messages.success(request, "Webhook removed. No more events are sent.")
        return redirect("accounts:api")
    return render(request, "webhooks/confirm.html", {"endpoint": endpoint, "action": "remove"})
