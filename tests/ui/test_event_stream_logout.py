"""An open event stream ends when its session does: after logout (in this tab or any other) the
user's and the model's text no longer reach a browser that is not signed in."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace

import httpx

from config.settings import Settings
from tests.support.ui_fixtures import ServedApp, seed_conversation
from ui.security import SESSION_COOKIE
from ui.server import create_app

TOKEN = "stream-logout-token"
FORM = {"content-type": "application/x-www-form-urlencoded"}


async def _read_until(lines: list[str], stream: AsyncIterator[str], wanted: str, seconds: float) -> None:
    async def read() -> None:
        async for line in stream:
            lines.append(line)
            if wanted in line:
                return

    await asyncio.wait_for(read(), seconds)


async def test_logout_ends_an_open_event_stream(settings: Settings) -> None:
    guarded = replace(settings, ui_token=TOKEN)
    served = ServedApp(create_app(guarded), guarded).start()
    try:
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            login = await http.post("/login", content=f"token={TOKEN}".encode(), headers=FORM)
            assert login.status_code == 303 and http.cookies.get(SESSION_COOKIE)
            cookies = {SESSION_COOKIE: http.cookies[SESSION_COOKIE]}
            async with (
                httpx.AsyncClient(base_url=served.url, timeout=30, cookies=cookies) as browser,
                browser.stream("GET", "/api/events") as stream,
            ):
                assert stream.status_code == 200
                read = stream.aiter_lines()
                lines: list[str] = []
                await _read_until(lines, read, "event: ready", 10)
                await seed_conversation(guarded, "before-logout", events=("turn.completed",))
                await _read_until(lines, read, "before-logout", 10)

                out = await http.post("/logout", headers={"origin": served.url})
                assert out.status_code == 303
                ended_at = time.monotonic()
                await _read_until(lines, read, "event: logout", 10)
                seen_after = len(lines)
                await seed_conversation(guarded, "after-logout", events=("turn.completed",))
                rest = [line async for line in read]  # the server ended the stream
                assert time.monotonic() - ended_at < 10
            assert not any("after-logout" in line for line in [*lines[seen_after:], *rest])
        async with httpx.AsyncClient(base_url=served.url, timeout=30, cookies=cookies) as stale:
            assert (await stale.get("/api/events")).status_code == 401
    finally:
        served.stop()
