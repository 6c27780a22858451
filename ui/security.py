"""Who may use the UI and how the browser is told to treat it.

- A trusted reverse proxy (ui/proxy_identity.py), when configured, names the person; the proxy
  authenticated them, so no token is asked for.
- A token (UI_TOKEN), when set, guards every page and API call: `Authorization: Bearer` for
  scripts, or an HttpOnly SameSite=Strict session cookie set by the login form for browsers. The
  cookie holds a random session id, new at every login and valid for SESSION_MAX_AGE; the
  projection records a keyed hash of it (storage/sessions.py), so every UI process on that
  database honours it and a logout revokes it everywhere. The hash is keyed by the token, so changing
  UI_TOKEN ends every session.
- Requests that change state must come from this origin (Origin and Sec-Fetch-Site), so another
  site cannot make a logged-in browser approve a tool.
- Every response carries a Content-Security-Policy without inline script: text the model wrote
  can never become code, even if a bug rendered it as HTML.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

import anyio.from_thread
from fastapi import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.contract import ERROR_CROSS_SITE_REQUEST
from storage.users import Principal
from ui.errors import Forbidden, Unauthorized
from ui.proxy_identity import proxied_person

SESSION_COOKIE = "approvals_ui_session"
SESSION_MAX_AGE = 12 * 3600
MAX_SESSION_ID = 128
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    # Not no-referrer: with it, browsers send `Origin: null` on same-origin form posts (the login form).
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


def allowed_hosts(bind_host: str) -> list[str]:
    """Bound to loopback, answer only loopback Host headers: a DNS-rebinding page cannot read the API."""
    return list(LOOPBACK_HOSTS) if bind_host in LOOPBACK_HOSTS else ["*"]


class SecurityHeaders:
    """Pure ASGI, so streamed responses (Server-Sent Events) pass through untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        is_api = str(scope.get("path", "")).startswith("/api/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"cache-control" or not is_api]
                # A page may ask for a stricter Referrer-Policy (a decision link's: no-referrer); the rest stand.
                own_referrer = any(h[0].lower() == b"referrer-policy" for h in headers)
                headers.extend(h for h in SECURITY_HEADERS if not (own_referrer and h[0] == b"referrer-policy"))
                if is_api:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def new_session_id() -> str:
    return secrets.token_urlsafe(32)


def session_record(token: str, session_id: str) -> str:
    """What the projection stores for a session: useless as a cookie, and void once the token changes."""
    return hmac.new(token.encode(), b"approvals-ui-session:" + session_id.encode(), hashlib.sha256).hexdigest()


def token_matches(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def _bearer(request: Request) -> str | None:
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else None


async def principal_of(request: Request) -> Principal | None:
    """The person whose own token (`starter.py users add`) the request carries, or who logged in
    with it (an open session bound to them); None otherwise."""
    store, token = request.app.state.store, request.app.state.settings.ui_token
    proxied = proxied_person(request.scope, request.app.state.proxy_identity)
    if proxied is not None:
        name, groups = proxied
        return Principal(name=name, groups=groups if groups is not None else await store.groups_of(name))
    bearer = _bearer(request)
    if bearer:
        return await store.verify_token(bearer)  # type: ignore[no-any-return]
    cookie = request.cookies.get(SESSION_COOKIE, "")
    if token is None or not cookie or len(cookie) > MAX_SESSION_ID:
        return None
    record = session_record(token, cookie)
    if not await store.session_is_open(record):
        return None
    return await store.session_person(record)  # type: ignore[no-any-return]


async def authenticated(request: Request) -> bool:
    """Whether the request carries a valid credential now: the UI token, a person's token, a
    trusted proxy's identity or an open session. The one definition every route and the event
    stream (which asks again while it is open) use."""
    token: str | None = request.app.state.settings.ui_token
    if token is None or proxied_person(request.scope, request.app.state.proxy_identity) is not None:
        return True
    store = request.app.state.store
    bearer = _bearer(request)
    if bearer is not None and token_matches(bearer, token):
        return True
    if bearer and await store.verify_token(bearer) is not None:
        return True
    cookie = request.cookies.get(SESSION_COOKIE, "")
    if not cookie or len(cookie) > MAX_SESSION_ID:
        return False
    return bool(await store.session_is_open(session_record(token, cookie)))


def session_of(request: Request) -> str | None:
    """The record of the login session that is the request's credential (what a logout ends); None
    when it carries none, or its credential is another (a bearer token, a trusted proxy's identity)."""
    token: str | None = request.app.state.settings.ui_token
    if token is None or _bearer(request):
        return None
    if proxied_person(request.scope, request.app.state.proxy_identity) is not None:
        return None
    cookie = request.cookies.get(SESSION_COOKIE, "")
    if not cookie or len(cookie) > MAX_SESSION_ID:
        return None
    return session_record(token, cookie)


def is_authenticated(request: Request) -> bool:
    """authenticated() for sync routes, which FastAPI runs on a thread: the store's calls go back to the loop."""
    return bool(anyio.from_thread.run(authenticated, request))


def require_token(request: Request) -> None:
    """A dependency of every API route."""
    if not is_authenticated(request):
        raise Unauthorized("this UI needs its token: log in at /login or send Authorization: Bearer")


def require_same_origin(request: Request) -> None:
    """A dependency of every state-changing route: refuse requests another site's page could send."""
    if request.method in SAFE_METHODS:
        return
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        raise Forbidden(
            f"cross-site request refused (Sec-Fetch-Site: {fetch_site})", error_type=ERROR_CROSS_SITE_REQUEST
        )
    origin = request.headers.get("origin")
    if origin is not None and origin_of(origin) != origin_of(
        f"{request.url.scheme}://{request.headers.get('host', '')}"
    ):
        raise Forbidden("cross-origin request refused (Origin is not this UI's)", error_type=ERROR_CROSS_SITE_REQUEST)


DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) with the scheme's default port filled in; None when it is not one."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port if port is not None else DEFAULT_PORTS[scheme]
