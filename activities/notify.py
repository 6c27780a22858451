"""The notify activity: one notification of one request to one channel, at most once per key.

Temporal retries it with backoff while a receiver is down. The execution ledger (the one that
guards tools) remembers each key: a key already delivered is never sent again. If a worker dies
in the middle of a send, nobody knows whether it arrived: a webhook is then sent again with the
same `Idempotency-Key` (the receiver drops what it has seen), while a Slack message, which has no
such key, is not sent again (at most once).
"""

from __future__ import annotations

import time

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.channels import (
    IDEMPOTENCY_HEADER,
    ChannelConfig,
    NotifyConfig,
    card_url,
    slack_message,
    webhook_body,
    webhook_headers,
)
from activities.ledger import Ledger
from workflows.activity_calls import ERROR_NOTIFICATION_REJECTED, NOTIFY_APPROVAL
from workflows.models import NotificationInput, ToolResult

RETRIED_STATUSES = {408, 425, 429}


class NotifyActivities:
    def __init__(self, config: NotifyConfig, link_base: str, ledger: Ledger) -> None:
        self._config = config
        self._link_base = link_base
        self._ledger = ledger

    @activity.defn(name=NOTIFY_APPROVAL)
    async def notify_approval(self, notification: NotificationInput) -> str:
        channel = self._config.channels.get(notification.channel)
        if channel is None:
            raise ApplicationError(
                f"no channel {notification.channel!r} in this worker's configuration",
                type=ERROR_NOTIFICATION_REJECTED,
                non_retryable=True,
            )
        key, attempt = notification.key, activity.info().attempt
        claim = await self._ledger.claim(key, f"notify:{channel.kind}", attempt)
        if claim.verdict == "finished":
            return f"{key}: delivered earlier"
        if claim.verdict == "unknown" and channel.kind == "slack":
            return f"{key}: an earlier attempt may have delivered it; Slack messages are not repeated"
        await self._ledger.start(key, attempt)
        try:
            status = await self._send(channel, notification)
        except LookupError as err:  # a variable the channel needs is not set
            await self._ledger.release(key)
            raise ApplicationError(str(err), type=ERROR_NOTIFICATION_REJECTED, non_retryable=True) from None
        except httpx.ConnectError as err:
            await self._ledger.release(key)  # nothing reached the receiver: the next attempt sends it
            raise RuntimeError(f"{notification.channel}: cannot connect: {err}") from None
        if status >= 300:
            await self._ledger.release(key)
            message = f"{notification.channel} answered HTTP {status}"
            if 400 <= status < 500 and status not in RETRIED_STATUSES:
                raise ApplicationError(message, type=ERROR_NOTIFICATION_REJECTED, non_retryable=True)
            raise RuntimeError(message)
        await self._ledger.finish(key, ToolResult(content=f"delivered at {time.time():.0f}"))
        return f"{key}: delivered"

    async def _send(self, channel: ChannelConfig, notification: NotificationInput) -> int:
        link = card_url(self._link_base, notification.request_id)
        async with httpx.AsyncClient(timeout=channel.timeout_seconds) as http:
            if channel.kind == "slack":
                headers = {IDEMPOTENCY_HEADER: notification.key}
                response = await http.post(
                    channel.resolved_url(), json=slack_message(notification, link), headers=headers
                )
            else:
                body = webhook_body(notification, link)
                headers = webhook_headers(notification, channel.resolved_secret(), body)
                response = await http.post(channel.resolved_url(), content=body, headers=headers)
        return response.status_code
