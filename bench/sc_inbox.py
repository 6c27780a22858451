"""Scenario 5: the inbox queries of projection/reader.py over a projection of 100,000 rows.

The file gets the project's own schema (projection.db) and 100,000 conversations with one
approval each, 1% of them still pending, as a busy deployment would hold after a while. Each
query runs through the reader functions the CLI and UI call, on an open read-only connection;
opening a reader (connect_reader) is timed on its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.harness import Bench, say
from bench.stats import summary_ms
from projection import reader
from projection.db import connect_reader, connect_writer

PENDING_EVERY = 100  # 1% of approvals still wait


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


def timed(action: Callable[[], Any], repeats: int) -> tuple[list[float], Any]:
    action()  # warm the page cache once, as a running UI would have it
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - t0)
    return times, result


async def run(bench: Bench, rows: int) -> dict[str, Any]:
    db = bench.root / "inbox" / "approvals.db"
    t0 = time.monotonic()
    populate(db, rows)
    say(f"inbox: {rows} conversations and approvals written in {time.monotonic() - t0:.1f}s")
    conn = connect_reader(db)
    one = f"conv-{(rows // 2) // PENDING_EVERY * PENDING_EVERY:08d}"
    queries: dict[str, tuple[Callable[[], Any], int]] = {
        "list_conversations (all rows)": (lambda: reader.list_conversations(conn), 20),
        "list_approvals pending": (lambda: reader.list_approvals(conn, "pending"), 100),
        "list_approvals pending, one conversation": (lambda: reader.list_approvals(conn, "pending", one), 500),
        "get_conversation": (lambda: reader.get_conversation(conn, one), 500),
        "open a reader (connect_reader)": (lambda: connect_reader(db).close(), 100),
    }
    out: dict[str, Any] = {"rows": rows, "pending": rows // PENDING_EVERY, "queries": {}}
    for name, (action, repeats) in queries.items():
        times, result = timed(action, repeats)
        returned = len(result) if isinstance(result, list) else (None if result is None else 1)
        out["queries"][name] = {**summary_ms(times), "rows_returned": returned}
        say(f"inbox: {name}: p50 {out['queries'][name]['p50_ms']} ms, returns {returned} rows")
    conn.close()
    bench.check(
        "inbox: pending approvals listed", rows // PENDING_EVERY, len(reader.list_approvals(connect_reader(db)))
    )
    return out
