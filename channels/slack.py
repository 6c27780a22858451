"""A Slack channel: an incoming webhook's message, or one posted through the Web API (a bot token);
and Slack's buttons, a door that decides (its `[slack]` table; its route is ui/slack.py).

A Slack message has no idempotency key, so an attempt whose outcome nobody knows is not sent again
(at most once). A message posted with `chat.postMessage` is recorded with its channel and `ts`, and
is updated once its request is decided (elsewhere than on its own buttons) to say who decided and
through which door. Every text taken from a request is escaped for Slack (channels/slack_text.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from channels import slack_api
from channels.base import IDEMPOTENCY_HEADER, Channel, Reach, Sent, Updated, from_env
from channels.slack_preview import preview_blocks
from channels.slack_text import HIDDEN_NOTE, slack_safe
from core.conversation_model import ApprovalRecord, NotificationInput
from core.wire_model import WireModel

if TYPE_CHECKING:
    import httpx

ARGUMENTS_SHOWN = 2500  # characters of the arguments a chat message shows; the card shows them all
SLACK_API_BASE = "https://slack.com/api"
SLACK_DOOR = "slack"  # the door a press of its buttons is recorded with


class SlackDoor(WireModel):
    """The `[slack]` table: how the buttons' requests are checked, and who a Slack user is here."""

    model_config = ConfigDict(extra="forbid")

    signing_secret_env: str = "SLACK_SIGNING_SECRET"
    users: dict[str, str] = Field(default_factory=dict, description="Slack user id -> approver name")

    def signing_secret(self) -> str | None:
        return os.environ.get(self.signing_secret_env) or None


class SlackChannel(Channel):
    """`kind = "slack"`: an incoming webhook (`url` or `url_env`), or the Web API (`token_env` and
    `slack_channel`; `url`: the API's base)."""

    kind: Literal["slack"]
    url: str | None = None
    url_env: str | None = Field(default=None, description="the variable holding the URL (a webhook's is a secret)")
    token_env: str | None = Field(default=None, description="the variable holding a bot token: posts via the Web API")
    slack_channel: str | None = Field(default=None, description="Web API: the channel id messages go to")

    name: ClassVar[str] = "Slack"
    repeats_safely: ClassVar[bool] = False
    door: ClassVar[str | None] = SLACK_DOOR
    door_settings: ClassVar[type[SlackDoor]] = SlackDoor
    door_router: ClassVar[str | None] = "ui.slack"

    @model_validator(mode="after")
    def _complete(self) -> SlackChannel:
        if self.token_env is not None or self.slack_channel is not None:
            if self.token_env is None or self.slack_channel is None:
                raise ValueError("a Slack Web API channel needs token_env and slack_channel")
            if self.url is not None and self.url_env is not None:
                raise ValueError("a channel takes at most one of url or url_env")
        elif (self.url is None) == (self.url_env is None):
            raise ValueError("a channel needs exactly one of url or url_env")
        return self

    @property
    def web_api(self) -> bool:
        """Posts through Slack's Web API (chat.postMessage), so its messages can be updated later."""
        return self.token_env is not None

    def _api(self) -> slack_api.WebApi:
        base = SLACK_API_BASE if self.url is None and self.url_env is None else self.url or from_env(self.url_env)
        return slack_api.WebApi(base, from_env(self.token_env), self.slack_channel or "")

    async def send(self, http: httpx.AsyncClient, notification: NotificationInput, reach: Reach) -> Sent:
        message = slack_message(notification, reach.card_link)
        if not self.web_api:
            headers = {IDEMPOTENCY_HEADER: notification.key}
            response = await http.post(self.url or from_env(self.url_env), json=message, headers=headers)
            return Sent(response.status_code)
        answer = await slack_api.post_message(http, self._api(), message)
        if not answer.ok:
            return Sent(503 if answer.retried else 400, f" ({answer.error})")
        return Sent(200, "", {"slack_channel": answer.channel or "", "ts": answer.ts or ""})

    def updates_messages(self) -> bool:
        return self.web_api

    def message_of(self, delivered: Mapping[str, object]) -> dict[str, str] | None:
        if "slack_channel" not in delivered or "ts" not in delivered:
            return None  # posted by an incoming webhook (or before messages were recorded)
        return {"slack_channel": str(delivered["slack_channel"]), "ts": str(delivered["ts"])}

    async def update(
        self, http: httpx.AsyncClient, message: dict[str, str], record: ApprovalRecord, link: str
    ) -> Updated:
        decided = slack_decided_message(record, link)
        answer = await slack_api.update_message(http, self._api(), message["slack_channel"], message["ts"], decided)
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
