"""The notify activity: one notification of one request to one channel, at most once per key.

Temporal retries it with backoff while a receiver is down. The execution ledger (the one that
guards tools) remembers each key: a key already delivered is never sent again. If a worker dies
in the middle of a send, nobody knows whether it arrived: a webhook is then sent again with the
same `Idempotency-Key` (the receiver drops what it has seen), while a Slack message, which has no
such key, is not sent again (at most once). A channel that writes to people one by one (email)
guards each person on their own (`Reach.once`, activities/notify_reach.py): a retry reaches those an
earlier attempt missed, and nobody twice.

A channel whose messages can change (Slack's Web API) records where it posted with its key; once
the request is decided through any door but the channel's own (whose buttons update the pressed
message themselves), each such message is updated once, through the same ledger, to say who
decided and through which door. What each kind sends, and whether it is a door, is its class in
channels/.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.ledger import Ledger
from activities.notify_reach import Directory, NotificationReach
from activities.worker_metrics import NOTIFICATION_FAILURES, NOTIFICATIONS_SENT
from channels.base import Channel, NotDelivered, Sent, card_url
from channels.push import PushBook
from config.notify_section import NotifyConfig
from config.telemetry import span
from core.contract import ERROR_NOTIFICATION_REJECTED
from core.conversation_model import ApprovalRecord, NotificationInput
from core.tool_run_model import ToolResult
from workflows.activity_calls import NOTIFY_APPROVAL

RETRIED_STATUSES = {408, 425, 429}
log = logging.getLogger(__name__)


class NotifyActivities:
    def __init__(
        self,
        config: NotifyConfig,
        link_base: str,
        ledger: Ledger,
        people: Directory | None = None,
        link_key: Callable[[], bytes] | None = None,
        push: PushBook | None = None,
    ) -> None:
        """people: where names and emails are read; link_key: the key decision links are signed with
        (read when a channel first asks for a person's link)."""
        self._config = config
        self._link_base = link_base
        self._ledger = ledger
        self._people = people
        self._link_key = link_key
        self._push = push

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
        claim = await self._ledger.claim(key, _posted(channel), attempt)
        if claim.verdict == "finished":
            return f"{key}: delivered earlier"
        if claim.verdict == "unknown" and not channel.repeats_safely and not channel.guards_each_person:
            return f"{key}: an earlier attempt may have delivered it; {channel.name} messages are not repeated"
        await self._ledger.start(key, attempt)
        attributes = {"approval.request_id": notification.request_id, "notify.channel": notification.channel}
        try:
            with span("approval.notify", {**attributes, "notify.kind": notification.kind}):
                delivered = await self._deliver(channel, notification, key)
        except Exception:
            NOTIFICATION_FAILURES.labels(notification.channel).inc()
            raise
        NOTIFICATIONS_SENT.labels(notification.channel).inc()
        return delivered

    async def _deliver(self, channel: Channel, notification: NotificationInput, key: str) -> str:
        try:
            sent = await self._send(channel, notification)
        except LookupError as err:  # a variable the channel needs is not set
            await self._ledger.release(key)
            raise ApplicationError(str(err), type=ERROR_NOTIFICATION_REJECTED, non_retryable=True) from None
        except httpx.ConnectError as err:
            await self._ledger.release(key)  # nothing reached the receiver: the next attempt sends it
            raise RuntimeError(f"{notification.channel}: cannot connect: {err}") from None
        except NotDelivered as err:
            await self._ledger.release(key)  # whoever it did reach is kept by their own key (Reach.once)
            message = f"{notification.channel}: {err}"
            if not err.retryable:
                raise ApplicationError(message, type=ERROR_NOTIFICATION_REJECTED, non_retryable=True) from None
            raise RuntimeError(message) from None
        if sent.status >= 300:
            await self._ledger.release(key)
            message = f"{notification.channel} answered HTTP {sent.status}{sent.detail}"
            if 400 <= sent.status < 500 and sent.status not in RETRIED_STATUSES:
                raise ApplicationError(message, type=ERROR_NOTIFICATION_REJECTED, non_retryable=True)
            raise RuntimeError(message)
        record = {"delivered_at": round(time.time()), **sent.posted}
        await self._ledger.finish(key, ToolResult(content=json.dumps(record, sort_keys=True)))
        return f"{key}: delivered"

    async def _send(self, channel: Channel, notification: NotificationInput) -> Sent:
        reach = NotificationReach(
            notification,
            card_url(self._link_base, notification.request_id),
            self._link_base,
            self._ledger,
            f"{_posted(channel)}:person",
            activity.info().attempt,
            channel.repeats_safely,
            self._people,
            self._link_key,
            push=self._push,
        )
        async with httpx.AsyncClient(timeout=channel.timeout_seconds) as http:
            return await channel.send(http, notification, reach)

    async def message_decided(self, record: ApprovalRecord) -> None:
        """Update, once each, the messages that can change posted for a request now decided. Never
        raises: the message is a view, and the decision is recorded already."""
        if record.resolution is None:
            return
        for name, channel in self._config.channels.items():
            if not channel.updates_messages() or record.decided_via == channel.door:
                continue  # its messages cannot change, or its own buttons decided and answered
            try:
                posted = await self._ledger.finished_under(f"{record.request_id}:{name}:", _posted(channel))
                for key, result in sorted(posted.items()):
                    await self._update_once(channel, key, result, record)
            except Exception:
                log.warning("could not update the %s messages of %s", channel.name, record.request_id, exc_info=True)

    async def _update_once(self, channel: Channel, key: str, posted: ToolResult, record: ApprovalRecord) -> None:
        try:
            delivered = json.loads(posted.content)
        except ValueError:
            return
        message = channel.message_of(delivered) if isinstance(delivered, dict) else None
        if message is None:
            return  # nothing recorded to update
        update_key = f"{key}:decided"
        claim = await self._ledger.claim(update_key, f"{_posted(channel)}-update", 1)
        if claim.verdict != "run" or not await self._ledger.start(update_key, 1):
            return
        link = card_url(self._link_base, record.request_id)
        async with httpx.AsyncClient(timeout=channel.timeout_seconds) as http:
            answer = await channel.update(http, message, record, link)
        if not answer.ok:
            log.warning("%s refused to update %s: %s", channel.name, key, answer.error)
        await self._ledger.finish(update_key, ToolResult(content=json.dumps({"ok": answer.ok, "error": answer.error})))


def _posted(channel: Channel) -> str:
    """The ledger's name for a delivery through this channel's kind ("notify:webhook", "notify:slack")."""
    return f"notify:{channel.kind}"
