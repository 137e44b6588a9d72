"""Mail to an account's holder when someone else changes what only the holder should: their
token, their webhook, their minutes, their plan. Support staff can do all of that in the admin (and see a new
token once); the holder learns of it from us, not from a surprise (docs/decisions.md, "What
support may do").

Sent after the change commits (a change rolled back tells nobody), and never by the holder's own
actions on their pages. A mail that cannot be sent is logged: the change stands and stays in the
audit log.
"""

from __future__ import annotations

import logging

from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string

from .models import AuditEvent

logger = logging.getLogger(__name__)

# The actions the holder is told of, each with the mail's subject (keyed by the stored value).
NOTIFIED: dict[str, str] = {
    AuditEvent.Action.TOKEN_ISSUED: "An API token was issued for your account",
    AuditEvent.Action.TOKEN_REPLACED: "Your API token was replaced",
    AuditEvent.Action.TOKEN_REVOKED: "Your API token was revoked",
    AuditEvent.Action.WEBHOOK_SET: "Your webhook was changed",
    AuditEvent.Action.WEBHOOK_ROTATED: "Your webhook's signing secret was replaced",
    AuditEvent.Action.WEBHOOK_REMOVED: "Your webhook was removed",
    AuditEvent.Action.MINUTES_GRANTED: "Minutes were added to your account",
    AuditEvent.Action.PLAN_CHANGED: "Your plan was changed",
    AuditEvent.Action.RENEWAL_DATE_CHANGED: "Your plan's renewal date was changed",
}


def notify_holder(event: AuditEvent) -> None:
    """Mail the holder about `event` after commit, if it is one they are told of and a person
    other than the holder did it."""
    if event.action not in NOTIFIED or event.actor_id is None or event.actor_id == event.account.user_id:
        return
    recipient = event.account.user.email
    subject = NOTIFIED[event.action]
    body = render_to_string(
        "audit/email/support_notice.txt",
        {"email": recipient, "what": event.get_action_display(), "detail": event.detail, "at": event.created_at},
    )

    def send() -> None:
        try:
            send_mail(subject, body, None, [recipient])
        except Exception:  # the change is made and audited; a mail server that is down cannot undo it
            logger.exception("Could not mail %s about %s", recipient, event.action)

    transaction.on_commit(send)
