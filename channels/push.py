"""Web Push (`kind = "push"`): a notification on each browser where an approver of the request
pressed "Notify me on this device" in the inbox, carrying the request's summary and that person's
one-time decision link (ui/static/sw.js shows it and opens the link).

Each push is encrypted to its browser's keys (RFC 8291, aes128gcm, by pywebpush) and signed with
the service's VAPID key (RFC 8292, by py_vapid), then posted to the browser's push service. The
subscriptions, the keys and each person's link come from the notify activity's `Reach`; every
browser is guarded on its own (`reach.once`), so a retry reaches only those an earlier attempt did
not. A subscription its push service no longer knows (HTTP 404 or 410) is dropped.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, runtime_checkable
from urllib.parse import urlsplit

from channels.base import Channel, NotDelivered, Person, Reach, Sent
from core.conversation_model import NotificationInput
from core.push_subscription import PushSubscription, VapidKeys
from core.request_summary import request_summary

if TYPE_CHECKING:
    import httpx

GONE = {404, 410}  # the push service no longer knows the subscription: nothing will ever reach it
RETRIED = {408, 425, 429}
MAX_TTL_SECONDS = 28 * 86400  # what push services keep a message at most
VAPID_SECONDS = 12 * 3600
TITLES = {
    "request": "Approval needed",
    "reminder": "Reminder: approval needed",
    "escalation": "Escalated: approval needed",
    "expiry_warning": "Expires soon: approval needed",
}


class PushBook(Protocol):
    """The browsers a push goes to and the key it is signed with (activities/push_book.py reads
    them from the projection and the configuration)."""

    def vapid_keys(self) -> VapidKeys: ...

    async def subscriptions(self, approvers: Sequence[str] | None) -> list[PushSubscription]:
        """The subscriptions of these approvers (names; `group:NAME` as its members); with none
        named (None or empty), every subscription."""
        ...

    async def drop(self, endpoint: str) -> None:
        """Forget a subscription its push service said is gone."""
        ...


@runtime_checkable
class PushReach(Reach, Protocol):
    """A `Reach` that carries the push book (None in a worker that has none)."""

    push: PushBook | None


class PushChannel(Channel):
    """`kind = "push"`: no keys of its own; routed like any channel (`notify`, `groups`)."""

    kind: Literal["push"]

    name: ClassVar[str] = "push"
    guards_each_person: ClassVar[bool] = True
    # A browser pushed to again (its attempt died mid-send) shows one notification still: the same
    # tag replaces it on the device, the same Topic replaces it at a push service not yet delivered.
    repeats_safely: ClassVar[bool] = True

    async def send(self, http: httpx.AsyncClient, notification: NotificationInput, reach: Reach) -> Sent:
        book = reach.push if isinstance(reach, PushReach) else None
        if book is None:
            raise LookupError("this worker has no push subscriptions to read (its notify activity has no push book)")
        subscriptions = await book.subscriptions(notification.approvers)
        if not subscriptions:
            return Sent(204)
        keys = book.vapid_keys()
        links: dict[str, str] = {}
        failed: list[NotDelivered] = []
        for subscription in subscriptions:
            if subscription.person not in links:
                links[subscription.person] = reach.decision_link(Person(subscription.endpoint, subscription.person))
            payload = push_payload(notification, links[subscription.person])
            try:
                push = partial(self._push, http, book, keys, subscription, payload, notification)
                await reach.once(f"push:{_digest(subscription.endpoint)}", push)
            except NotDelivered as err:
                failed.append(err)
        if failed:  # the others are guarded: a retry sends only these again
            retryable = [err for err in failed if err.retryable]
            raise (retryable or failed)[0]
        return Sent(201)

    async def _push(
        self,
        http: httpx.AsyncClient,
        book: PushBook,
        keys: VapidKeys,
        subscription: PushSubscription,
        payload: bytes,
        notification: NotificationInput,
    ) -> None:
        import httpx  # the activity's client; the settings load without it

        try:
            response = await http.post(
                subscription.endpoint,
                content=encrypted(subscription, payload),
                headers=push_headers(keys, subscription.endpoint, notification),
            )
        except httpx.ConnectError as err:
            raise NotDelivered(
                f"cannot reach the push service {_origin(subscription.endpoint)}: {err}", retryable=True
            ) from None
        status = response.status_code
        if status in GONE:
            await book.drop(subscription.endpoint)
            return
        if status >= 300:
            message = f"push service {_origin(subscription.endpoint)} answered HTTP {status} for {subscription.person}"
            raise NotDelivered(message, retryable=status >= 500 or status in RETRIED)


def push_payload(notification: NotificationInput, link: str) -> bytes:
    """What the service worker reads: the title, the request's summary, the link a click opens,
    and a tag (a reminder replaces the notification of its request rather than piling up)."""
    body = {
        "title": TITLES[notification.kind],
        "body": request_summary(notification.tool_name, notification.arguments),
        "url": link,
        "tag": notification.request_id,
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def encrypted(subscription: PushSubscription, payload: bytes) -> bytes:
    """The payload encrypted to the browser's keys (RFC 8291, aes128gcm)."""
    from pywebpush import WebPusher  # loaded when a push is sent, not when the file is read

    body: bytes = WebPusher(subscription.info()).encode(payload, "aes128gcm")["body"]
    return body


def push_headers(keys: VapidKeys, endpoint: str, notification: NotificationInput) -> dict[str, str]:
    """RFC 8030's headers (kept until the request expires, delivered at once, one per request's
    topic) and RFC 8292's VAPID `Authorization: vapid t=JWT,k=KEY` for the push service's origin."""
    from py_vapid import Vapid

    claims = {"aud": _origin(endpoint), "sub": keys.subject, "exp": int(time.time()) + VAPID_SECONDS}
    expires_at = notification.expires_at
    left = (expires_at.replace(tzinfo=expires_at.tzinfo or UTC) - datetime.now(UTC)).total_seconds()
    return {
        "Content-Encoding": "aes128gcm",
        "Content-Type": "application/octet-stream",
        "TTL": str(max(0, min(MAX_TTL_SECONDS, int(left)))),
        "Urgency": "high",
        "Topic": _digest(notification.request_id),
        **Vapid.from_string(keys.private_key).sign(claims),
    }


def _origin(endpoint: str) -> str:
    parts = urlsplit(endpoint)
    return f"{parts.scheme}://{parts.netloc}"


def _digest(text: str) -> str:
    """A short name for a long one (an endpoint, a request id), in the Topic header's alphabet."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]
