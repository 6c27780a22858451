"""Login sessions: a fresh id at every login, an expiry, revoked at logout, shared by every UI
process on the same projection, and void once UI_TOKEN changes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import httpx

from config.settings import Settings
from tests.support.ui_fixtures import BASE_URL, api_client
from ui.security import SESSION_COOKIE
from ui.server import create_app

TOKEN = "session-test-token"
FORM = {"content-type": "application/x-www-form-urlencoded"}


def _guarded(settings: Settings) -> Settings:
    return replace(settings, ui_token=TOKEN)


async def _login(http: httpx.AsyncClient) -> httpx.Response:
    answer = await http.post("/login", content=f"token={TOKEN}".encode(), headers=FORM)
    assert answer.status_code == 303, answer.text
    return answer


async def _with_cookie(settings: Settings, value: str) -> int:
    """The status of an API read presenting this session cookie, from a separate UI process's app."""
    transport = httpx.ASGITransport(app=create_app(settings))
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL, cookies={SESSION_COOKIE: value}) as http:
        return (await http.get("/api/conversations")).status_code


async def test_login_issues_a_new_session_each_time_with_an_expiry(settings: Settings) -> None:
    guarded = _guarded(settings)
    async with api_client(guarded, None) as http:
        first = await _login(http)
        old = http.cookies[SESSION_COOKIE]
        second = await _login(http)
        new = http.cookies[SESSION_COOKIE]
    assert old != new
    assert TOKEN not in first.headers["set-cookie"]
    cookie = second.headers["set-cookie"].lower()
    assert "max-age=" in cookie and "expires=" in cookie and "httponly" in cookie
    # The session presented at login is replaced, not kept alongside the new one.
    assert await _with_cookie(guarded, old) == 401
    assert await _with_cookie(guarded, new) == 200


async def test_logout_revokes_the_session_in_every_process(settings: Settings) -> None:
    guarded = _guarded(settings)
    async with api_client(guarded, None) as http:
        await _login(http)
        value = http.cookies[SESSION_COOKIE]
        assert await _with_cookie(guarded, value) == 200  # another process honours it
        out = await http.post("/logout")
        assert out.status_code == 303
        assert (await http.get("/api/conversations")).status_code == 401
    # A copy of the cookie kept from before the logout opens nothing anywhere.
    assert await _with_cookie(guarded, value) == 401


async def test_a_guessed_or_expired_or_old_token_session_is_refused(settings: Settings) -> None:
    from storage.store import ProjectionStore
    from ui.security import session_record

    guarded = _guarded(settings)
    assert await _with_cookie(guarded, "not-a-session") == 401
    expired = session_record(TOKEN, "expired-session-id")
    store = ProjectionStore(guarded.approvals_db)
    await store.open_session(expired, datetime.now(UTC) - timedelta(seconds=1))
    await store.close()
    assert await _with_cookie(guarded, "expired-session-id") == 401
    async with api_client(guarded, None) as http:
        await _login(http)
        value = http.cookies[SESSION_COOKIE]
    assert await _with_cookie(replace(guarded, ui_token="a-new-token"), value) == 401
    assert await _with_cookie(guarded, value) == 200
