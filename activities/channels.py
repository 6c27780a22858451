"""Notification channels: their configuration, and what each sends (a signed webhook, a Slack message).

They live in the configuration file (POLICY_FILE) beside the rules; secrets come from the
environment (`secret_env`), so the file can be shared:

    [notifications]
    link_base = "https://approvals.example.com"   # where the cards' links point (default: the UI's address)
    [channels.ops-hook]
    kind = "webhook"
    url = "https://hooks.example.com/approvals"
    secret_env = "OPS_HOOK_SECRET"
    groups = ["ops"]            # requests group:ops may decide; "*": every request
    [channels.ops-slack]
    kind = "slack"
    url_env = "OPS_SLACK_WEBHOOK"
    [channels.ops-slack-app]   # Slack's Web API: the message is updated when its request is decided
    kind = "slack"
    token_env = "OPS_SLACK_TOKEN"
    slack_channel = "C0123OPS"
    [slack]
    signing_secret_env = "SLACK_SIGNING_SECRET"
    users = { U012ABCDEF = "alice" }

A webhook's body is JSON; its `X-Approvals-Signature` header is `t=TIMESTAMP,v1=HEX` where HEX is
the HMAC-SHA256, keyed by the channel's secret, of `TIMESTAMP.BODY` (the raw body bytes).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, model_validator

from activities.slack_text import HIDDEN_NOTE, slack_safe
from core.models import ApprovalRecord, ChannelKind, NotificationInput

SIGNATURE_HEADER = "X-Approvals-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"
SLACK_API_BASE = "https://slack.com/api"
ARGUMENTS_SHOWN = 2500  # characters of the arguments a chat message shows; the card shows them all


class ChannelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: ChannelKind = "webhook"
    url: str | None = None
    url_env: str | None = Field(default=None, description="the variable holding the URL (a Slack webhook is a secret)")
    secret: str | None = Field(default=None, description="webhook signing secret; prefer secret_env")
    secret_env: str | None = None
    groups: list[str] = Field(default_factory=list)
    timeout_seconds: float = Field(default=10.0, gt=0)
    token_env: str | None = Field(
        default=None, description="Slack: the variable holding a bot token; posts via the Web API (url: its base)"
    )
    slack_channel: str | None = Field(default=None, description="Slack Web API: the channel id messages go to")

    @model_validator(mode="after")
    def _complete(self) -> ChannelConfig:
        if self.token_env is not None or self.slack_channel is not None:
            if self.kind != "slack" or self.token_env is None or self.slack_channel is None:
                raise ValueError("a Slack Web API channel needs kind slack, token_env and slack_channel")
            if self.url is not None and self.url_env is not None:
                raise ValueError("a channel takes at most one of url or url_env")
            return self
        if (self.url is None) == (self.url_env is None):
            raise ValueError("a channel needs exactly one of url or url_env")
        if self.kind == "webhook" and (self.secret is None) == (self.secret_env is None):
            raise ValueError("a webhook channel needs exactly one of secret or secret_env (its signing key)")
        return self

    @property
    def web_api(self) -> bool:
        """Posts through Slack's Web API (chat.postMessage), so its messages can be updated later."""
        return self.token_env is not None

    def resolved_url(self) -> str:
        if self.web_api and self.url is None and self.url_env is None:
            return SLACK_API_BASE
        return self.url or _from_env(self.url_env)

    def resolved_token(self) -> str:
        return _from_env(self.token_env)

    def resolved_secret(self) -> str:
        return self.secret or _from_env(self.secret_env)


class SlackConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    signing_secret_env: str = "SLACK_SIGNING_SECRET"
    users: dict[str, str] = Field(default_factory=dict, description="Slack user id -> approver name")

    def signing_secret(self) -> str | None:
        return os.environ.get(self.signing_secret_env) or None


class NotificationsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    link_base: str | None = None


class NotifyConfig(BaseModel):
    channels: dict[str, ChannelConfig] = Field(default_factory=dict)
    slack: SlackConfig = Field(default_factory=SlackConfig)
    notifications: NotificationsConfig = Field(default_factory=NotificationsConfig)


def _from_env(name: str | None) -> str:
    value = os.environ.get(name or "")
    if not value:
        raise LookupError(f"the environment variable {name} is not set")
    return value


def card_url(link_base: str, request_id: str) -> str:
    """The request's deep link: the inbox opens straight to its card (after a login if needed)."""
    return f"{link_base.rstrip('/')}/approvals/{quote(request_id, safe='')}"


def webhook_body(notification: NotificationInput, link: str) -> bytes:
    body: dict[str, Any] = {
        "type": f"approval.{notification.kind}",
        "idempotency_key": notification.key,
        "number": notification.number,
        "channel": notification.channel,
        "request_id": notification.request_id,
        "conversation_id": notification.conversation_id,
        "tool": notification.tool_name,
        "arguments": notification.arguments,
        "approvers": notification.approvers,
        "created_at": notification.created_at.isoformat(),
        "expires_at": notification.expires_at.isoformat(),
        "url": link,
    }
    return json.dumps(body, sort_keys=True, ensure_ascii=False).encode()


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for a body sent at `timestamp` (Unix seconds)."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def webhook_headers(notification: NotificationInput, secret: str, body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        IDEMPOTENCY_HEADER: notification.key,
        SIGNATURE_HEADER: sign(secret, int(time.time()), body),
    }


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
