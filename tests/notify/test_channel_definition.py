"""A notification channel is one definition: a kind defined here (its settings, its send, its door
and its door's route), registered with one line, is read from the file, checked by its own model,
sent through by the notify activity, decided through as a door, and mounted by the UI, with no
other edit anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

import pytest
from fastapi import APIRouter
from pydantic import Field
from temporalio.testing import ActivityEnvironment

from activities.ledger import Ledger
from activities.notify import NotifyActivities
from channels import CHANNEL_KINDS, deciding_kinds
from channels.base import IDEMPOTENCY_HEADER, Channel, Reach, Sent
from channels.webhook import WebhookChannel
from config.settings import ConfigError, Settings
from core.conversation_model import DecisionInput, NotificationInput
from core.wire_model import WireModel
from tests.support.notify_support import Receiver, write_policy

if TYPE_CHECKING:
    import httpx


class PagerDoor(WireModel):
    """The `[pager]` table: the settings of the pager's own door."""

    on_call: list[str] = Field(default_factory=list)


class PagerChannel(Channel):
    """`kind = "pager"`: one JSON page to `url`, for `team`; its acknowledgement decides (door `pager`)."""

    kind: Literal["pager"]
    url: str
    team: str = Field(min_length=1)

    name: ClassVar[str] = "pager"
    door: ClassVar[str | None] = "pager"
    door_settings: ClassVar[type[PagerDoor]] = PagerDoor
    door_router: ClassVar[str | None] = __name__

    async def send(self, http: httpx.AsyncClient, notification: NotificationInput, reach: Reach) -> Sent:
        page = {"team": self.team, "summary": f"{notification.tool_name} waits", "link": reach.card_link}
        response = await http.post(self.url, json=page, headers={IDEMPOTENCY_HEADER: notification.key})
        return Sent(response.status_code)


router = APIRouter()  # the door's route, mounted by the UI because the registry names this module


@router.post("/pager/ack")
async def acknowledge() -> dict[str, bool]:
    return {"ok": True}


@pytest.fixture
def pager(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(CHANNEL_KINDS, "pager", PagerChannel)  # the registry line
    yield


def pager_policy(tmp_path: Path, url: str, table: str = 'team = "ops"') -> str:
    body = f'[channels.ops-pager]\nkind = "pager"\nurl = "{url}"\n{table}\ngroups = ["ops"]\n'
    hook = '[channels.ops-hook]\nurl = "http://hook.example"\nsecret = "s"\n'
    return write_policy(tmp_path / "policy.toml", f'{body}\n{hook}\n[pager]\non_call = ["alice"]\n')


@pytest.mark.usefixtures("pager")
def test_its_table_reads_as_its_class_beside_the_kinds_before_it(tmp_path: Path) -> None:
    settings = Settings(policy_file=pager_policy(tmp_path, "http://pager.example/page"))
    config = settings.load_notify()
    channel = config.channels["ops-pager"]
    assert isinstance(channel, PagerChannel) and (channel.team, channel.groups) == ("ops", ["ops"])
    assert isinstance(config.channels["ops-hook"], WebhookChannel)
    assert config.door(PagerDoor).on_call == ["alice"]
    assert settings.load_policy().channels["ops-pager"].kind == "pager"  # what the workflow keeps


@pytest.mark.usefixtures("pager")
@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('team = "ops"\ncolour = "red"', "channels.ops-pager.pager.colour: Extra inputs are not permitted"),
        ('team = ""', "channels.ops-pager.pager.team: String should have at least 1 character"),
        ("", "channels.ops-pager.pager.team: Field required"),
    ],
)
def test_a_bad_field_is_one_line_naming_the_channel_and_the_field(tmp_path: Path, table: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings(policy_file=pager_policy(tmp_path, "http://pager.example/page", table)).load_notify()
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_an_unregistered_kind_is_refused_naming_the_known_kinds(tmp_path: Path) -> None:
    settings = Settings(policy_file=pager_policy(tmp_path, "http://pager.example/page"))
    for load in (settings.load_notify, settings.load_policy):
        with pytest.raises(ConfigError) as refused:
            load()
        known = ", ".join(sorted(CHANNEL_KINDS))
        said = f"channels.ops-pager.kind: unknown kind 'pager'; the known kinds are {known}"
        assert str(refused.value).endswith(said) and "\n" not in str(refused.value)


@pytest.mark.usefixtures("pager")
async def test_the_notify_activity_sends_through_it_once_per_key(tmp_path: Path) -> None:
    receiver = Receiver().start()
    ledger = Ledger(tmp_path / "ledger.db")
    try:
        config = Settings(policy_file=pager_policy(tmp_path, receiver.url("/page"))).load_notify()
        notify = NotifyActivities(config, "http://inbox.example", ledger)
        now = datetime.now(UTC)
        notice = NotificationInput(
            key="perm_c_1:ops-pager:request",
            channel="ops-pager",
            kind="request",
            request_id="perm_c_1",
            conversation_id="c",
            tool_name="run_shell",
            arguments={"command": "ls"},
            approvers=["group:ops"],
            expires_at=now + timedelta(hours=1),
            created_at=now,
        )
        assert await ActivityEnvironment().run(notify.notify_approval, notice) == f"{notice.key}: delivered"
        assert await ActivityEnvironment().run(notify.notify_approval, notice) == f"{notice.key}: delivered earlier"
    finally:
        await ledger.close()
        receiver.stop()
    [page] = receiver.at("/page")
    assert page.json() == {
        "team": "ops",
        "summary": "run_shell waits",
        "link": "http://inbox.example/approvals/perm_c_1",
    }
    assert page.headers["idempotency-key"] == notice.key


@pytest.mark.usefixtures("pager")
async def test_as_a_door_its_decisions_are_recorded_and_its_route_is_served(tmp_path: Path) -> None:
    from tests.ui.test_ui_routes import _served
    from ui.server import create_app

    assert deciding_kinds()["pager"] is PagerChannel
    assert DecisionInput(request_id="perm_c_1", decision="allow", door=PagerChannel.door).door == "pager"
    app = create_app(Settings(approvals_db=tmp_path / "approvals.db"))
    try:
        assert ("POST", "/pager/ack", __name__) in _served(app)
    finally:
        await app.state.store.close()
