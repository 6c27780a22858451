"""Channel kinds: one class per kind the configuration accepts, at once its settings and its sender,
each sending to a real HTTP receiver what its receivers expect (a signed webhook, a Slack message,
a Web API post updated later)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import get_args

import httpx
import pytest

from channels import CHANNEL_KINDS, deciding_kinds
from channels.base import Channel, card_url
from channels.slack import SlackChannel
from channels.webhook import WebhookChannel
from config.settings import Settings
from core.conversation_model import BUILT_IN_DOORS, ApprovalRecord, NotificationInput
from tests.support.notify_support import WEBHOOK_SECRET, CardReach, Receiver, verify_webhook

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


def channels(tmp_path: Path, receiver: Receiver) -> dict[str, Channel]:
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
    for kind, channel in CHANNEL_KINDS.items():
        assert issubclass(channel, Channel) and channel.send is not Channel.send, kind
        assert get_args(channel.model_fields["kind"].annotation) == (kind,), "its key is its kind"
        assert channel.name
    # The kinds tested here are registered as these classes (each other kind has its own tests).
    assert {kind: type(channel) for kind, channel in channels_by_kind().items()}.items() <= CHANNEL_KINDS.items()


def test_a_door_is_named_once_and_its_route_is_mounted() -> None:
    from ui.server import door_routers

    doors = [channel.door for channel in deciding_kinds().values()]
    assert doors == ["slack"] and not set(doors) & set(BUILT_IN_DOORS) and len(set(doors)) == len(doors)
    paths = {route.path for router in door_routers() for route in router.routes}  # type: ignore[attr-defined]
    assert paths == {"/slack/actions"}


def channels_by_kind() -> dict[str, Channel]:
    """One configured channel of each kind, as the file's tables give them."""
    return {
        "webhook": WebhookChannel(kind="webhook", url="http://hook.example", secret="s"),
        "slack": SlackChannel(kind="slack", url="http://slack.example"),
    }


async def test_a_webhook_is_signed_and_carries_its_key(tmp_path: Path, receiver: Receiver) -> None:
    hook = channels(tmp_path, receiver)["hook"]
    async with httpx.AsyncClient() as http:
        sent = await hook.send(http, NOTICE, CardReach(LINK))
    assert (sent.status, sent.posted) == (200, {})
    [delivery] = receiver.at("/hook")
    assert verify_webhook(delivery, WEBHOOK_SECRET)
    assert delivery.headers["idempotency-key"] == NOTICE.key
    assert delivery.json()["url"] == LINK and delivery.json()["type"] == "approval.request"
    assert isinstance(hook, WebhookChannel) and hook.repeats_safely and not hook.updates_messages()


async def test_a_slack_webhook_posts_the_message_and_is_never_repeated(tmp_path: Path, receiver: Receiver) -> None:
    slack = channels(tmp_path, receiver)["slack"]
    async with httpx.AsyncClient() as http:
        sent = await slack.send(http, NOTICE, CardReach(LINK))
    assert (sent.status, sent.posted) == (200, {})
    [delivery] = receiver.at("/slack")
    assert delivery.json()["text"].endswith("run_shell (perm_c_1)")
    assert isinstance(slack, SlackChannel) and not slack.repeats_safely and not slack.updates_messages()


async def test_a_slack_web_api_post_is_recorded_and_updated_where_it_was_posted(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHANNEL_KINDS_TOKEN", "xoxb-test")
    app = channels(tmp_path, receiver)["app"]
    async with httpx.AsyncClient() as http:
        sent = await app.send(http, NOTICE, CardReach(LINK))
        message = app.message_of({"delivered_at": 1, **sent.posted})
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
        updated = await app.update(http, message, record, LINK)
    assert updated.ok and app.updates_messages() and app.message_of({"delivered_at": 1}) is None
    [posted] = receiver.at("/api/chat.postMessage")
    [update] = receiver.at("/api/chat.update")
    assert posted.headers["authorization"] == "Bearer xoxb-test" and posted.json()["channel"] == "C1"
    assert (update.json()["channel"], update.json()["ts"]) == ("C1", "17.5")
    assert update.json()["text"].startswith("Denied by alice via cli")
