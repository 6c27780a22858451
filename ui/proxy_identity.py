"""Identity from a trusted reverse proxy (oauth2-proxy and the like).

Off unless `TRUSTED_PROXIES` names the proxy's addresses (IPs or CIDR networks). Then a request
whose direct peer is one of them may name its person in `PROXY_USER_HEADER` (default
`X-Forwarded-User`) and their groups in `PROXY_GROUPS_HEADER` (default `X-Forwarded-Groups`,
comma-separated; without it, the groups `starter.py users` gives that name); the proxy
authenticated them, so no token is asked for. A request from any other peer that carries either
header is refused with 403 before it reaches a route: only the proxy may say who someone is.

The peer is the socket's, never X-Forwarded-For: the UI's server is started without proxy-header
rewriting when this is on, and `X-Forwarded-Proto` is honoured here from trusted peers only.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from config.proxy_section import ProxyIdentity
from config.proxy_section import parse_proxies as parse_proxies  # where the UI's tests read it

PEER_TRUSTED = "approvals.proxy_trusted"  # scope key: the direct peer is a configured proxy
MAX_NAME = 100


class ProxyPeerGate:
    """Pure ASGI: marks requests from a trusted proxy, applies its X-Forwarded-Proto, and refuses
    identity headers from anyone else."""

    def __init__(self, app: ASGIApp, identity: ProxyIdentity) -> None:
        self.app = app
        self.identity = identity

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self.identity.enabled:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        trusted = self.identity.trusts(client[0] if client else None)
        headers = dict(scope.get("headers") or [])
        if trusted:
            scope = {**scope, PEER_TRUSTED: True}
            proto = headers.get(b"x-forwarded-proto", b"").decode("latin-1").strip().lower()
            if proto in ("http", "https"):
                scope["scheme"] = proto if scope["type"] == "http" else ("wss" if proto == "https" else "ws")
        elif any(name in headers for name in self.identity.names()):
            await _refuse(send, "identity headers are accepted only from the configured proxy (TRUSTED_PROXIES)")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, message: str) -> None:
    body = json.dumps({"error": {"status": 403, "type": "UntrustedIdentityHeader", "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def proxied_person(scope: Scope, identity: ProxyIdentity) -> tuple[str, list[str] | None] | None:
    """(name, groups) the trusted proxy named, or None. groups None: the header was absent, so the
    caller looks the name up among the people `users` knows."""
    if not identity.enabled or not scope.get(PEER_TRUSTED):
        return None
    user_name, groups_name = identity.names()
    headers = dict(scope.get("headers") or [])
    name = headers.get(user_name, b"").decode("utf-8", "replace").strip()
    if not name or len(name) > MAX_NAME or any(ord(ch) < 32 for ch in name):
        return None
    raw_groups = headers.get(groups_name)
    if raw_groups is None:
        return name, None
    groups = [g.strip() for g in raw_groups.decode("utf-8", "replace").split(",") if g.strip()]
    return name, groups
