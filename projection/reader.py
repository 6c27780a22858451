"""Read queries over the projection for the CLI and the UI: they work with no worker running."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from projection.audit import outcome
from projection.db import connect_reader
from workflows.models import arguments_hash

ApprovalFilter = Literal["pending", "resolved", "all"]


@contextmanager
def reading(db_path: Path) -> Iterator[sqlite3.Connection]:
    conn = connect_reader(db_path)
    try:
        yield conn
    finally:
        conn.close()


# Why a failed conversation failed: the reason of its newest turn.failed event.
_CONVERSATION_COLUMNS = """conversation_id, turn_status, pending_count, updated_at,
    CASE WHEN turn_status = 'failed' THEN (SELECT json_extract(e.payload_json, '$.reason') FROM ui_events e
      WHERE e.conversation_id = ui_conversations.conversation_id AND e.event_type = 'turn.failed'
      ORDER BY e.event_id DESC LIMIT 1) END AS last_error"""


def list_conversations(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Newest activity first: what the inbox lists, with the status behind each dot."""
    return [
        dict(row)
        for row in conn.execute(
            f"SELECT {_CONVERSATION_COLUMNS} FROM ui_conversations ORDER BY updated_at DESC, conversation_id"
        )
    ]


def get_conversation(conn: sqlite3.Connection, conversation_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        f"SELECT {_CONVERSATION_COLUMNS} FROM ui_conversations WHERE conversation_id = ?",
        (conversation_id,),
    ).fetchone()
    return dict(row) if row is not None else None


_APPROVAL_COLUMNS = """a.request_id, a.conversation_id, a.turn_id, a.tool_call_id, a.tool_name, a.permission_type,
    a.details_json, a.created_at, a.expires_at, a.resolved_at, a.decision, a.decided_by, a.reason,
    a.kv_snapshot_json, a.execution_state,
    c.decision AS claimed_decision, c.decided_by AS claimed_by, c.claimed_at,
    f.decided_via, f.decided_args_hash,
    (SELECT json_group_array(p.principal) FROM ui_partial_approvals p WHERE p.request_id = a.request_id)
      AS approved_by_json"""
# The claim a decider made and the facts of the recorded decision (door, arguments hash).
_APPROVAL_JOINS = """ui_pending_approvals a LEFT JOIN ui_decision_claims c ON c.request_id = a.request_id
    LEFT JOIN ui_decision_facts f ON f.request_id = a.request_id"""


def _approval(row: sqlite3.Row) -> dict[str, Any]:
    item = dict(row)
    details = json.loads(item.pop("details_json"))
    item["arguments"] = details.get("arguments", {})
    # What a decision on this row binds to: a decider sends it back, and other arguments are refused.
    item["args_hash"] = arguments_hash(item["arguments"])
    item["outcome"] = outcome(item["decision"], item["execution_state"])
    item["approvers"] = details.get("approvers")  # who may decide it; None: anyone
    # A request several people must approve: how many, and who has (as the doors sent it).
    item["required"] = details.get("required", 1)
    item["approved_by"] = json.loads(item.pop("approved_by_json") or "[]")
    # Where the tool comes from (built-in, Python module, MCP server) and whether it changed.
    item["tool"] = details.get("tool") or {"source": "builtin", "origin": "builtin", "changed": False}
    item["kv_snapshot"] = json.loads(item.pop("kv_snapshot_json") or "{}")
    # "sent": a person decided and the decision is on its way, but the workflow has not recorded it.
    item["status"] = "resolved" if item["resolved_at"] else ("sent" if item["claimed_decision"] else "pending")
    return item


def list_approvals(
    conn: sqlite3.Connection, status: ApprovalFilter = "pending", conversation_id: str | None = None
) -> list[dict[str, Any]]:
    where, params = [], []
    if status == "pending":
        where.append("a.resolved_at IS NULL")
    elif status == "resolved":
        where.append("a.resolved_at IS NOT NULL")
    if conversation_id is not None:
        where.append("a.conversation_id = ?")
        params.append(conversation_id)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    sql = f"SELECT {_APPROVAL_COLUMNS} FROM {_APPROVAL_JOINS} {clause} ORDER BY a.created_at, a.request_id"
    return [_approval(row) for row in conn.execute(sql, params)]


def get_approval(conn: sqlite3.Connection, request_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        f"SELECT {_APPROVAL_COLUMNS} FROM {_APPROVAL_JOINS} WHERE a.request_id = ?",
        (request_id,),
    ).fetchone()
    return _approval(row) if row is not None else None


def latest_event_id(conn: sqlite3.Connection) -> int:
    """The newest event's position (0 for an empty log): where a fresh stream starts."""
    return int(conn.execute("SELECT COALESCE(MAX(event_id), 0) FROM ui_events").fetchone()[0])


def events_after(
    conn: sqlite3.Connection, after_event_id: int = 0, conversation_id: str | None = None, limit: int = 500
) -> list[dict[str, Any]]:
    """The ordered event log from a position on: what SSE and `watch` stream."""
    sql = "SELECT event_id, event_type, conversation_id, payload_json, created_at FROM ui_events WHERE event_id > ?"
    params: list[Any] = [after_event_id]
    if conversation_id is not None:
        sql += " AND conversation_id = ?"
        params.append(conversation_id)
    sql += " ORDER BY event_id LIMIT ?"
    params.append(limit)
    events = []
    for row in conn.execute(sql, params):
        item = dict(row)
        item["payload"] = json.loads(item.pop("payload_json"))
        events.append(item)
    return events


def archived_messages(conn: sqlite3.Connection, conversation_id: str) -> list[dict[str, Any]]:
    """The messages compactions took out of the model's transcript, oldest first: with the
    workflow's current messages, the whole transcript as people read it."""
    return [
        json.loads(row[0])
        for row in conn.execute(
            "SELECT message_json FROM ui_transcript_archive WHERE conversation_id = ? ORDER BY seq",
            (conversation_id,),
        )
    ]
