from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from accounts.models import Account
from accounts.services import account_create, token_issue

DEMO_EMAIL = "demo@example.com"


class Command(BaseCommand):
    help = "Create the demo account if missing and print a fresh API token for it on the last line."

    def handle(self, **options):
        user = get_user_model().objects.filter(username=DEMO_EMAIL).first()
        account = Account.objects.get(user=user) if user else account_create(DEMO_EMAIL, minutes=60)
        # Only the token's digest is stored, so the demo gets a new token each start.
        self.stdout.write(token_issue(account))
