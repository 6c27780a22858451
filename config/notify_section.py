"""Notification settings: the `[channels.NAME]` tables, `[notifications]`, and the own table of each
channel that is also a door (`[slack]`), from the policy file.

They live in the configuration file (POLICY_FILE) beside the rules; secrets come from the
environment (`*_env`), so the file can be shared:

    [notifications]
    link_base = "https://approvals.example.com"   # where the cards' links point (default: the UI's address)
    [channels.ops-hook]
    kind = "webhook"            # the default
    url = "https://hooks.example.com/approvals"
    secret_env = "OPS_HOOK_SECRET"
    groups = ["ops"]            # requests group:ops may decide; "*": every request
    [channels.ops-slack]
    kind = "slack"
    url_env = "OPS_SLACK_WEBHOOK"
    [slack]
    users = { U012ABCDEF = "alice" }

This module knows no kind: each channel's table is checked by its kind's own class, and each door's
table by that kind's settings type, both read from the registry (channels/__init__.py) when the
file is read.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from functools import lru_cache, reduce
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, create_model
from pydantic_core import InitErrorDetails, PydanticCustomError

from channels import CHANNEL_KINDS, DEFAULT_KIND
from channels.base import Channel
from core.wire_model import WireModel

DoorSettings = TypeVar("DoorSettings", bound=BaseModel)


class NotificationsConfig(WireModel):
    model_config = ConfigDict(extra="forbid")

    link_base: str | None = None


class NotifyConfig(WireModel):
    """Read with notify_config(): `channels` then holds each channel as its kind's own class."""

    channels: dict[str, Channel] = Field(default_factory=dict)
    notifications: NotificationsConfig = Field(default_factory=NotificationsConfig)

    def door(self, settings: type[DoorSettings]) -> DoorSettings:
        """A door's settings, by their type (read from its kind's table, `[slack]`)."""
        found = [value for value in self.__dict__.values() if isinstance(value, settings)]
        return found[0] if found else settings()


def notify_config(data: Mapping[str, object]) -> NotifyConfig:
    """The notification settings of a policy file's tables (its other tables are not looked at)."""
    check_kinds(data.get("channels"))
    return _config_type(tuple(CHANNEL_KINDS.items())).model_validate(data)


def check_kinds(tables: object) -> None:
    """Refuse a channel whose kind no class is registered for, naming the kinds there are."""
    if not isinstance(tables, Mapping):
        return
    known = ", ".join(sorted(CHANNEL_KINDS))
    unknown = [
        InitErrorDetails(
            type=PydanticCustomError(
                "unknown_kind", "unknown kind '{kind}'; the known kinds are {known}", {"kind": kind, "known": known}
            ),
            loc=("channels", name, "kind"),
            input=kind,
        )
        for name, table in tables.items()
        if isinstance(table, Mapping) and (kind := str(table.get("kind", DEFAULT_KIND))) not in CHANNEL_KINDS
    ]
    if unknown:
        raise ValidationError.from_exception_data("channels", unknown)


@lru_cache(maxsize=8)
def _config_type(kinds: tuple[tuple[str, type[Channel]], ...]) -> type[NotifyConfig]:
    """NotifyConfig for these kinds: a channel is a union of their classes discriminated on `kind`,
    and each kind that is a door adds its top-level table."""
    known = ", ".join(sorted(kind for kind, _ in kinds))
    members = [Annotated[channel, Tag(kind)] for kind, channel in kinds]
    union: Any = Annotated[
        reduce(operator.or_, members),
        Discriminator(
            _kind_of,
            custom_error_type="unknown_kind",
            custom_error_message=f"a channel is a table whose kind is one of {known}",
        ),
    ]
    doors: dict[str, Any] = {
        kind: (channel.door_settings, Field(default_factory=channel.door_settings))
        for kind, channel in kinds
        if channel.door_settings is not None
    }
    channels: Any = (dict[str, union], Field(default_factory=dict))
    return create_model("NotifyConfig", __base__=NotifyConfig, channels=channels, **doors)


def _kind_of(table: object) -> object:
    if isinstance(table, Mapping):
        return table.get("kind", DEFAULT_KIND)
    return getattr(table, "kind", None)
