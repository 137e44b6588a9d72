"""What the accounts app tells other apps, and what it does when a login changes.

`account_opened` is sent by accounts.services when an account is opened (an operator's, or a
confirmed sign-up), inside the transaction that opens it, with keyword arguments `account` and
`minutes` (its sign-up allowance): billing grants the minutes, so what it writes commits with the
account or not at all, and accounts never imports billing (billing knows accounts' core).

A login's status reaches every door within one request: whenever a login is saved with its
is_active possibly changed (support's deactivate action, the user admin's checkbox, a shell), the
cached lookup of its account's token is forgotten, so the next request, the poll fast lane's Lua
script included, reads the status from the database (accounts.authentication.token_holder)."""

from django.conf import settings
from django.db.models.signals import post_save
from django.dispatch import Signal, receiver

from config import shared_cache as cache

from .authentication import TOKEN_CACHE_SECONDS, token_cache_key, token_version_key
from .models import ApiToken

account_opened = Signal()


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="accounts.forget_token_on_status_change")
def forget_token_on_status_change(sender, instance, update_fields=None, **kwargs):
    if update_fields is not None and "is_active" not in update_fields:
        return  # a sign-in's last_login, a new password: the status did not change
    digest = ApiToken.objects.filter(account__user_id=instance.pk).values_list("digest", flat=True).first()
    if digest is not None:
        # Now and again after commit, moving the version: a lookup that read the old status
        # before the commit cannot cache it afterwards.
        cache.forget(token_cache_key(digest), token_version_key(digest), TOKEN_CACHE_SECONDS)
