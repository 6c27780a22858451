"""The notify activity: one notification of one request to one channel, at most once per key.

Temporal retries it with backoff while a receiver is down. The execution ledger (the one that
guards tools) remembers each key: a key already delivered is never sent again. If a worker dies
in the middle of a send, nobody knows whether it arrived: a webhook is then sent again with the
same `Idempotency-Key` (the receiver drops what it has seen), while a Slack message, which has no
such key, is not sent again (at most once).

A Slack channel with a bot token posts through the Web API and records the message's channel and
`ts` with its key; once the request is decided through any door but Slack's own buttons (which
update the pressed message themselves), each such message is updated once, through the same
ledger, to say who decided and through which door.
"""

from __future__ import annotations

import json
import logging
import time

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import slack_api
from activities.channels import (
    IDEMPOTENCY_HEADER,
    ChannelConfig,
    NotifyConfig,
    card_url,
    slack_decided_message,
    slack_message,
    webhook_body,
    webhook_headers,
)
from activities.ledger import Ledger
from core.models import ApprovalRecord, NotificationInput, ToolResult
from workflows.activity_calls import ERROR_NOTIFICATION_REJECTED, NOTIFY_APPROVAL

RETRIED_STATUSES = {408, 425, 429}
SLACK_POSTED = "notify:slack"
SLACK_UPDATED = "notify:slack-update"
log = logging.getLogger(__name__)


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
            status, detail, posted = await self._send(channel, notification)
        except LookupError as err:  # a variable the channel needs is not set
            await self._ledger.release(key)
            raise ApplicationError(str(err), type=ERROR_NOTIFICATION_REJECTED, non_retryable=True) from None
        except httpx.ConnectError as err:
            await self._ledger.release(key)  # nothing reached the receiver: the next attempt sends it
            raise RuntimeError(f"{notification.channel}: cannot connect: {err}") from None
        if status >= 300:
            await self._ledger.release(key)
            message = f"{notification.channel} answered HTTP {status}{detail}"
            if 400 <= status < 500 and status not in RETRIED_STATUSES:
                raise ApplicationError(message, type=ERROR_NOTIFICATION_REJECTED, non_retryable=True)
            raise RuntimeError(message)
        record = {"delivered_at": round(time.time()), **posted}
        await self._ledger.finish(key, ToolResult(content=json.dumps(record, sort_keys=True)))
        return f"{key}: delivered"

    async def _send(self, channel: ChannelConfig, notification: NotificationInput) -> tuple[int, str, dict[str, str]]:
        """The receiver's status, what it said of a refusal, and where a Web API message was posted."""
        link = card_url(self._link_base, notification.request_id)
        async with httpx.AsyncClient(timeout=channel.timeout_seconds) as http:
            if channel.web_api:
                answer = await slack_api.post_message(http, channel, slack_message(notification, link))
                if not answer.ok:
                    return (503 if answer.retried else 400), f" ({answer.error})", {}
                return 200, "", {"slack_channel": answer.channel or "", "ts": answer.ts or ""}
            if channel.kind == "slack":
                headers = {IDEMPOTENCY_HEADER: notification.key}
                response = await http.post(
                    channel.resolved_url(), json=slack_message(notification, link), headers=headers
                )
            else:
                body = webhook_body(notification, link)
                headers = webhook_headers(notification, channel.resolved_secret(), body)
                response = await http.post(channel.resolved_url(), content=body, headers=headers)
        return response.status_code, "", {}

    async def message_decided(self, record: ApprovalRecord) -> None:
        """Update, once each, the Web API messages posted for a request now decided. Never raises:
        the message is a view, and the decision is recorded already."""
        if record.resolution is None or record.decided_via == "slack":
            return
        for name, channel in self._config.channels.items():
            if not channel.web_api:
                continue
            try:
                posted = await self._ledger.finished_under(f"{record.request_id}:{name}:", SLACK_POSTED)
                for key, result in sorted(posted.items()):
                    await self._update_once(channel, key, result, record)
            except Exception:
                log.warning("could not update the Slack messages of %s", record.request_id, exc_info=True)

    async def _update_once(self, channel: ChannelConfig, key: str, posted: ToolResult, record: ApprovalRecord) -> None:
        try:
            where = json.loads(posted.content)
            slack_channel, ts = str(where["slack_channel"]), str(where["ts"])
        except (ValueError, KeyError, TypeError):
            return  # posted by an incoming webhook (or before messages were recorded): nothing to update
        update_key = f"{key}:decided"
        claim = await self._ledger.claim(update_key, SLACK_UPDATED, 1)
        if claim.verdict != "run" or not await self._ledger.start(update_key, 1):
            return
        message = slack_decided_message(record, card_url(self._link_base, record.request_id))
        async with httpx.AsyncClient(timeout=channel.timeout_seconds) as http:
            answer = await slack_api.update_message(http, channel, slack_channel, ts, message)
        if not answer.ok:
            log.warning("Slack refused to update %s: %s", key, answer.error)
        await self._ledger.finish(update_key, ToolResult(content=json.dumps({"ok": answer.ok, "error": answer.error})))
