"""Helpers for the UI tests: a projection seeded through the real writes, and the app over HTTP.

Seeding uses storage/writes.py, the code the worker's activities run, so the UI reads exactly
the rows a worker would have written.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import ApprovalRecord, TurnStatus, request_id_for
from core.projection_model import ApprovalRequestedProjection, ConversationProjection, ProjectionEvent
from storage.store import ProjectionStore
from ui.server import close_stores, create_app, uvicorn_config

BASE_URL = "http://127.0.0.1"
_version = 0


def _next_version() -> int:
    global _version
    _version += 1
    return _version


async def _write(settings: Settings, write: Any) -> None:
    store = ProjectionStore(settings.approvals_db)
    try:
        await write(store)
    finally:
        await store.close()


async def seed_conversation(
    settings: Settings,
    conversation_id: str,
    status: TurnStatus = "idle",
    pending: int = 0,
    at: datetime | None = None,
    events: tuple[str, ...] = (),
) -> None:
    conv = ConversationProjection(
        conversation_id=conversation_id,
        turn_status=status,
        pending_count=pending,
        updated_at=at or datetime.now(UTC),
        version=_next_version(),
        events=[
            ProjectionEvent(event_key=f"{conversation_id}:{name}", event_type=name, conversation_id=conversation_id)
            for name in events
        ],
    )
    await _write(settings, lambda store: store.project_conversation(conv))


async def seed_pending(
    settings: Settings,
    conversation_id: str,
    tool_call_id: str = "call_1",
    tool_name: str = "write_file",
    arguments: dict[str, Any] | None = None,
) -> str:
    """A pending approval as the workflow's projection activity writes it; returns its request id."""
    now = datetime.now(UTC)
    record = ApprovalRecord(
        request_id=request_id_for(conversation_id, tool_call_id),
        conversation_id=conversation_id,
        turn_id="turn_1",
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        permission_type="write",
        arguments=arguments if arguments is not None else {"path": "notes.txt", "content": "hello"},
        created_at=now,
        expires_at=now + timedelta(hours=1),
    )
    conv = ConversationProjection(
        conversation_id=conversation_id,
        turn_status="awaiting_approval",
        pending_count=1,
        updated_at=now,
        version=_next_version(),
        events=[
            ProjectionEvent(
                event_key=f"{record.request_id}:permission.request",
                event_type="permission.request",
                conversation_id=conversation_id,
                payload={"request_id": record.request_id},
            )
        ],
    )
    payload = ApprovalRequestedProjection(approval=record, kv_snapshot={}, conversation=conv)
    await _write(settings, lambda store: store.project_approval_requested(payload))
    return record.request_id


@asynccontextmanager
async def api_client(settings: Settings, client: Client | None) -> AsyncIterator[httpx.AsyncClient]:
    """The app in-process; client is the test's own Temporal client (None: no Temporal is reachable)."""

    async def provide() -> Client:
        assert client is not None, "this test runs without Temporal"
        return client

    app = create_app(settings, provide)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as http:
            yield http
    finally:
        await close_stores(app)  # ASGITransport runs no lifespan


@dataclass
class ServedApp:
    """The app on a free port, served by uvicorn in a background thread (as `python -m ui` serves it)."""

    app: FastAPI
    settings: Settings
    port: int = 0
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"{BASE_URL}:{self.port}"

    def start(self) -> ServedApp:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = int(sock.getsockname()[1])
        config = uvicorn_config(self.settings, self.app, log_level="warning", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the UI server did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=15)


def served_app(settings: Settings, temporal_address: str) -> ServedApp:
    """The UI connects its own client on its own event loop, to the test's Temporal server."""
    ui_settings = replace(settings, temporal_address=temporal_address)
    return ServedApp(create_app(ui_settings), ui_settings).start()


async def add_person(settings: Settings, name: str, groups: list[str]) -> str:
    """A person with their own token, as `starter.py users add` records them; returns the token."""
    store = ProjectionStore(settings.approvals_db)
    try:
        return await store.add_user(name, groups)
    finally:
        await store.close()
