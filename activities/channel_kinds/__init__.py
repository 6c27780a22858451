"""Every kind of notification channel the configuration accepts, by the `kind` a channel names."""

from __future__ import annotations

from activities.channel_kinds.base import Channel
from activities.channel_kinds.slack import SlackChannel
from activities.channel_kinds.webhook import WebhookChannel

CHANNEL_KINDS: dict[str, type[Channel]] = {
    "webhook": WebhookChannel,
    "slack": SlackChannel,
}
