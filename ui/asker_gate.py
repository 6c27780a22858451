"""Asking tokens (`starter.py users add NAME --asker`) reach the requests API and nothing else.

Pure ASGI, before any route: a request whose `Authorization: Bearer` is an asking token is marked
with the asker's name when it goes to `/api/requests`, and refused with 403 anywhere else (every
decision, grant, extension, undo, list and page). Deny by default: a new route is closed to askers
without anyone having to remember them. The store never names an asker as a person
(storage/users.py), so no door takes their decision even past this gate.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from storage.store import ProjectionStore
from storage.users import TOKEN_PREFIX

ASKER_SCOPE_KEY = "approvals.asker"  # scope key: the name of the asking token's holder
ASKING_PATH = "/api/requests"


def asks_only(path: str) -> bool:
    return path == ASKING_PATH or path.startswith(ASKING_PATH + "/")


def bearer_of(scope: Scope) -> str | None:
    raw = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
    scheme, _, credentials = raw.partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else None


def asker_of(scope: Scope) -> str | None:
    """The asker this request was admitted as (set by the gate), or None."""
    found = scope.get(ASKER_SCOPE_KEY)
    return found if isinstance(found, str) else None


class AskerGate:
    def __init__(self, app: ASGIApp, store: ProjectionStore) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        bearer = bearer_of(scope)
        asker = None
        if bearer and bearer.startswith(TOKEN_PREFIX + "-"):
            asker = await self.store.verify_asker(bearer)
        if asker is None:
            await self.app(scope, receive, send)
            return
        if not asks_only(str(scope.get("path", ""))):
            await _refuse(send, "an asking token may only ask (/api/requests): it decides nothing")
            return
        await self.app({**scope, ASKER_SCOPE_KEY: asker}, receive, send)


async def _refuse(send: Send, message: str) -> None:
    body = json.dumps({"error": {"status": 403, "type": "AskingTokenOnly", "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
