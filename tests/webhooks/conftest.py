"""Webhook fixtures: a receiver on 127.0.0.1 that verifies signatures, and an account whose webhook
points at it."""

import pytest
from django.test import override_settings

from tests.webhooks.receiver import Receiver


@pytest.fixture
def receiver():
    with Receiver() as running:
        yield running


@pytest.fixture
def secret(account, receiver):
    """The account's webhook posts to the receiver, which verifies with the secret it was given."""
    from webhooks.services import endpoint_set

    with override_settings(ALLOW_PRIVATE_URLS=True):
        secret = endpoint_set(account, receiver.url())
    receiver.secrets = [secret]
    return secret
