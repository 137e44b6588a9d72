from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.services import account_create, token_issue


class Command(BaseCommand):
    help = "Create an account with its sign-up minutes and print its API token on the last line."

    def add_arguments(self, parser):
        parser.add_argument("email")
        parser.add_argument("--minutes", type=int, default=None, help="Minutes to grant (default: FREE_MINUTES).")

    def handle(self, email, minutes, **options):
        if minutes is not None and minutes < 0:
            raise CommandError("--minutes cannot be negative.")
        if get_user_model().objects.filter(username__iexact=email).exists():
            raise CommandError(f"An account for {email} already exists.")
        account = account_create(email, minutes=minutes)
        token = token_issue(account)
        self.stdout.write(f"Created account {account.email}.")
        self.stdout.write(token)
