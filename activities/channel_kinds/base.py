"""What a kind of notification channel is: one small class that sends a notification (and, if its
messages can change, updates one once its request is decided).

The notify activity owns everything around a send: the execution ledger's once-per-key guard, the
HTTP client, and what a status means (retried or refused). A kind only builds and sends its
payload, so adding a channel is its module plus a line in the registry (channel_kinds/__init__.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar
from urllib.parse import quote

import httpx

from config.notify_section import ChannelConfig
from core.models import ApprovalRecord, NotificationInput

IDEMPOTENCY_HEADER = "Idempotency-Key"


def card_url(link_base: str, request_id: str) -> str:
    """The request's deep link: the inbox opens straight to its card (after a login if needed)."""
    return f"{link_base.rstrip('/')}/approvals/{quote(request_id, safe='')}"


@dataclass(frozen=True)
class Sent:
    """The receiver's status, what it said of a refusal, and where a message that can change was posted."""

    status: int
    detail: str = ""
    posted: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Updated:
    ok: bool
    error: str | None = None


class Channel:
    """One kind of channel. Its messages cannot change unless it says otherwise."""

    name: ClassVar[str]  # as messages and logs name it
    # An attempt whose outcome nobody knows (the worker died mid-send) may be sent again: the
    # receiver drops what it has seen by the Idempotency-Key header.
    repeats_safely: ClassVar[bool] = True

    async def send(
        self, http: httpx.AsyncClient, channel: ChannelConfig, notification: NotificationInput, link: str
    ) -> Sent:
        raise NotImplementedError

    def updates_messages(self, channel: ChannelConfig) -> bool:
        return False

    def message_of(self, delivered: Mapping[str, object]) -> dict[str, str] | None:
        """Where the delivery recorded a message to update; None: none (nothing to update)."""
        return None

    async def update(
        self,
        http: httpx.AsyncClient,
        channel: ChannelConfig,
        message: dict[str, str],
        record: ApprovalRecord,
        link: str,
    ) -> Updated:
        raise NotImplementedError
