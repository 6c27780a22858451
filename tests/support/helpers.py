"""Polling helpers: wait for an outcome instead of sleeping a fixed time."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import psycopg
from psycopg.rows import dict_row
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle, WorkflowHistory
from temporalio.service import RPCError, RPCStatusCode

from activities.workspaces import workspace_for
from config.settings import Settings
from core.chat_model import ChatMessage
from core.conversation_model import ConversationState
from doors.control import get_state, start_conversation

T = TypeVar("T")


# A check waited for: asked again after 0.02 s, then ever less often, down to twice a second. A check is
# often a query (a workflow task on the worker and the server) or a new database connection, and
# polled every 0.1 s through a long wait it was a large part of the suite's CPU.
FIRST_INTERVAL, LONGEST_INTERVAL, BACKOFF = 0.02, 0.5, 1.5


async def eventually(
    check: Callable[[], Awaitable[T | None]], *, timeout: float = 30.0, interval: float | None = None
) -> T:
    """Return check()'s first truthy result; on timeout raise with its last value or error.
    `interval` fixes the pause between checks; without it they back off (FIRST_INTERVAL up to
    LONGEST_INTERVAL).

    A query that times out (a worker busy replaying, or being replaced) is "not yet", not a
    failure: the check is asked again until the deadline."""
    deadline = time.monotonic() + timeout
    last: Any = None
    pause = FIRST_INTERVAL if interval is None else interval
    while True:
        try:
            last = await check()
            if last:
                return last
        except (AssertionError, RPCError) as err:
            last = err
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout}s; last: {last!r}")
        await asyncio.sleep(pause)
        if interval is None:
            pause = min(pause * BACKOFF, LONGEST_INTERVAL)


Db = str | Path  # a SQLite file or a PostgreSQL URL, as Settings.approvals_db holds it


# The workflow's own events of a conversation, without the streamed text of its model calls.
TURN_EVENTS = "SELECT event_type FROM ui_events WHERE conversation_id = ? AND event_type <> 'message.delta'"


def rows(db: Db, sql: str, *params: Any) -> list[dict[str, Any]]:
    """A test's own look at the tables (`?` placeholders on both backends); [] before they exist."""
    if isinstance(db, str):
        return _postgres_rows(db, sql, params)
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in conn.execute(sql, params)]
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def execute(db: Db, sql: str, *params: Any) -> None:
    """A test's own change to the tables (to age a row, say), on either backend."""
    if isinstance(db, str):
        with psycopg.connect(db, autocommit=True) as pg:
            pg.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return
    with sqlite3.connect(db) as conn:
        conn.execute(sql, params)
    conn.close()


def _postgres_rows(url: str, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    with psycopg.connect(url, row_factory=dict_row, autocommit=True) as conn:
        try:
            return conn.execute(sql.replace("?", "%s"), params).fetchall()  # type: ignore[arg-type]
        except psycopg.errors.UndefinedTable:
            return []


def pending_rows(db: Db, conversation_id: str | None = None) -> list[dict[str, Any]]:
    sql = "SELECT * FROM ui_pending_approvals WHERE resolved_at IS NULL"
    if conversation_id is None:
        return rows(db, sql + " ORDER BY created_at")
    return rows(db, sql + " AND conversation_id = ? ORDER BY created_at", conversation_id)


def approval_row(db: Db, request_id: str) -> dict[str, Any]:
    found = rows(db, "SELECT * FROM ui_pending_approvals WHERE request_id = ?", request_id)
    assert found, f"no row for {request_id}"
    return found[0]


async def wait_pending(db: Db, conversation_id: str, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]]:
        found = pending_rows(db, conversation_id)
        return found if len(found) == count else []

    return await eventually(check, timeout=timeout)


async def wait_status(
    client: Client, conversation_id: str, status: str, timeout: float = 30.0, *, tool_results: int = 0
) -> ConversationState:
    """tool_results: also wait for that many tool results, since a message just sent may not have
    moved an idle conversation yet."""

    async def check() -> ConversationState | None:
        state = await get_state(client, conversation_id)
        done = state.turn_status == status and len(tool_messages(state)) >= tool_results
        return state if done else None

    return await eventually(check, timeout=timeout)


async def wait_reply(client: Client, conversation_id: str, text: str, timeout: float = 30.0) -> ConversationState:
    """Wait for the turn a message just sent started to end idle with `text` as the last message:
    `wait_status` alone would see the idle state from before the message."""

    async def check() -> ConversationState | None:
        state = await get_state(client, conversation_id)
        return state if state.turn_status == "idle" and state.messages[-1].content == text else None

    return await eventually(check, timeout=timeout)


class Tracker(Protocol):
    def track(self, conversation_id: str) -> str: ...


@dataclass
class Started:
    """A conversation a test started, with what it waited for: its pending rows, its state."""

    conversation_id: str
    pending: list[dict[str, Any]] = field(default_factory=list)
    state: ConversationState | None = None


async def start_and_wait(
    client: Client,
    settings: Settings,
    message: str,
    histories: Tracker | None = None,
    *,
    conversation_id: str | None = None,
    pending: int | None = None,
    status: str | None = None,
    timeout: float = 30.0,
) -> Started:
    """Start a conversation (tracked by histories, if given, so its history is saved and replayed),
    then wait until it has `pending` waiting approvals and/or its turn is in `status`."""
    started = Started(await start_conversation(client, settings, message, conversation_id))
    if histories is not None:
        histories.track(started.conversation_id)
    if pending is not None:
        started.pending = await wait_pending(settings.approvals_db, started.conversation_id, pending, timeout)
    if status is not None:
        started.state = await wait_status(client, started.conversation_id, status, timeout)
    return started


async def terminate_if_running(client: Client, workflow_id: str, reason: str = "test over") -> None:
    """Ends a workflow a test started; one that already ended (a door closed it) is fine."""
    try:
        await client.get_workflow_handle(workflow_id).terminate(reason)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise


def scheduled_activities(history: WorkflowHistory) -> list[str]:
    """The activity types a history scheduled, in order."""
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


def tool_messages(state: ConversationState) -> list[str]:
    return [m.content or "" for m in state.messages if m.role == "tool"]


async def workflow_task_failures(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The failure message of every WorkflowTaskFailed event in the handle's history."""
    history = await handle.fetch_history()
    return [
        e.workflow_task_failed_event_attributes.failure.message
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]


def archived(db: Db, conversation_id: str) -> list[dict[str, Any]]:
    """The projection's transcript archive of one conversation: (seq, message_json) rows."""
    sql = "SELECT seq, message_json FROM ui_transcript_archive WHERE conversation_id = ? ORDER BY seq"
    return rows(db, sql, conversation_id)


def full_transcript(db: Db, state: ConversationState) -> list[ChatMessage]:
    """What people read: the archived messages, then the workflow's current ones after its head
    (the system prompt and the summary of what was compacted)."""
    old = [ChatMessage.model_validate_json(row["message_json"]) for row in archived(db, state.conversation_id)]
    return old + [m for m in state.messages if m.role != "system"]


def workspace_of(where: Settings | Path, conversation_id: str) -> Path:
    """The directory a conversation's tools work in (its own, below the worker's WORKSPACE_DIR)."""
    return workspace_for(where.workspace_dir if isinstance(where, Settings) else where, conversation_id)


def new_workspace(where: Settings | Path, conversation_id: str | None = None) -> tuple[str, Path]:
    """An id for a conversation a test is about to start, and its workspace, made, so the test can
    put files there first (start the conversation with this id)."""
    from doors.control import new_conversation_id

    conversation_id = conversation_id or new_conversation_id()
    path = workspace_of(where, conversation_id)
    path.mkdir(parents=True, exist_ok=True)
    return conversation_id, path
