"""GET /api/events: the projection's event log as Server-Sent Events.

The stream reads ui_events from its position whenever new rows may exist (PostgreSQL says so with
LISTEN/NOTIFY; on SQLite an inotify watch on the WAL file, storage/sqlite_wakeup.py) and sends
each new row with its event_id as the SSE id, so a browser that reconnects sends Last-Event-ID and resumes
exactly where it stopped. A fresh stream starts after the newest event: the page loads the current
state itself, then follows changes. If the log starts over (the projection was rebuilt from
Temporal's history), the stream says `reset` and follows the new log. When its credential ends (a
logout, at once when this process took it; an expired session or a revoked token within a few
seconds: ui/open_streams.py) it says `logout` and ends.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, AsyncIterator

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse

from storage.store import ProjectionStore
from ui.open_streams import StreamCredential, while_signed_in
from ui.security import require_token

WAIT_INTERVAL = 1.0
LOGOUT_EVENT = "event: logout\ndata: {}\n\n"
KEEPALIVE_INTERVAL = 15.0
RECONNECT_MS = 1500
BATCH = 200

router = APIRouter(prefix="/api", dependencies=[Depends(require_token)])


MAX_POSITION = 2**63 - 1  # SQLite's largest integer


def parse_position(raw: str | None) -> int | None:
    """A resume position: plain ASCII digits up to SQLite's largest integer. Anything else (garbage,
    a sign, unicode digits, a number too large) is None, which the stream takes as "from now"."""
    if raw is None:
        return None
    raw = raw.strip()
    if not (raw.isascii() and raw.isdigit()):
        return None
    digits = raw.lstrip("0") or "0"
    if len(digits) > len(str(MAX_POSITION)):  # int() of thousands of digits would raise
        return None
    position = int(digits)
    return position if position <= MAX_POSITION else None


def resume_position(request: Request) -> int | None:
    """Last-Event-ID (sent by the browser on reconnect) or ?last_event_id=, when it is a valid position."""
    return parse_position(request.headers.get("last-event-id") or request.query_params.get("last_event_id"))


def format_event(event: dict) -> str:
    data = json.dumps(
        {
            "event_id": event["event_id"],
            "event_type": event["event_type"],
            "conversation_id": event["conversation_id"],
            "payload": event["payload"],
            "created_at": event["created_at"],
        }
    )
    return f"id: {event['event_id']}\ndata: {data}\n\n"


def stream_events(request: Request, store: ProjectionStore, after: int) -> AsyncIterator[str]:
    """The events after `after`, until the client leaves or its credential stops being valid
    (logout, session expiry, a revoked token): then `logout` and the end, so text written after
    that never reaches a browser that is no longer signed in."""
    return while_signed_in(request, lambda credential: _events_after(request, store, after, credential), LOGOUT_EVENT)


async def _events_after(
    request: Request, store: ProjectionStore, after: int, credential: StreamCredential
) -> AsyncGenerator[str, None]:
    yield f"retry: {RECONNECT_MS}\nevent: ready\ndata: {json.dumps({'after': after})}\n\n"
    last_sent = time.monotonic()
    while not await request.is_disconnected():
        await credential.check()
        mark = await store.event_mark()
        events, latest = await store.events(after, limit=BATCH)
        if latest < after:
            after = latest
            yield f"id: {after}\nevent: reset\ndata: {json.dumps({'after': after})}\n\n"
            continue
        for event in events:
            after = event["event_id"]
            yield format_event(event)
        if events:
            last_sent = time.monotonic()
        elif time.monotonic() - last_sent > KEEPALIVE_INTERVAL:
            last_sent = time.monotonic()
            yield ": keepalive\n\n"
        if len(events) < BATCH:  # a full batch means more are waiting: read again at once
            await credential.wait(store.wait_for_events(WAIT_INTERVAL, mark))


@router.get("/events")
async def events(request: Request) -> StreamingResponse:
    store: ProjectionStore = request.app.state.store
    after = resume_position(request)
    if after is None:
        after = await store.latest_event_id()
    return StreamingResponse(
        stream_events(request, store, after),
        media_type="text/event-stream",
        headers={"X-Accel-Buffering": "no"},
    )
