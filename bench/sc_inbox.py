"""Scenario 5: the inbox queries of projection/reader.py over a projection of 100,000 rows.

The file gets the project's own schema (projection.db) and 100,000 conversations with one
approval each, 1% of them still pending, as a busy deployment would hold after a while. Each
query runs through the projection store the CLI and UI call (a keyset page, as the UI asks for
it; the whole list once, for comparison).
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
from projection.db import connect_writer
from projection.reader import Page
from projection.store import ProjectionStore

PENDING_EVERY = 100  # 1% of approvals still wait
PAGE = 50  # the inbox's page


def populate(db: Path, rows: int) -> None:
    conn = connect_writer(db)
    base = datetime(2026, 1, 1, tzinfo=UTC)
    conversations, approvals = [], []
    for i in range(rows):
        cid = f"conv-{i:08d}"
        at = (base + timedelta(seconds=i)).isoformat()
        pending = i % PENDING_EVERY == 0
        conversations.append((cid, "awaiting_approval" if pending else "idle", int(pending), at, i))
        details = json.dumps({"tool_name": "run_shell", "arguments": {"command": f"echo {i}"}}, sort_keys=True)
        approvals.append(
            (f"perm_{cid}_call_1", cid, "turn_1", "call_1", "run_shell", "execute", details, at, at)
            + ((None, None, None) if pending else (at, "allow", "bench"))
        )
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(
        "INSERT INTO ui_conversations (conversation_id, turn_status, pending_count, updated_at, version)"
        " VALUES (?, ?, ?, ?, ?)",
        conversations,
    )
    conn.executemany(
        "INSERT INTO ui_pending_approvals (request_id, conversation_id, turn_id, tool_call_id, tool_name,"
        " permission_type, details_json, created_at, expires_at, resolved_at, decision, decided_by)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        approvals,
    )
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()


async def timed(action: Callable[[], Awaitable[Any]], repeats: int) -> tuple[list[float], Any]:
    await action()  # warm the page cache once, as a running UI would have it
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = await action()
        times.append(time.perf_counter() - t0)
    return times, result


async def run(bench: Bench, rows: int) -> dict[str, Any]:
    db = bench.root / "inbox" / "approvals.db"
    t0 = time.monotonic()
    populate(db, rows)
    say(f"inbox: {rows} conversations and approvals written in {time.monotonic() - t0:.1f}s")
    store = ProjectionStore(db)
    one = f"conv-{(rows // 2) // PENDING_EVERY * PENDING_EVERY:08d}"
    first = await store.conversations(PAGE)
    queries: dict[str, tuple[Callable[[], Awaitable[Any]], int]] = {
        "inbox first page": (lambda: store.conversations(PAGE), 200),
        "inbox second page": (lambda: store.conversations(PAGE, first.next), 200),
        "inbox first page, awaiting approval": (lambda: store.conversations(PAGE, status="awaiting_approval"), 200),
        "pending approvals first page": (lambda: store.approvals("pending", limit=PAGE), 200),
        "pending approvals, one conversation": (lambda: store.approvals("pending", one), 500),
        "get_conversation": (lambda: store.conversation(one), 500),
        "list_conversations (all rows)": (lambda: store.conversations(), 10),
    }
    out: dict[str, Any] = {"rows": rows, "pending": rows // PENDING_EVERY, "queries": {}}
    for name, (action, repeats) in queries.items():
        times, result = await timed(action, repeats)
        returned = len(result.items) if isinstance(result, Page) else (None if result is None else 1)
        out["queries"][name] = {**summary_ms(times), "rows_returned": returned}
        say(f"inbox: {name}: p50 {out['queries'][name]['p50_ms']} ms, returns {returned} rows")
    bench.check("inbox: pending approvals listed", rows // PENDING_EVERY, len((await store.approvals()).items))
    await store.close()
    return out
