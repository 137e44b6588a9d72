"""The demo account of `make run`, and a token for it that survives restarts.

Only a token's digest is in the database, so the token itself is kept in DATA_DIR/demo-token
(mode 0600, like an SSH key), and used again while the account's token still has its digest. A
token replaced or revoked on the API page no longer matches, and a new one is issued and kept.
"""

import os

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from accounts.models import Account, ApiToken
from accounts.services import account_create, token_issue
from accounts.tokens import token_digest

DEMO_EMAIL = "demo@example.com"


def _kept_token():
    path = settings.DATA_DIR / "demo-token"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return None


def _keep(token: str) -> None:
    path = settings.DATA_DIR / "demo-token"
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(token + "\n")
    os.chmod(path, 0o600)  # a file left by an older run may have had wider permissions


class Command(BaseCommand):
    help = "Create the demo account if missing and print its API token on the last line (the same one on every run)."

    def handle(self, **options):
        user = get_user_model().objects.filter(username=DEMO_EMAIL).first()
        account = Account.objects.get(user=user) if user else account_create(DEMO_EMAIL, minutes=60)
        token = _kept_token()
        if not token or not ApiToken.objects.filter(account=account, digest=token_digest(token)).exists():
            token = token_issue(account)
            _keep(token)
        self.stdout.write(token)
