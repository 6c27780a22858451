"""The page itself, and the login form that turns UI_TOKEN into an HttpOnly cookie."""

from __future__ import annotations

import html
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from ui.bodies import read_body
from ui.errors import BadRequest
from ui.security import (
    SESSION_COOKIE,
    SESSION_MAX_AGE,
    is_authenticated,
    new_session_id,
    require_same_origin,
    session_record,
    token_matches,
)

STATIC_DIR = Path(__file__).parent / "static"
LOGIN_BODY_BYTES = 4096  # a token in a form
router = APIRouter(include_in_schema=False)  # pages, not API


@router.get("/", response_model=None)
def inbox(request: Request) -> Response:
    if not is_authenticated(request):
        return RedirectResponse("/login", status_code=303)
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-store"})


@router.get("/approvals/{request_id:path}", response_model=None)
def approval_link(request: Request, request_id: str) -> Response:
    """A card's deep link (notifications carry it): the inbox opens straight to the card, after a login."""
    if not is_authenticated(request):
        return RedirectResponse(f"/login?next={quote(request.url.path, safe='')}", status_code=303)
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-store"})


def after_login(target: str | None) -> str:
    """Where a login returns to: a card's deep link on this site, else the inbox (never another site)."""
    if target and target.startswith("/approvals/") and "//" not in target and "\\" not in target:
        return target
    return "/"


def login_page(error: str | None = None, status_code: int = 200, next_path: str = "/") -> HTMLResponse:
    message = f'<p class="login-error" role="alert">{html.escape(error)}</p>' if error else ""
    back = f'<input type="hidden" name="next" value="{html.escape(next_path)}">' if next_path != "/" else ""
    body = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Approvals inbox: log in</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/style.css">
</head>
<body class="login">
<form class="login-form" method="post" action="/login">
<h1>Approvals inbox</h1>
<p>This inbox is protected by a token (UI_TOKEN).</p>
{message}
{back}
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit" class="primary">Log in</button>
</form>
</body>
</html>
"""
    return HTMLResponse(body, status_code=status_code, headers={"Cache-Control": "no-store"})


@router.get("/login", response_model=None)
def login_form(request: Request) -> Response:
    if request.app.state.settings.ui_token is None:
        return RedirectResponse("/", status_code=303)
    return login_page(next_path=after_login(request.query_params.get("next")))


@router.post("/login", dependencies=[Depends(require_same_origin)], response_model=None)
async def login(request: Request) -> Response:
    token: str | None = request.app.state.settings.ui_token
    if token is None:
        return RedirectResponse("/", status_code=303)
    raw = await read_body(request, LOGIN_BODY_BYTES)
    try:
        fields = parse_qs(raw.decode(), max_num_fields=5)
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("send the login form as application/x-www-form-urlencoded") from None
    given = (fields.get("token") or [""])[0]
    next_path = after_login((fields.get("next") or [""])[0])
    store = request.app.state.store
    # The shared token, or a person's own token (then the session knows who they are).
    person = None if token_matches(given, token) else await store.verify_token(given)
    if person is None and not token_matches(given, token):
        return login_page("That token is not right.", status_code=401, next_path=next_path)
    # A new session id at every login (one fixed before login cannot be ridden); the one presented is dropped.
    session_id, presented = new_session_id(), request.cookies.get(SESSION_COOKIE)
    expires_at = datetime.now(UTC) + timedelta(seconds=SESSION_MAX_AGE)
    replaced = session_record(token, presented) if presented else None
    await store.open_session(session_record(token, session_id), expires_at, replaced)
    if person is not None:
        await store.bind_session(session_record(token, session_id), person.name)
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        session_id,
        max_age=SESSION_MAX_AGE,
        expires=expires_at,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


@router.post("/logout", dependencies=[Depends(require_same_origin)], response_model=None)
async def logout(request: Request) -> Response:
    """Revokes the session in the projection, so a copy of the cookie opens nothing in any process,
    and ends the session's open streams in this one before answering (ui/open_streams.py)."""
    token: str | None = request.app.state.settings.ui_token
    presented = request.cookies.get(SESSION_COOKIE)
    if token is not None and presented:
        session = session_record(token, presented)
        await request.app.state.store.close_session(session)
        request.app.state.open_streams.end(session)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


# The login page needs its look before anyone has logged in; the script waits for the token.
PUBLIC_ASSETS = {"style.css", "favicon.svg"}
ASSET_TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}


@router.get("/static/{name}", response_model=None)
def asset(request: Request, name: str) -> Response:
    path = STATIC_DIR / name
    media_type = ASSET_TYPES.get(path.suffix)
    if media_type is None or "/" in name or not path.is_file():
        return Response("not found", status_code=404, media_type="text/plain")
    if name not in PUBLIC_ASSETS and not is_authenticated(request):
        return Response("log in first", status_code=401, media_type="text/plain")
    return FileResponse(path, media_type=media_type, headers={"Cache-Control": "no-cache"})
