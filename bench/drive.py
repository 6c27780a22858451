"""Driving many conversations at once: start them, wait on the projection, decide them.

Waiting reads the projection (SQLite or PostgreSQL; cheap, no worker needed) instead of querying
workflows, so the bench adds as little load as it can to what it measures.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from bench import script
from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, start_conversation
from storage.backend import is_postgres
from storage.db import connect_reader
from storage.store import ProjectionStore

T = TypeVar("T")

# The pause before each timed decision in the latency scenarios. Sent the instant another workflow
# closed, a decision's workflow task at times waited ~37 ms more to be picked up (bare workflows on
# the dev server, in the same hour: 36.9 ms from scheduled to started back to back, 3.2 ms after a
# 10 ms pause; other runs showed no gap), and unevenly by path: the floor paid it, so ratios read
# better than they were. A person's decision never arrives that close behind another's end.
SETTLE_SECONDS = 0.1


async def settle() -> None:
    await asyncio.sleep(SETTLE_SECONDS)


def new_ids(prefix: str, count: int) -> list[str]:
    run = uuid.uuid4().hex[:6]
    return [f"{prefix}-{run}-{i:05d}" for i in range(count)]


async def bounded(items: Iterable[T], action: Callable[[T], Awaitable[Any]], concurrency: int = 50) -> list[Any]:
    gate = asyncio.Semaphore(concurrency)

    async def one(item: T) -> Any:
        async with gate:
            return await action(item)

    return list(await asyncio.gather(*(one(item) for item in items)))


async def start_all(client: Client, settings: Settings, ids: list[str], concurrency: int = 50) -> None:
    async def start(cid: str) -> None:
        await start_conversation(client, settings, script.user_text(cid), conversation_id=cid)

    await bounded(ids, start, concurrency)


async def start_floors(client: Client, workflow_type: str, ids: list[str], task_queue: str) -> None:
    """Bare floor workflows (bench/floor.py), each to run its own id's shell command once signalled,
    started as start_all starts ours."""

    async def start(fid: str) -> None:
        await client.start_workflow(workflow_type, script.shell_command(fid), id=fid, task_queue=task_queue)

    await bounded(ids, start, 50)


async def first_task_completed_at(client: Client, workflow_id: str, deadline: float, interval: float = 0.5) -> float:
    """When (epoch seconds, server clock) the workflow's first task completed: from then a floor
    workflow waits on its signal, as ours waits on a person. Reads its history until then, or
    raises TimeoutError past `deadline` (time.monotonic())."""
    handle = client.get_workflow_handle(workflow_id)
    while True:
        async for event in handle.fetch_history_events():
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                return float(event.event_time.ToMicroseconds() / 1e6)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{workflow_id} never waited for its signal")
        await asyncio.sleep(interval)


def _rows(db: str | Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of one read of the projection or ledger, on either backend (`?` placeholders); none
    before a worker has created the tables."""
    if is_postgres(db):
        import psycopg

        with psycopg.connect(str(db), autocommit=True) as pg:
            try:
                return [tuple(row) for row in pg.execute(sql.replace("?", "%s"), params).fetchall()]
            except psycopg.errors.UndefinedTable:
                return []
    conn = connect_reader(Path(db))
    try:
        return [tuple(row) for row in conn.execute(sql, params).fetchall()]
    finally:
        conn.close()


def scalar(db: str | Path, sql: str, *params: Any) -> Any:
    found = _rows(db, sql, params)
    return found[0][0] if found else None


def pending_requests(db: str | Path) -> dict[str, str]:
    """conversation id -> request id of its unresolved approval."""
    found = _rows(db, "SELECT conversation_id, request_id FROM ui_pending_approvals WHERE resolved_at IS NULL")
    return {str(row[0]): str(row[1]) for row in found}


async def wait_until(check: Callable[[], bool], what: str, timeout: float, interval: float = 0.05) -> float:
    """Poll until check() holds; return the seconds it took."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{what}: not reached within {timeout}s")
        await asyncio.sleep(interval)
    return time.monotonic() - start


async def wait_pending(db: str | Path, count: int, timeout: float = 600.0) -> float:
    sql = "SELECT count(*) FROM ui_pending_approvals WHERE resolved_at IS NULL"
    return await wait_until(lambda: (scalar(db, sql) or 0) >= count, f"{count} pending approvals", timeout, 0.25)


async def wait_idle(db: str | Path, count: int, timeout: float = 600.0, interval: float = 0.25) -> float:
    sql = "SELECT count(*) FROM ui_conversations WHERE turn_status = 'idle'"
    return await wait_until(lambda: (scalar(db, sql) or 0) >= count, f"{count} idle conversations", timeout, interval)


async def approve(client: Client, settings: Settings, request_id: str, store: ProjectionStore | None = None) -> None:
    """As a door sends it; pass the open store a UI would hold (without one, each call opens its own)."""
    decision = DecisionInput(request_id=request_id, decision="allow", decided_by="bench")
    await send_decision(client, settings, decision, store)


async def approval_latencies(client: Client, ids: list[str], sent: dict[str, float], activity: str) -> list[float]:
    """Seconds from each workflow's decision being sent to its one `activity` result recorded."""
    out = []
    for wid in ids:
        history = await client.get_workflow_handle(wid).fetch_history()
        [done] = activity_completed_at(history, activity)
        out.append(done - sent[wid])
    return out


def activity_completed_at(history: WorkflowHistory, activity_type: str) -> list[float]:
    """When (epoch seconds, server clock = this machine's) each such activity's result was recorded."""
    scheduled: dict[int, str] = {}
    done: list[float] = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = event.activity_task_completed_event_attributes
            if scheduled.get(attrs.scheduled_event_id) == activity_type:
                done.append(event.event_time.ToMicroseconds() / 1e6)
    return done
