"""Every kind of notification channel, by the `kind` its table names: the one list.

The configuration's channel types (config/notify_section.py), the notify activity, the doors a
decision may come through and the UI's door routes are all read from here, so a new kind is its
module and one line below (docs/development.md, "Adding a channel").
"""

from __future__ import annotations

from channels.base import Channel
from channels.email import EmailChannel
from channels.push import PushChannel
from channels.slack import SlackChannel
from channels.webhook import WebhookChannel

CHANNEL_KINDS: dict[str, type[Channel]] = {
    "webhook": WebhookChannel,
    "slack": SlackChannel,
    "email": EmailChannel,
    "push": PushChannel,
}
DEFAULT_KIND = "webhook"  # a channel table without `kind`, as before there were kinds


def deciding_kinds() -> dict[str, type[Channel]]:
    """The kinds that are also doors (their buttons decide), by kind."""
    return {kind: channel for kind, channel in CHANNEL_KINDS.items() if channel.door is not None}
