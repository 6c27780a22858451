"""What the notify activity hands a channel that writes to people one by one (`Reach`,
channels/base.py): who a `to` entry is, each person's one-time decision link, and a guard per person.

Built per notification and attempt, so the channel never touches the people's table, the link key
or the execution ledger: a channel sits below activities and storage.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Protocol

from activities.ledger import Ledger
from channels.base import NotDelivered, Person, Unreachable
from channels.push import PushBook
from core.conversation_model import NotificationInput, arguments_hash
from core.decision_links import LinkClaims, link_expiry, link_url, sign
from core.email_address import is_address
from core.notify_plan import GROUP_PREFIX
from core.tool_run_model import ToolResult
from storage.users import Contact


class Directory(Protocol):
    """Where people's names and emails are read (the projection store)."""

    async def contacts(self) -> list[Contact]: ...


@dataclass
class NotificationReach:
    notification: NotificationInput
    card_link: str
    link_base: str
    ledger: Ledger
    ledger_name: str  # the ledger's name for one person's send ("notify:email:person")
    attempt: int
    repeats_safely: bool
    directory: Directory | None = None
    link_key: Callable[[], bytes] | None = None
    push: PushBook | None = None  # the push channel's subscriptions and keys
    _key: Callable[[], bytes] | None = field(default=None, init=False, repr=False)

    async def people(self, entries: Sequence[str]) -> list[Person]:
        named = [entry for entry in entries if not is_address(entry)]
        contacts = await self.directory.contacts() if named and self.directory is not None else []
        found: dict[str, Person] = {}  # by address: one message per address, a known person's first
        missing: list[str] = []
        for entry in entries:
            reached = _reached(entry, contacts)
            if isinstance(reached, str):
                missing.append(f"{entry} ({reached})")
                continue
            for person in reached:
                if person.address not in found or found[person.address].name is None:
                    found[person.address] = person
        if missing:
            raise Unreachable(f"{self.notification.channel}: cannot reach {'; '.join(missing)}")
        return list(found.values())

    def decision_link(self, person: Person) -> str:
        if person.name is None or self.link_key is None:
            return self.card_link
        if self._key is None:
            self._key = cache(self.link_key)  # read (or made) once per notification
        notification = self.notification
        claims = LinkClaims.new(
            notification.request_id,
            arguments_hash(notification.arguments),
            person.name,
            link_expiry(time.time(), notification.expires_at.timestamp()),
        )
        return link_url(self.link_base, sign(self._key(), claims))

    async def once(self, part: str, send: Callable[[], Awaitable[None]]) -> bool:
        key = f"{self.notification.key}:{part}"
        claim = await self.ledger.claim(key, self.ledger_name, self.attempt)
        if claim.verdict == "finished" or (claim.verdict == "unknown" and not self.repeats_safely):
            return False
        if claim.verdict == "run" and not await self.ledger.start(key, self.attempt):
            return False  # another attempt took this part meanwhile
        try:
            await send()
        except NotDelivered:
            await self.ledger.release(key)  # it reached nobody: the next attempt sends it
            raise
        await self.ledger.finish(key, ToolResult(content=json.dumps({"delivered_at": round(time.time())})))
        return True


def _reached(entry: str, contacts: list[Contact]) -> list[Person] | str:
    """The people one `to` entry is, or why it is nobody."""
    if is_address(entry):
        return [Person(entry)]
    if entry.startswith(GROUP_PREFIX):
        group = entry[len(GROUP_PREFIX) :]
        members = [Person(c.email, c.name) for c in contacts if group in c.groups and c.email]
        return members or "no member with an email"
    contact = next((c for c in contacts if c.name == entry), None)
    if contact is None:
        return "no such person"
    if contact.email is None:
        return f"no email: starter.py users email {entry} ADDRESS"
    return [Person(contact.email, contact.name)]
