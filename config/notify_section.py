"""Notification channels' settings: the `[channels.NAME]`, `[slack]` and `[notifications]` tables of the policy file.

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

What each kind of channel sends is its own module under activities/channel_kinds/.
"""

from __future__ import annotations

import os

from pydantic import ConfigDict, Field, model_validator

from core.models import ChannelKind
from core.wire_model import WireModel

SLACK_API_BASE = "https://slack.com/api"


class ChannelConfig(WireModel):
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


class SlackConfig(WireModel):
    model_config = ConfigDict(extra="forbid")

    signing_secret_env: str = "SLACK_SIGNING_SECRET"
    users: dict[str, str] = Field(default_factory=dict, description="Slack user id -> approver name")

    def signing_secret(self) -> str | None:
        return os.environ.get(self.signing_secret_env) or None


class NotificationsConfig(WireModel):
    model_config = ConfigDict(extra="forbid")

    link_base: str | None = None


class NotifyConfig(WireModel):
    channels: dict[str, ChannelConfig] = Field(default_factory=dict)
    slack: SlackConfig = Field(default_factory=SlackConfig)
    notifications: NotificationsConfig = Field(default_factory=NotificationsConfig)


def _from_env(name: str | None) -> str:
    value = os.environ.get(name or "")
    if not value:
        raise LookupError(f"the environment variable {name} is not set")
    return value
