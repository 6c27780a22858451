"""Read queries over the projection for the CLI and the UI: they work with no worker running.

Listings are keyset pages: a page ends with an opaque cursor naming its last row, and the next
page starts strictly after it, so a page costs the same at any size and a row written meanwhile
is neither skipped nor repeated.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from config.telemetry import trace_id_of
from core.conversation_model import arguments_hash
from storage.audit import outcome
from storage.backend import Tx
from storage.hosts import parse_wait

ApprovalFilter = Literal["pending", "sent", "resolved", "all"]


class BadCursor(ValueError):
    """An `after` value that no page handed out."""


@dataclass
class Page:
    items: list[dict[str, Any]] = field(default_factory=list)
    next: str | None = None  # pass as `after` for the next page; None on the last page


def _encode(*key: str) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


def _decode(cursor: str) -> tuple[str, str]:
    try:
        first, second = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError):
        raise BadCursor(f"not a page cursor: {cursor!r}") from None
    return str(first), str(second)


def _page(rows: list[dict[str, Any]], limit: int | None, key: tuple[str, str]) -> Page:
    if limit is None or len(rows) <= limit:
        return Page(rows)
    rows = rows[:limit]
    return Page(rows, _encode(str(rows[-1][key[0]]), str(rows[-1][key[1]])))


# Why a failed conversation failed: the payload of its newest turn.failed event (its reason is
# read in Python, so the query is the same on both backends).
_CONVERSATION_COLUMNS = """conversation_id, turn_status, pending_count, updated_at, parent_id,
    tool_host, host_wait_json, CASE WHEN turn_status = 'failed' THEN (SELECT e.payload_json FROM ui_events e
      WHERE e.conversation_id = ui_conversations.conversation_id AND e.event_type = 'turn.failed'
      ORDER BY e.event_id DESC LIMIT 1) END AS failed_payload"""


def _conversation(row: dict[str, Any]) -> dict[str, Any]:
    payload = row.pop("failed_payload", None)
    try:
        row["last_error"] = json.loads(payload).get("reason") if payload else None
    except (ValueError, AttributeError):
        row["last_error"] = None
    # The host its tools run on, and what a tool waits for when no worker polls that host.
    row["host_wait"] = parse_wait(row.pop("host_wait_json", None))
    return row


async def list_conversations(
    tx: Tx, limit: int | None = None, after: str | None = None, status: str | None = None
) -> Page:
    """Newest activity first: what the inbox lists, with the status behind each dot."""
    where: list[str] = []
    params: list[Any] = []
    if status is not None:
        where.append("turn_status = ?")
        params.append(status)
    if after is not None:
        updated_at, conversation_id = _decode(after)
        # The bound on updated_at alone is a range of the page index; the rest filters its ties.
        where.append("updated_at <= ? AND (updated_at < ? OR conversation_id > ?)")
        params += [updated_at, updated_at, conversation_id]
    sql = f"SELECT {_CONVERSATION_COLUMNS} FROM ui_conversations"
    if where:
        sql += f" WHERE {' AND '.join(where)}"
    sql += " ORDER BY updated_at DESC, conversation_id"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit + 1)
    found = [_conversation(row) for row in await tx.fetchall(sql, params)]
    return _page(found, limit, ("updated_at", "conversation_id"))


async def get_conversation(tx: Tx, conversation_id: str) -> dict[str, Any] | None:
    row = await tx.fetchone(
        f"SELECT {_CONVERSATION_COLUMNS} FROM ui_conversations WHERE conversation_id = ?", (conversation_id,)
    )
    return _conversation(row) if row is not None else None


async def list_subagents(tx: Tx, conversation_id: str) -> list[dict[str, Any]]:
    """The conversations this one delegated to, oldest activity first."""
    found = await tx.fetchall(
        f"SELECT {_CONVERSATION_COLUMNS} FROM ui_conversations WHERE parent_id = ?"
        " ORDER BY updated_at, conversation_id",
        (conversation_id,),
    )
    return [_conversation(row) for row in found]


async def open_conversations(tx: Tx) -> list[dict[str, Any]]:
    """Every conversation not closed, with the payload of its newest event."""
    return await tx.fetchall(
        """SELECT c.conversation_id, c.turn_status, c.pending_count,
             (SELECT e.payload_json FROM ui_events e WHERE e.conversation_id = c.conversation_id
              ORDER BY e.event_id DESC LIMIT 1) AS last_payload
           FROM ui_conversations c WHERE c.turn_status IN ('idle', 'running', 'awaiting_approval', 'failed')"""
    )


_APPROVAL_COLUMNS = """a.request_id, a.conversation_id, a.turn_id, a.tool_call_id, a.tool_name, a.permission_type,
    a.details_json, a.created_at, a.expires_at, a.resolved_at, a.decision, a.decided_by, a.reason,
    a.kv_snapshot_json, a.execution_state, a.edited_arguments_json, a.trace_parent,
    a.preview_json, a.why_json, a.reasked_as,
    c.decision AS claimed_decision, c.decided_by AS claimed_by, c.claimed_at,
    f.decided_via, f.decided_args_hash, f.decided_groups_json, f.supplied_json, p.parent_id"""
# The claim a decider made, and the facts of the recorded decision (door, arguments hash).
_APPROVALS = f"SELECT {_APPROVAL_COLUMNS} FROM ui_pending_approvals a LEFT JOIN ui_decision_claims c"
_APPROVALS += " ON c.request_id = a.request_id LEFT JOIN ui_decision_facts f ON f.request_id = a.request_id"
# The conversation's parent: a subagent's requests say whom it works for.
_APPROVALS += " LEFT JOIN ui_conversations p ON p.conversation_id = a.conversation_id"
_STATUS_CLAUSES = {
    "pending": "a.resolved_at IS NULL",
    "sent": "a.resolved_at IS NULL AND c.decision IS NOT NULL",
    "resolved": "a.resolved_at IS NOT NULL",
}


def _terms(details: dict[str, Any]) -> dict[str, Any]:
    """Who may decide a request, as its details_json records it."""
    return {
        "approvers": details.get("approvers"),  # who may decide it; None: anyone
        "required": details.get("required", 1),  # distinct approvals it needs
        "not_by": details.get("not_by"),  # the starter, where a rule forbids approving one's own calls
        "editable": details.get("editable", True),  # false: its caller cannot run edited arguments
        # Arguments the approver supplies with the approval (a secret the model never sees).
        "supplied_by_approver": details.get("supplied_by_approver", []),
    }


def _approval(row: dict[str, Any]) -> dict[str, Any]:
    item = dict(row)
    details = json.loads(item.pop("details_json"))
    item["arguments"] = details.get("arguments", {})
    # What a decision on this row binds to: a decider sends it back, and other arguments are refused.
    item["args_hash"] = arguments_hash(item["arguments"])
    edited = item.pop("edited_arguments_json")
    item["edited_arguments"] = json.loads(edited) if edited else None  # an edit's arguments (they ran)
    item["decided_groups"] = json.loads(item.pop("decided_groups_json") or "[]")  # as the doors verified them
    item["supplied"] = json.loads(item.pop("supplied_json") or "{}")  # argument -> who supplied it (no value)
    item["outcome"] = outcome(item["decision"], item["execution_state"])
    item.update(_terms(details))
    item["extensions"] = details.get("extensions", [])  # deadline extensions: by, at, seconds, expires_at, reason
    item["prescreen"] = details.get("prescreen")  # the pre-screen's verdict, model, reason, latency; None: not asked
    # Where the tool comes from (built-in, Python module, MCP server) and whether it changed.
    item["tool"] = details.get("tool") or {"source": "builtin", "origin": "builtin", "changed": False}
    item["kv_snapshot"] = json.loads(item.pop("kv_snapshot_json") or "{}")
    item["trace_id"] = trace_id_of(item.get("trace_parent"))  # the request's trace (OTEL_* tracing on)
    # What the call will change (core/previews.py) and why the agent wants it (core/why.py); None: not kept.
    preview, why = item.pop("preview_json"), item.pop("why_json")
    item["preview"] = json.loads(preview) if preview else None
    item["why"] = json.loads(why) if why else None
    # "sent": a person decided and the decision is on its way, but the workflow has not recorded it.
    item["status"] = "resolved" if item["resolved_at"] else ("sent" if item["claimed_decision"] else "pending")
    return item


async def list_approvals(
    tx: Tx,
    status: ApprovalFilter = "pending",
    conversation_id: str | None = None,
    limit: int | None = None,
    after: str | None = None,
) -> Page:
    """Oldest first. "pending" means not yet recorded by the workflow (it includes "sent")."""
    where: list[str] = []
    params: list[Any] = []
    if status in _STATUS_CLAUSES:
        where.append(_STATUS_CLAUSES[status])
    if conversation_id is not None:
        where.append("a.conversation_id = ?")
        params.append(conversation_id)
    if after is not None:
        created_at, request_id = _decode(after)
        where.append("a.created_at >= ? AND (a.created_at > ? OR a.request_id > ?)")
        params += [created_at, created_at, request_id]
    sql = _APPROVALS + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY a.created_at, a.request_id"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit + 1)
    rows = await _with_approvals([_approval(row) for row in await tx.fetchall(sql, params)], tx)
    return _page(rows, limit, ("created_at", "request_id"))


async def get_approval(tx: Tx, request_id: str) -> dict[str, Any] | None:
    row = await tx.fetchone(f"{_APPROVALS} WHERE a.request_id = ?", (request_id,))
    return (await _with_approvals([_approval(row)], tx))[0] if row is not None else None


async def get_decision_terms(tx: Tx, request_id: str) -> dict[str, Any] | None:
    """What a decision on the request is judged by (the keys `get_approval` gives them), read from
    its own row alone: the claim before a decision is sent reads this and nothing more."""
    row = await tx.fetchone(
        "SELECT request_id, conversation_id, details_json, decision, decided_by FROM ui_pending_approvals"
        " WHERE request_id = ?",
        (request_id,),
    )
    if row is None:
        return None
    item = dict(row)
    details = json.loads(item.pop("details_json"))
    item["arguments"] = details.get("arguments", {})
    item.update(_terms(details))
    return (await _with_approvals([item], tx))[0]


async def _with_approvals(items: list[dict[str, Any]], tx: Tx) -> list[dict[str, Any]]:
    """`approved_by`: who approved a request that needs several people, as the doors sent it."""
    several = [item["request_id"] for item in items if item["required"] > 1]
    found: dict[str, list[str]] = {}
    if several:
        marks = ", ".join("?" * len(several))
        for row in await tx.fetchall(
            f"SELECT request_id, principal FROM ui_partial_approvals WHERE request_id IN ({marks})"
            " ORDER BY approved_at, principal",
            several,
        ):
            found.setdefault(row["request_id"], []).append(row["principal"])
    for item in items:
        item["approved_by"] = found.get(item["request_id"], [])
    return items


async def latest_event_id(tx: Tx) -> int:
    """The newest event's position (0 for an empty log): where a fresh stream starts."""
    row = await tx.fetchone("SELECT COALESCE(MAX(event_id), 0) AS latest FROM ui_events")
    return int(row["latest"]) if row else 0


async def events_after(
    tx: Tx, after_event_id: int = 0, conversation_id: str | None = None, limit: int = 500
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
    for row in await tx.fetchall(sql, params):
        row["payload"] = json.loads(row.pop("payload_json"))
        row["event_id"] = int(row["event_id"])
        events.append(row)
    return events


async def archived_messages(tx: Tx, conversation_id: str) -> list[dict[str, Any]]:
    """The messages compactions took out of the model's transcript, oldest first: with the
    workflow's current messages, the whole transcript as people read it."""
    found = await tx.fetchall(
        "SELECT message_json FROM ui_transcript_archive WHERE conversation_id = ? ORDER BY seq", (conversation_id,)
    )
    return [json.loads(row["message_json"]) for row in found]
