"""Web Push subscriptions in the projection (`ui_push_subscriptions`): a person's browsers, each by
the endpoint its push service gave it. All push subscription SQL is here.

The inbox writes them (a person's own, from "Notify me on this device"); the push channel reads
those of a request's approvers, and drops one its push service says is gone (HTTP 404 or 410).
An endpoint is one browser: subscribed again, by whoever is logged in there now, it is theirs.
"""

from __future__ import annotations

from typing import Any

from core.push_subscription import PushSubscription
from storage.backend import Tx
from storage.writes import now_iso

_COLUMNS = "endpoint, person, p256dh, auth"


def _subscription(row: dict[str, Any]) -> PushSubscription:
    return PushSubscription(row["endpoint"], row["person"], row["p256dh"], row["auth"])


async def save_subscription(tx: Tx, subscription: PushSubscription) -> None:
    await tx.send(
        f"INSERT INTO ui_push_subscriptions ({_COLUMNS}, created_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (endpoint) DO UPDATE SET person = excluded.person, p256dh = excluded.p256dh,"
        " auth = excluded.auth, created_at = excluded.created_at",
        (subscription.endpoint, subscription.person, subscription.p256dh, subscription.auth, now_iso()),
    )


async def remove_subscription(tx: Tx, endpoint: str, person: str) -> bool:
    """A person unsubscribes one of their own browsers; False: no such subscription of theirs."""
    sql = "DELETE FROM ui_push_subscriptions WHERE endpoint = ? AND person = ?"
    removed = await tx.execute(sql, (endpoint, person))
    return removed > 0


async def drop_subscription(tx: Tx, endpoint: str) -> None:
    """A subscription its push service no longer knows: nothing will ever reach it."""
    await tx.send("DELETE FROM ui_push_subscriptions WHERE endpoint = ?", (endpoint,))


async def subscriptions_of(tx: Tx, people: list[str] | None) -> list[PushSubscription]:
    """The subscriptions of these people (None: of everyone), oldest first."""
    sql = f"SELECT {_COLUMNS} FROM ui_push_subscriptions"
    params: list[Any] = []
    if people is not None:
        if not people:
            return []
        sql += f" WHERE person IN ({', '.join('?' * len(people))})"
        params = list(people)
    found = await tx.fetchall(sql + " ORDER BY created_at, endpoint", params)
    return [_subscription(row) for row in found]
