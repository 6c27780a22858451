"""GET /api/events over real HTTP: live rows from ui_events, resumed from Last-Event-ID."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from config.settings import Settings
from tests.support.postgres import on_both_backends
from tests.support.ui_fixtures import ServedApp, seed_conversation
from ui.server import create_app

pytestmark = on_both_backends


async def _read_events(lines: AsyncIterator[str], count: int) -> list[dict[str, Any]]:
    """The next `count` SSE messages (named or not), each as {id, event, data}."""
    found: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    async for line in lines:
        if line == "":
            if "data" in current:
                found.append(current)
                if len(found) == count:
                    return found
            current = {}
        elif not line.startswith(":"):
            key, _, value = line.partition(": ")
            current[key] = json.loads(value) if key == "data" else value
    return found


async def test_events_stream_live_and_resume_from_last_event_id(settings: Settings) -> None:
    await seed_conversation(settings, "conv-1", "running", events=("turn.started",))
    await seed_conversation(settings, "conv-1", "awaiting_approval", pending=1, events=("turn.awaiting_approval",))
    served = ServedApp(create_app(settings), settings).start()
    try:
        async with httpx.AsyncClient(base_url=served.url, timeout=10) as http:
            # A fresh stream starts after what exists; a new row arrives without asking.
            async with http.stream("GET", "/api/events") as fresh:
                assert fresh.headers["content-type"].startswith("text/event-stream")
                lines = fresh.aiter_lines()
                [ready] = await _read_events(lines, 1)
                assert (ready["event"], ready["data"]) == ("ready", {"after": 2})
                await seed_conversation(settings, "conv-1", "idle", events=("turn.completed",))
                [live] = await asyncio.wait_for(_read_events(lines, 1), timeout=10)
                assert (live["id"], live["data"]["event_type"]) == ("3", "turn.completed")
            # A reconnect with Last-Event-ID gets exactly what it missed, in order.
            async with http.stream("GET", "/api/events", headers={"Last-Event-ID": "1"}) as resumed:
                found = await asyncio.wait_for(_read_events(resumed.aiter_lines(), 3), timeout=10)
            # A position past the end (the projection was rebuilt, its log starts over) resets the stream.
            async with http.stream("GET", "/api/events", headers={"Last-Event-ID": "99"}) as rebuilt:
                _, reset = await asyncio.wait_for(_read_events(rebuilt.aiter_lines(), 2), timeout=10)
        assert [e.get("id") for e in found[1:]] == ["2", "3"]
        assert [e["data"]["event_type"] for e in found[1:]] == ["turn.awaiting_approval", "turn.completed"]
        assert found[1]["data"]["conversation_id"] == "conv-1"
        assert (reset["event"], reset["id"], reset["data"]) == ("reset", "3", {"after": 3})
    finally:
        await asyncio.to_thread(served.stop)
