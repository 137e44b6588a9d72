from django.core.management.base import BaseCommand, CommandError

from accounts.models import Account
from billing.selectors import account_balance
from billing.services import grant_staff_minutes


class Command(BaseCommand):
    help = "Add a staff grant of minutes to an account's ledger."

    def add_arguments(self, parser):
        parser.add_argument("email")
        parser.add_argument("minutes", type=int)
        parser.add_argument("--reason", required=True, help="Why the minutes are granted (kept in the ledger).")

    def handle(self, email, minutes, reason, **options):
        account = Account.objects.filter(user__email__iexact=email).first()
        if account is None:
            raise CommandError(f"No account for {email}.")
        try:
            grant_staff_minutes(account, minutes, reason=reason)
        except ValueError as error:
            raise CommandError(str(error)) from None
        balance = account_balance(account.pk)
        self.stdout.write(
            f"Granted {minutes} minutes to {account.email}; balance is now {balance // 60} min {balance % 60} s."
        )
