"""Channel kinds: one class per kind the configuration accepts, each sending to a real HTTP receiver
what its receivers expect (a signed webhook, a Slack message, a Web API post updated later)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import get_args

import httpx
import pytest

from activities.channel_kinds import CHANNEL_KINDS
from activities.channel_kinds.base import Channel, card_url
from config.notify_section import ChannelConfig
from config.settings import Settings
from core.models import ApprovalRecord, ChannelKind, NotificationInput
from tests.notify_support import WEBHOOK_SECRET, Receiver, verify_webhook

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NOTICE = NotificationInput(
    key="perm_c_1:hook:request:1",
    channel="hook",
    kind="request",
    request_id="perm_c_1",
    conversation_id="c",
    tool_name="run_shell",
    arguments={"command": "ls"},
    approvers=["group:ops"],
    expires_at=NOW + timedelta(hours=1),
    created_at=NOW,
)
LINK = card_url("http://inbox.example", "perm_c_1")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver(answer=lambda d: json.dumps({"ok": True, "channel": "C1", "ts": "17.5"}).encode()).start()
    yield running
    running.stop()


def channels(tmp_path: Path, receiver: Receiver) -> dict[str, ChannelConfig]:
    """The channels of a policy file, as the worker reads them."""
    path = tmp_path / "policy.toml"
    path.write_text(
        f'[channels.hook]\nkind = "webhook"\nurl = "{receiver.url("/hook")}"\nsecret = "{WEBHOOK_SECRET}"\n'
        f'[channels.slack]\nkind = "slack"\nurl = "{receiver.url("/slack")}"\n'
        f'[channels.app]\nkind = "slack"\nurl = "{receiver.url("/api")}"\ntoken_env = "CHANNEL_KINDS_TOKEN"\n'
        'slack_channel = "C1"\n'
    )
    return Settings(policy_file=str(path)).load_notify().channels


def test_the_registry_has_one_class_for_every_kind_the_configuration_accepts() -> None:
    accepted = set(get_args(ChannelKind))
    assert set(CHANNEL_KINDS) == accepted
    assert ChannelConfig.model_fields["kind"].annotation == ChannelKind
    for kind in CHANNEL_KINDS.values():
        assert issubclass(kind, Channel) and kind.send is not Channel.send, kind
        assert kind.name


async def test_a_webhook_is_signed_and_carries_its_key(tmp_path: Path, receiver: Receiver) -> None:
    hook = channels(tmp_path, receiver)["hook"]
    async with httpx.AsyncClient() as http:
        sent = await CHANNEL_KINDS["webhook"]().send(http, hook, NOTICE, LINK)
    assert (sent.status, sent.posted) == (200, {})
    [delivery] = receiver.at("/hook")
    assert verify_webhook(delivery, WEBHOOK_SECRET)
    assert delivery.headers["idempotency-key"] == NOTICE.key
    assert delivery.json()["url"] == LINK and delivery.json()["type"] == "approval.request"
    assert CHANNEL_KINDS["webhook"].repeats_safely and not CHANNEL_KINDS["webhook"]().updates_messages(hook)


async def test_a_slack_webhook_posts_the_message_and_is_never_repeated(tmp_path: Path, receiver: Receiver) -> None:
    slack = channels(tmp_path, receiver)["slack"]
    async with httpx.AsyncClient() as http:
        sent = await CHANNEL_KINDS["slack"]().send(http, slack, NOTICE, LINK)
    assert (sent.status, sent.posted) == (200, {})
    [delivery] = receiver.at("/slack")
    assert delivery.json()["text"].endswith("run_shell (perm_c_1)")
    assert not CHANNEL_KINDS["slack"].repeats_safely and not CHANNEL_KINDS["slack"]().updates_messages(slack)


async def test_a_slack_web_api_post_is_recorded_and_updated_where_it_was_posted(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHANNEL_KINDS_TOKEN", "xoxb-test")
    app = channels(tmp_path, receiver)["app"]
    kind = CHANNEL_KINDS["slack"]()
    async with httpx.AsyncClient() as http:
        sent = await kind.send(http, app, NOTICE, LINK)
        message = kind.message_of({"delivered_at": 1, **sent.posted})
        assert sent.posted == {"slack_channel": "C1", "ts": "17.5"} and message == sent.posted
        record = ApprovalRecord(
            request_id="perm_c_1",
            conversation_id="c",
            turn_id="t",
            tool_call_id="1",
            tool_name="run_shell",
            permission_type="execute",
            arguments={"command": "ls"},
            created_at=NOW,
            expires_at=NOW + timedelta(hours=1),
            resolution="deny",
            decided_by="alice",
            decided_via="cli",
        )
        updated = await kind.update(http, app, message, record, LINK)
    assert updated.ok and kind.updates_messages(app) and kind.message_of({"delivered_at": 1}) is None
    [posted] = receiver.at("/api/chat.postMessage")
    [update] = receiver.at("/api/chat.update")
    assert posted.headers["authorization"] == "Bearer xoxb-test" and posted.json()["channel"] == "C1"
    assert (update.json()["channel"], update.json()["ts"]) == ("C1", "17.5")
    assert update.json()["text"].startswith("Denied by alice via cli")
