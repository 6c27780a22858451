"""One-time decision links: a token the service signs for one request, one person, the arguments
they were shown and a deadline, so a link in a mail or a push notification decides only what its
reader saw, only as them, only once (the use is recorded by its `token_id`), and only in time.

The token is `BODY.MAC`: BODY is the claims as compact JSON in unpadded base64url, MAC the
HMAC-SHA256 of BODY under the service's key (config/decision_link_key.py), also base64url.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import asdict, dataclass

from core import base64url as b64url

MAX_LINK_SECONDS = 7 * 86400  # a link outlives neither its request nor a week


class BadLink(ValueError):
    """A token that is not one of ours, or is for another time: its message says which, in one line."""


class LinkExpired(BadLink):
    """A token of ours whose time is over (a page answers it 410 Gone, not as a forgery)."""


@dataclass(frozen=True)
class LinkClaims:
    token_id: str  # names this link's one use
    request_id: str
    args_hash: str  # the arguments the person was shown: another hash is a stale link
    person: str  # whose decision it is
    expires_at: int  # unix seconds

    @classmethod
    def new(cls, request_id: str, args_hash: str, person: str, expires_at: int) -> LinkClaims:
        return cls(secrets.token_urlsafe(12), request_id, args_hash, person, expires_at)


def link_expiry(now: float, request_deadline: float | None) -> int:
    """The request's deadline, or a week from now, whichever is first."""
    latest = now + MAX_LINK_SECONDS
    return int(latest if request_deadline is None else min(request_deadline, latest))


def sign(key: bytes, claims: LinkClaims) -> str:
    body = b64url.encode(json.dumps(asdict(claims), separators=(",", ":"), sort_keys=True).encode())
    return f"{body}.{b64url.encode(_mac(key, body))}"


def verify(key: bytes, token: str, now: float) -> LinkClaims:
    """The claims of a token signed with `key` and not expired at `now`; BadLink otherwise."""
    body, dot, mac = token.partition(".")
    if not dot or not body or not mac:
        raise BadLink("this is not a decision link")
    try:
        given = b64url.decode(mac)
    except ValueError:
        raise BadLink("this is not a decision link") from None
    if not hmac.compare_digest(given, _mac(key, body)):
        raise BadLink("this link was not signed by this service")
    try:
        claims = LinkClaims(**json.loads(b64url.decode(body)))
    except (ValueError, TypeError):
        raise BadLink("this link is damaged") from None
    if claims.expires_at <= now:
        raise LinkExpired("this link has expired")
    return claims


def _mac(key: bytes, body: str) -> bytes:
    return hmac.new(key, body.encode(), hashlib.sha256).digest()


def link_url(link_base: str, token: str) -> str:
    """Where a link's page is served (`GET /d/{token}`, ui/link_routes.py)."""
    return f"{link_base.rstrip('/')}/d/{token}"
