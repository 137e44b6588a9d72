from django.core.management.base import BaseCommand, CommandError

from accounts.models import Account
from webhooks.models import Message
from webhooks.services import WebhookUrlError, endpoint_remove, endpoint_rotate_secret, endpoint_set


class Command(BaseCommand):
    help = (
        "Set an account's webhook URL and print a signing secret alone on the last line. On an account "
        "that has a webhook already, the URL is changed and the secret rotated (the old one signs for 24 h "
        "more), so no secret is ever printed twice."
    )

    def add_arguments(self, parser):
        parser.add_argument("email")
        parser.add_argument("url", nargs="?", help="The receiver's http(s) address.")
        parser.add_argument("--remove", action="store_true", help="Remove the account's webhook instead.")

    def handle(self, email, url, remove, **options):
        account = Account.objects.select_related("user").filter(user__email__iexact=email.strip()).first()
        if account is None:
            raise CommandError(f"No account for {email}.")
        if remove:
            if not endpoint_remove(account):
                raise CommandError(f"{account.email} has no webhook.")
            self.stdout.write(f"Removed the webhook of {account.email}.")
            return
        if not url:
            raise CommandError("Give the webhook URL (or --remove).")
        try:
            secret = endpoint_set(account, url)
        except WebhookUrlError as error:
            raise CommandError(f"{url}: {error}") from None
        if secret is None:
            secret = endpoint_rotate_secret(account)
            self.stdout.write(
                f"Webhook of {account.email} now posts to {url}; the previous secret signs for 24 h more."
            )
        else:
            self.stdout.write(f"Webhook of {account.email} posts to {url}.")
        self.stdout.write(f"Events: {', '.join(Message.EventType.values)}. Signing secret:")
        self.stdout.write(secret)
