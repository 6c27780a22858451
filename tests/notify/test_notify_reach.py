"""What the notify activity hands a channel that writes to people one by one (`Reach`): names and
groups become the people's emails, each person's link decides only as them and only what was
notified, and each person is sent to once, whatever an attempt did before it failed."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from activities.ledger import Ledger
from activities.notify_reach import NotificationReach
from channels.base import NotDelivered, Person, Unreachable
from core.conversation_model import NotificationInput, arguments_hash
from core.decision_links import verify
from storage.store import ProjectionStore

KEY = b"test-link-key"
NOW = datetime.now(UTC)
NOTICE = NotificationInput(
    key="perm_c_1:mail:request",
    channel="mail",
    kind="request",
    request_id="perm_c_1",
    conversation_id="c",
    tool_name="run_shell",
    arguments={"command": "ls"},
    expires_at=NOW + timedelta(hours=2),
    created_at=NOW,
)


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[ProjectionStore]:
    opened = ProjectionStore(tmp_path / "approvals.db")
    await opened.add_user("alice", ["ops"], email="alice@example.com")
    await opened.add_user("bob", ["ops", "leads"], email="bob@example.com")
    await opened.add_user("carol", ["ops"])  # no email
    await opened.add_user("robot", [], asker=True)
    yield opened
    await opened.close()


@pytest_asyncio.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    opened = Ledger(tmp_path / "ledger.db")
    yield opened
    await opened.close()


def reach(ledger: Ledger, store: ProjectionStore | None, attempt: int = 1) -> NotificationReach:
    card = "http://inbox.example/approvals/perm_c_1"
    return NotificationReach(
        NOTICE, card, "http://inbox.example", ledger, "notify:mail:person", attempt, False, store, lambda: KEY
    )


async def test_names_and_groups_become_the_peoples_emails_once_each(ledger: Ledger, store: ProjectionStore) -> None:
    people = await reach(ledger, store).people(["bob@example.com", "group:ops", "alice", "ops@example.com"])
    # bob's address is bob's: one message, his; carol has no email and group:ops reaches whoever has one.
    assert people == [
        Person("bob@example.com", "bob"),
        Person("alice@example.com", "alice"),
        Person("ops@example.com"),
    ]
    assert await reach(ledger, None).people(["ops@example.com"]) == [Person("ops@example.com")]


async def test_whoever_cannot_be_reached_is_named_in_one_line(ledger: Ledger, store: ProjectionStore) -> None:
    with pytest.raises(Unreachable) as refused:
        await reach(ledger, store).people(["alice", "carol", "robot", "group:nobody"])
    assert str(refused.value) == (
        "mail: cannot reach carol (no email: starter.py users email carol ADDRESS); robot (no such person);"
        " group:nobody (no member with an email)"
    )


async def test_a_persons_link_decides_as_them_on_what_was_notified_and_a_bare_address_gets_the_card(
    ledger: Ledger, store: ProjectionStore
) -> None:
    reaching = reach(ledger, store)
    link = reaching.decision_link(Person("alice@example.com", "alice"))
    assert link.startswith("http://inbox.example/d/")
    claims = verify(KEY, link.rpartition("/")[2], time.time())
    assert (claims.request_id, claims.person, claims.args_hash) == (
        "perm_c_1",
        "alice",
        arguments_hash({"command": "ls"}),
    )
    assert claims.expires_at == int(NOTICE.expires_at.timestamp())  # it ends with the request
    assert reaching.decision_link(Person("ops@example.com")) == reaching.card_link


async def test_each_person_is_sent_once_across_attempts(ledger: Ledger, store: ProjectionStore) -> None:
    sent: list[str] = []

    def to(name: str, fails: BaseException | None = None) -> Callable[[], Awaitable[None]]:
        async def send() -> None:
            if fails is not None:
                raise fails
            sent.append(name)

        return send

    first = reach(ledger, store, attempt=1)
    assert await first.once("alice", to("alice"))
    with pytest.raises(NotDelivered):  # refused before it reached bob: forgotten
        await first.once("bob", to("bob", NotDelivered("refused", retryable=True)))
    with pytest.raises(TimeoutError):  # carol's outcome is unknown: never repeated
        await first.once("carol", to("carol", TimeoutError()))
    second = reach(ledger, store, attempt=2)
    assert [await second.once(name, to(name)) for name in ("alice", "bob", "carol")] == [False, True, False]
    assert sent == ["alice", "bob"]
