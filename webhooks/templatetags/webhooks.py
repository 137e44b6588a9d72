from django import template

from webhooks.models import Endpoint, Message

register = template.Library()

RECENT_EVENTS = 20


@register.inclusion_tag("webhooks/card.html")
def webhook_card(account):
    """The API page's webhook section: the endpoint and the latest events with every attempt."""
    return {
        "endpoint": Endpoint.objects.filter(account=account).first(),
        "events": list(Message.objects.filter(account=account).prefetch_related("attempts")[:RECENT_EVENTS]),
        "events_limit": RECENT_EVENTS,
    }
