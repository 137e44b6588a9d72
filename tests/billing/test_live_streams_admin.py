"""Live streams in the admin: support sees what a customer asking about a live charge was charged
(billing 0007 gives the group the view, which came after accounts 0004's), and nobody changes one."""

import pytest
from django.urls import reverse

from billing.models import LiveStream

pytestmark = pytest.mark.django_db


def test_support_views_a_live_stream_and_changes_or_deletes_none(support_client, account):
    stream = LiveStream.objects.create(account=account, seconds=4242, held=5000, ended="the client closed")
    listing = support_client.get(reverse("admin:billing_livestream_changelist"))
    assert listing.status_code == 200
    assert "4242" in listing.content.decode() and account.user.email in listing.content.decode()
    change = reverse("admin:billing_livestream_change", args=[stream.pk])
    page = support_client.get(change)
    assert page.status_code == 200 and "the client closed" in page.content.decode()
    assert support_client.post(change, {"seconds": 0}).status_code == 403
    assert support_client.post(reverse("admin:billing_livestream_delete", args=[stream.pk])).status_code == 403
    stream.refresh_from_db()
    assert stream.seconds == 4242
