"""What a kind of notification channel is: one class, which is at once its `[channels.NAME]` settings
(a pydantic model whose `kind` is a Literal) and what it does with them: how it sends, whether its
messages change once their request is decided, and whether it is also a door that decides.

The notify activity owns everything around a send (the execution ledger's once-per-key guard, the
HTTP client, what a status means), so a kind only checks its own settings and builds and sends its
payload. What a kind that writes to people one by one needs beyond that (who a name is, each
person's own decision link, a guard per person) it asks of the `Reach` the activity hands it, so a
channel imports neither the activities nor storage. Adding one is its module and a line in the
registry (channels/__init__.py).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from core.conversation_model import ApprovalRecord, NotificationInput
from core.wire_model import WireModel

if TYPE_CHECKING:  # the activity hands a client in; the settings load without httpx
    import httpx

IDEMPOTENCY_HEADER = "Idempotency-Key"


def card_url(link_base: str, request_id: str) -> str:
    """The request's deep link: the inbox opens straight to its card (after a login if needed)."""
    return f"{link_base.rstrip('/')}/approvals/{quote(request_id, safe='')}"


def from_env(name: str | None) -> str:
    """A secret named by a `*_env` setting: read when it is sent, so the file can be shared."""
    value = os.environ.get(name or "")
    if not value:
        raise LookupError(f"the environment variable {name} is not set")
    return value


@dataclass(frozen=True)
class Sent:
    """The receiver's status, what it said of a refusal, and where a message that can change was posted."""

    status: int
    detail: str = ""
    posted: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Updated:
    ok: bool
    error: str | None = None


@dataclass(frozen=True)
class Person:
    """Someone a channel writes to: an address, and the approver's name when it is a known person's
    (None: a bare address from the file, whom no decision link can speak for)."""

    address: str
    name: str | None = None


class Unreachable(LookupError):
    """A `to` entry nobody can be reached at (no such person, no email): one line naming them."""


class NotDelivered(Exception):
    """A send that did not arrive (a refused connection, a refusal by the server): the activity
    forgets the attempt, keeping only the parts `Reach.once` recorded as sent, and retries it with
    backoff when `retryable`, else gives it up."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class Reach(Protocol):
    """What the notify activity gives a channel for one notification."""

    @property
    def card_link(self) -> str:
        """The inbox's deep link to the request's card."""
        ...

    async def people(self, entries: Sequence[str]) -> list[Person]:
        """`to` entries as people: an address stays an address, a name is that person's email,
        `group:NAME` is every member with one. Unreachable when a name has none or a group no member
        with one."""
        ...

    def decision_link(self, person: Person) -> str:
        """A one-time link deciding as this person, bound to the arguments notified; for a bare
        address (no person to decide as), the card link."""
        ...

    async def once(self, part: str, send: Callable[[], Awaitable[None]]) -> bool:
        """Run `send` unless this notification's `part` (a person) was sent already, or may have
        been by an attempt that died mid-send: True when it ran now. A NotDelivered from `send`
        is forgotten, so a retry sends that part again."""
        ...


class Channel(WireModel):
    """One channel of one kind, as the file sets it. Its messages cannot change and it decides
    nothing unless its kind says otherwise."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    groups: list[str] = Field(default_factory=list)
    timeout_seconds: float = Field(default=10.0, gt=0)

    name: ClassVar[str]  # as messages and logs name the kind
    # An attempt whose outcome nobody knows (the worker died mid-send) may be sent again: the
    # receiver drops what it has seen by the Idempotency-Key header.
    repeats_safely: ClassVar[bool] = True
    # A channel that is also a door: the `door` its decisions are recorded with (decided_via). Its
    # door answers on the message pressed, so a decision made there updates none of its messages.
    door: ClassVar[str | None] = None
    # That door's own settings: the file's top-level table named like the kind (`[slack]`).
    door_settings: ClassVar[type[BaseModel] | None] = None
    # The module whose `router` the UI mounts for that door. Named, not imported: channels sit
    # below the UI (tests/project/test_import_rules.py).
    door_router: ClassVar[str | None] = None
    # A send that writes to each person under `reach.once`: an attempt whose outcome nobody knows
    # is run again, and reaches only those the earlier one had not (each person's own guard).
    guards_each_person: ClassVar[bool] = False

    async def send(self, http: httpx.AsyncClient, notification: NotificationInput, reach: Reach) -> Sent:
        raise NotImplementedError

    def updates_messages(self) -> bool:
        return False

    def message_of(self, delivered: Mapping[str, object]) -> dict[str, str] | None:
        """Where the delivery recorded a message to update; None: none (nothing to update)."""
        return None

    async def update(
        self, http: httpx.AsyncClient, message: dict[str, str], record: ApprovalRecord, link: str
    ) -> Updated:
        raise NotImplementedError
