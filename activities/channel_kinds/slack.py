"""A Slack channel: an incoming webhook's message, or one posted through the Web API (a bot token).

A Slack message has no idempotency key, so an attempt whose outcome nobody knows is not sent again
(at most once). A message posted with `chat.postMessage` is recorded with its channel and `ts`, and
is updated once its request is decided (elsewhere than on its own buttons) to say who decided and
through which door. Every text taken from a request is escaped for Slack (activities/slack_text.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

import httpx

from activities import slack_api
from activities.channel_kinds.base import IDEMPOTENCY_HEADER, Channel, Sent, Updated
from activities.slack_preview import preview_blocks
from activities.slack_text import HIDDEN_NOTE, slack_safe
from config.notify_section import ChannelConfig
from core.models import ApprovalRecord, NotificationInput

ARGUMENTS_SHOWN = 2500  # characters of the arguments a chat message shows; the card shows them all


class SlackChannel(Channel):
    name: ClassVar[str] = "Slack"
    repeats_safely: ClassVar[bool] = False

    async def send(
        self, http: httpx.AsyncClient, channel: ChannelConfig, notification: NotificationInput, link: str
    ) -> Sent:
        message = slack_message(notification, link)
        if not channel.web_api:
            headers = {IDEMPOTENCY_HEADER: notification.key}
            response = await http.post(channel.resolved_url(), json=message, headers=headers)
            return Sent(response.status_code)
        answer = await slack_api.post_message(http, channel, message)
        if not answer.ok:
            return Sent(503 if answer.retried else 400, f" ({answer.error})")
        return Sent(200, "", {"slack_channel": answer.channel or "", "ts": answer.ts or ""})

    def updates_messages(self, channel: ChannelConfig) -> bool:
        return channel.web_api

    def message_of(self, delivered: Mapping[str, object]) -> dict[str, str] | None:
        if "slack_channel" not in delivered or "ts" not in delivered:
            return None  # posted by an incoming webhook (or before messages were recorded)
        return {"slack_channel": str(delivered["slack_channel"]), "ts": str(delivered["ts"])}

    async def update(
        self,
        http: httpx.AsyncClient,
        channel: ChannelConfig,
        message: dict[str, str],
        record: ApprovalRecord,
        link: str,
    ) -> Updated:
        decided = slack_decided_message(record, link)
        answer = await slack_api.update_message(http, channel, message["slack_channel"], message["ts"], decided)
        return Updated(answer.ok, answer.error)


_HEADLINES = {
    "request": "A tool call waits for approval",
    "reminder": "Reminder: a tool call still waits for approval",
    "escalation": "Escalated: a tool call has waited too long for approval",
    "expiry_warning": "Expires soon: a tool call still waits for approval",
}


def slack_message(notification: NotificationInput, link: str) -> dict[str, Any]:
    """An incoming-webhook message: the tool, its exact arguments, who may approve, buttons and a link."""
    shown = json.dumps(notification.arguments, indent=2, sort_keys=True, ensure_ascii=False)
    if len(shown) > ARGUMENTS_SHOWN:
        shown = f"{shown[:ARGUMENTS_SHOWN]}\n... ({len(shown)} characters: the card shows them all)"
    shown, args_hidden = slack_safe(shown, multiline=True)
    shown = shown.replace("```", "`\u200b``")  # the arguments cannot close the code block early
    tool, tool_hidden = slack_safe(notification.tool_name)
    request_id, _ = slack_safe(notification.request_id)
    approvers = [slack_safe(name)[0] for name in notification.approvers or []]
    who = ", ".join(approvers) if notification.approvers is not None else "anyone with access"
    headline = _HEADLINES[notification.kind]
    expires = notification.expires_at.strftime("%Y-%m-%d %H:%M UTC")
    return {
        "text": f"{headline}: {tool} ({request_id})",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*{headline}*: `{tool}`"}},
            *([_HIDDEN_BLOCK] if args_hidden or tool_hidden else []),
            {"type": "section", "text": {"type": "mrkdwn", "text": f"```{shown}```"}},
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": f"May approve: {who}. Expires {expires}. {request_id}"}],
            },
            *preview_blocks(notification, link),
            {
                "type": "actions",
                "block_id": "approval",
                "elements": [
                    _button("Allow", "approve", notification.request_id, "primary"),
                    _button("Deny", "deny", notification.request_id, "danger"),
                    {**_button("Open", "open", notification.request_id, None), "url": link},
                ],
            },
        ],
    }


_HIDDEN_BLOCK = {"type": "section", "text": {"type": "mrkdwn", "text": HIDDEN_NOTE}}

_OUTCOMES = {
    "allow": "Allowed",
    "always_allow": "Always allowed",
    "edit": "Allowed with edited arguments",
    "deny": "Denied",
    "expired": "Expired",
    "canceled": "Canceled",
    "stale": "Stale (the target changed; asked again)",
}


def slack_decided_message(record: ApprovalRecord, link: str) -> dict[str, Any]:
    """What a posted message becomes once its request is decided: who decided, through which door,
    and no buttons left to press."""
    outcome = _OUTCOMES.get(record.resolution or "", str(record.resolution))
    who = f" by {slack_safe(record.decided_by)[0]}" if record.decided_by else ""
    door = f" via {record.decided_via}" if record.decided_via else ""
    tool, request_id = slack_safe(record.tool_name)[0], slack_safe(record.request_id)[0]
    reason = f" {slack_safe(record.reason)[0]}" if record.reason else ""
    footer = {"type": "mrkdwn", "text": f"{request_id}.{reason} <{link}|Open>"}
    return {
        "text": f"{outcome}{who}{door}: {tool} ({request_id})",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*{outcome}*{who}{door}: `{tool}`"}},
            {"type": "context", "elements": [footer]},
        ],
    }


def _button(label: str, action: str, request_id: str, style: str | None) -> dict[str, Any]:
    button = {"type": "button", "action_id": action, "value": request_id, "text": {"type": "plain_text", "text": label}}
    return button if style is None else {**button, "style": style}
