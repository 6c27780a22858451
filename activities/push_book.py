"""The push channel's book (`PushBook`, channels/push.py): the browsers people subscribed from the
inbox, read from the projection, and the VAPID keys the pushes are signed with, read once per
process from the configuration (config/push_keys.py) when the first push is sent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Protocol

from config.errors import ConfigError
from core.notify_plan import GROUP_PREFIX
from core.push_subscription import PushSubscription, VapidKeys
from storage.users import Contact


class Subscribers(Protocol):
    """What the book reads and drops (the projection store)."""

    async def contacts(self) -> list[Contact]: ...

    async def push_subscriptions(self, people: list[str] | None) -> list[PushSubscription]: ...

    async def drop_push_subscription(self, endpoint: str) -> None: ...


class StoredPushBook:
    def __init__(self, store: Subscribers, keys: Callable[[], VapidKeys]) -> None:
        self._store = store
        self._keys = cache(keys)

    def vapid_keys(self) -> VapidKeys:
        """A key that is no key is a setting to fix, not a send to retry: the activity gives it up
        in one line (LookupError, as for any setting a channel lacks)."""
        try:
            return self._keys()
        except ConfigError as err:
            raise LookupError(str(err)) from None

    async def subscriptions(self, approvers: Sequence[str] | None) -> list[PushSubscription]:
        if not approvers:
            return await self._store.push_subscriptions(None)
        names = {entry for entry in approvers if not entry.startswith(GROUP_PREFIX)}
        groups = {entry[len(GROUP_PREFIX) :] for entry in approvers if entry.startswith(GROUP_PREFIX)}
        if groups:
            names.update(c.name for c in await self._store.contacts() if groups.intersection(c.groups))
        return await self._store.push_subscriptions(sorted(names))

    async def drop(self, endpoint: str) -> None:
        await self._store.drop_push_subscription(endpoint)
