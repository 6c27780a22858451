"""Web Push from the inbox: the key a browser subscribes with (`GET /api/push/key`), a person's own
subscriptions (`POST` and `DELETE /api/push/subscriptions`), and the service worker that shows
the notifications (`GET /sw.js`, served from the root so its scope is the whole inbox).

A subscription is always the logged-in person's: the push channel reaches the approvers of a
request by name, so a page used with the shared token alone has nobody to subscribe. One is
checked here, where it comes in, to be one a browser could have made: the worker posts to its
endpoint, so anything else would point the worker at a URL of a person's choosing."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import time
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from pydantic import Field

from config.errors import ConfigError
from core.push_subscription import PushSubscription
from storage.users import Principal
from ui.bodies import StrictBody, json_body, read_json_body
from ui.errors import Forbidden, NotFound, ServiceUnavailable, Unprocessable
from ui.pages import STATIC_DIR
from ui.route_support import api_router, settings_of, store_of
from ui.security import principal_of

MAX_ENDPOINT = 2000
P256DH_BYTES = 65  # an uncompressed P-256 point: 0x04, x, y
AUTH_BYTES = 16

router = api_router()
page_router = APIRouter(include_in_schema=False)  # the service worker: a script, not API


class SubscriptionKeys(StrictBody):
    p256dh: str = Field(min_length=1, max_length=200, description="the browser's P-256 public key, base64url")
    auth: str = Field(min_length=1, max_length=100, description="the browser's auth secret, base64url")


class SubscriptionBody(StrictBody):
    """`PushSubscription.toJSON()` as the browser gives it."""

    endpoint: str = Field(min_length=1, max_length=MAX_ENDPOINT, description="the push service's URL for this browser")
    keys: SubscriptionKeys
    expirationTime: int | float | None = Field(default=None, description="when it ends (ms since 1970); null: never")  # noqa: N815


@router.get("/push/key")
async def push_key(request: Request) -> dict[str, str]:
    """The VAPID public key (base64url) a browser passes to `PushManager.subscribe`."""
    try:
        return {"public_key": settings_of(request).push_keys().public_key}
    except ConfigError as err:  # a VAPID_PRIVATE_KEY that is no key: said, not a 500
        raise ServiceUnavailable(str(err)) from None


@router.post("/push/subscriptions", status_code=201, openapi_extra=json_body(SubscriptionBody))
async def subscribe(request: Request) -> JSONResponse:
    """This browser, for the logged-in person: 201 `{endpoint, person}`; 403 with no person, 422 a
    subscription no browser makes."""
    person = await subscriber(request)
    body = await read_json_body(request, SubscriptionBody)
    subscription = checked_subscription(body, person.name)
    await store_of(request).save_push_subscription(subscription)
    return JSONResponse({"endpoint": subscription.endpoint, "person": subscription.person}, status_code=201)


@router.delete("/push/subscriptions")
async def unsubscribe(request: Request, endpoint: str) -> dict[str, Any]:
    """One of the person's own browsers no longer notified; 404 when it is not theirs."""
    person = await subscriber(request)
    if not await store_of(request).remove_push_subscription(endpoint, person.name):
        raise NotFound("no push subscription of yours has that endpoint")
    return {"endpoint": endpoint, "removed": True}


async def subscriber(request: Request) -> Principal:
    principal = await principal_of(request)
    if principal is None:
        raise Forbidden("push notifications go to a person: log in with your own token (starter.py users add)")
    return principal


def checked_subscription(body: SubscriptionBody, person: str) -> PushSubscription:
    """The subscription, once its endpoint is a push service's URL and its keys are a browser's."""
    try:
        parts = urlsplit(body.endpoint)
    except ValueError:
        raise Unprocessable("endpoint: not an https URL") from None
    if not parts.hostname or parts.scheme not in ("https", "http") or parts.username or parts.password:
        raise Unprocessable("endpoint: not an https URL")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise Unprocessable("endpoint: not an https URL (plain http only to a push service on this machine)")
    if body.expirationTime is not None and body.expirationTime <= time.time() * 1000:
        raise Unprocessable("expirationTime: this subscription has ended already")
    point = _decoded(body.keys.p256dh, "keys.p256dh")
    if len(point) != P256DH_BYTES or point[0] != 4:
        raise Unprocessable(f"keys.p256dh: not an uncompressed P-256 public key ({P256DH_BYTES} bytes)")
    if len(_decoded(body.keys.auth, "keys.auth")) != AUTH_BYTES:
        raise Unprocessable(f"keys.auth: not a {AUTH_BYTES}-byte secret")
    return PushSubscription(body.endpoint, person, body.keys.p256dh, body.keys.auth)


def _decoded(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii") + b"=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise Unprocessable(f"{what}: not base64url") from None


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@page_router.get("/sw.js", response_model=None)
def service_worker() -> Response:
    """Public like the login page's look: a browser fetches it on its own, and it holds nothing."""
    return FileResponse(STATIC_DIR / "sw.js", media_type="text/javascript", headers={"Cache-Control": "no-cache"})
