from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from .models import ApiToken
from .tokens import looks_like_token, token_digest

# Writing last_used_at on every poll would turn each read into a write; once a minute is enough.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>`. request.user is the Account."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request)
        if not header:
            return None
        try:
            parts = header.decode("ascii").split()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Malformed Authorization header.") from None
        if len(parts) != 2 or parts[0].lower() != self.keyword.lower():
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <token>'.")
        token = parts[1]
        if not looks_like_token(token):
            raise exceptions.AuthenticationFailed("Malformed API token.")
        api_token = (
            ApiToken.objects.select_related("account__user").filter(digest=token_digest(token)).first()
        )
        if api_token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API token.")
        now = timezone.now()
        if api_token.last_used_at is None or now - api_token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=api_token.pk).update(last_used_at=now)
        account = api_token.account
        account.is_authenticated = True  # what DRF's IsAuthenticated asks of request.user
        return account, api_token

    def authenticate_header(self, request):
        return self.keyword
