"""Scenario 5: the inbox queries over a projection of 100,000 conversations, on both backends.

Each backend (a SQLite file, and a PostgreSQL database on a server the bench starts the way the
tests do) gets the project's own schema (its migrations) and 100,000 conversations with one
approval each, 1% of them still pending, as a busy deployment would hold after a while. Each
query runs through the projection store the CLI and UI call: a keyset page as the UI asks for it,
and the whole list once, for comparison.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.harness import Bench, say
from bench.stats import summary_ms
from storage.db import connect_writer
from storage.reader import Page
from storage.store import ProjectionStore

PENDING_EVERY = 100  # 1% of approvals still wait
PAGE = 50  # the inbox's page
CONVERSATION_SQL = (
    "INSERT INTO ui_conversations (conversation_id, turn_status, pending_count, updated_at, version)"
    " VALUES (?, ?, ?, ?, ?)"
)
APPROVAL_SQL = (
    "INSERT INTO ui_pending_approvals (request_id, conversation_id, turn_id, tool_call_id, tool_name,"
    " permission_type, details_json, created_at, expires_at, resolved_at, decision, decided_by)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def rows_for(count: int) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    conversations, approvals = [], []
    for i in range(count):
        cid = f"conv-{i:08d}"
        at = (base + timedelta(seconds=i)).isoformat()
        pending = i % PENDING_EVERY == 0
        conversations.append((cid, "awaiting_approval" if pending else "idle", int(pending), at, i))
        details = json.dumps({"tool_name": "run_shell", "arguments": {"command": f"echo {i}"}}, sort_keys=True)
        approvals.append(
            (f"perm_{cid}_call_1", cid, "turn_1", "call_1", "run_shell", "execute", details, at, at)
            + ((None, None, None) if pending else (at, "allow", "bench"))
        )
    return conversations, approvals


def populate_sqlite(db: Path, count: int) -> None:
    conversations, approvals = rows_for(count)
    conn = connect_writer(db)
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(CONVERSATION_SQL, conversations)
    conn.executemany(APPROVAL_SQL, approvals)
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()


async def populate_postgres(url: str, count: int) -> None:
    import psycopg

    store = ProjectionStore(url)
    await store.latest_event_id()  # the schema, by the code's own migrations
    await store.close()
    conversations, approvals = rows_for(count)
    with psycopg.connect(url) as conn:
        with conn.cursor() as cursor:
            cursor.executemany(CONVERSATION_SQL.replace("?", "%s"), conversations)
            cursor.executemany(APPROVAL_SQL.replace("?", "%s"), approvals)
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")


async def timed(action: Callable[[], Awaitable[Any]], repeats: int) -> tuple[list[float], Any]:
    await action()  # warm the cache once, as a running UI would have it
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = await action()
        times.append(time.perf_counter() - t0)
    return times, result


async def measure(bench: Bench, store: ProjectionStore, rows: int, label: str) -> dict[str, Any]:
    one = f"conv-{(rows // 2) // PENDING_EVERY * PENDING_EVERY:08d}"
    first = await store.conversations(PAGE)
    queries: dict[str, tuple[Callable[[], Awaitable[Any]], int]] = {
        "inbox first page": (lambda: store.conversations(PAGE), 300),
        "inbox second page": (lambda: store.conversations(PAGE, first.next), 300),
        "inbox first page, awaiting approval": (lambda: store.conversations(PAGE, status="awaiting_approval"), 300),
        "pending approvals first page": (lambda: store.approvals("pending", limit=PAGE), 300),
        "pending approvals, one conversation": (lambda: store.approvals("pending", one), 300),
        "get_conversation": (lambda: store.conversation(one), 300),
        "list_conversations (all rows, unpaged)": (lambda: store.conversations(), 5),
    }
    out: dict[str, Any] = {}
    for name, (action, repeats) in queries.items():
        times, result = await timed(action, repeats)
        returned = len(result.items) if isinstance(result, Page) else (None if result is None else 1)
        out[name] = {**summary_ms(times), "rows_returned": returned}
        say(f"inbox ({label}): {name}: p50 {out[name]['p50_ms']} ms, p99 {out[name]['p99_ms']} ms")
    listed = len((await store.approvals()).items)
    bench.check(f"inbox ({label}): pending approvals listed", rows // PENDING_EVERY, listed)
    return out


async def run(bench: Bench, rows: int) -> dict[str, Any]:
    out: dict[str, Any] = {"rows": rows, "pending": rows // PENDING_EVERY, "page": PAGE, "backends": {}}
    db = bench.root / "inbox" / "approvals.db"
    t0 = time.monotonic()
    populate_sqlite(db, rows)
    say(f"inbox: {rows} rows written to SQLite in {time.monotonic() - t0:.1f}s")
    store = ProjectionStore(db)
    out["backends"]["sqlite"] = await measure(bench, store, rows, "sqlite")
    await store.close()

    url = bench.postgres_database()
    t0 = time.monotonic()
    await populate_postgres(url, rows)
    say(f"inbox: {rows} rows written to PostgreSQL in {time.monotonic() - t0:.1f}s")
    store = ProjectionStore(url)
    out["backends"]["postgresql"] = await measure(bench, store, rows, "postgresql")
    await store.close()
    return out
