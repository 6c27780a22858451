"""Idempotent writes of the projection: the worker's activities call these and nothing else writes rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from pydantic import BaseModel

from core.conversation_model import ApprovalRecord
from core.projection_model import (
    ApprovalRequestedProjection,
    ApprovalResolvedProjection,
    CompactionProjection,
    ConversationProjection,
    ProjectionEvent,
)
from storage.audit import write_decision_facts
from storage.backend import Tx
from storage.hosts import apply_host_events


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value is not None else None


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


async def insert_event(tx: Tx, event: ProjectionEvent, created_at: str | None) -> None:
    """Once per event_key, so a repeated write is a no-op. The caller has called `tx.append_events()`."""
    await tx.send(
        """INSERT INTO ui_events (event_key, event_type, conversation_id, payload_json, created_at)
           VALUES (?, ?, ?, ?, ?) ON CONFLICT (event_key) DO NOTHING""",
        (
            event.event_key,
            event.event_type,
            event.conversation_id,
            json.dumps(event.payload, sort_keys=True),
            created_at,
        ),
    )


async def write_conversation(tx: Tx, conv: ConversationProjection) -> None:
    """Upsert the status row unless a newer write already landed, then append the events once."""
    await tx.send(
        """INSERT INTO ui_conversations (conversation_id, turn_status, pending_count, updated_at, version, parent_id)
           VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (conversation_id) DO UPDATE SET
             turn_status = excluded.turn_status, pending_count = excluded.pending_count,
             updated_at = excluded.updated_at, version = excluded.version,
             parent_id = COALESCE(excluded.parent_id, ui_conversations.parent_id)
           WHERE excluded.version > ui_conversations.version""",
        (
            conv.conversation_id,
            conv.turn_status,
            conv.pending_count,
            _iso(conv.updated_at),
            conv.version,
            conv.parent_id,
        ),
    )
    if conv.events:
        await tx.append_events()
    for event in conv.events:
        await insert_event(tx, event, _iso(conv.updated_at))
    await apply_host_events(tx, conv)  # a tool waiting for a gone host, or a move


def _details(record: ApprovalRecord) -> str:
    tool = {
        "source": record.tool_source,
        "origin": record.tool_origin,
        "changed": record.tool_changed,
        "annotations": record.annotations,
    }
    details: dict[str, object] = {"tool_name": record.tool_name, "arguments": record.arguments, "tool": tool}
    if record.approvers is not None:
        details["approvers"] = record.approvers
    if record.required > 1:
        details["required"] = record.required
    if record.not_by is not None:
        details["not_by"] = record.not_by
    if not record.editable:
        details["editable"] = False
    if record.extensions:
        details["extensions"] = [extension.model_dump(mode="json") for extension in record.extensions]
    if record.prescreen is not None:  # what the pre-screen said before a person was asked
        details["prescreen"] = record.prescreen.model_dump(mode="json")
    if record.supplied_by_approver:  # the names an approval must supply, never a value
        details["supplied_by_approver"] = record.supplied_by_approver
    return json.dumps(details, sort_keys=True)


_PENDING_ROW = """INSERT INTO ui_pending_approvals (request_id, conversation_id, turn_id, tool_call_id, tool_name,
     permission_type, details_json, created_at, expires_at, kv_snapshot_json, preview_json, why_json)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
   ON CONFLICT DO NOTHING"""


def _pending_row(rec: ApprovalRecord, kv_snapshot: dict[str, object]) -> tuple[object, ...]:
    return (
        rec.request_id,
        rec.conversation_id,
        rec.turn_id,
        rec.tool_call_id,
        rec.tool_name,
        rec.permission_type,
        _details(rec),
        _iso(rec.created_at),
        _iso(rec.expires_at),
        json.dumps(kv_snapshot, sort_keys=True),
        _json_or_none(rec.preview),
        _json_or_none(rec.why),
    )


async def write_approval_requested(tx: Tx, payload: ApprovalRequestedProjection) -> bool:
    """The pending row (once) and the conversation; True when the row is new."""
    added = await tx.execute(_PENDING_ROW, _pending_row(payload.approval, payload.kv_snapshot))
    await write_conversation(tx, payload.conversation)
    return added > 0


def _json_or_none(model: BaseModel | None) -> str | None:
    return None if model is None else model.model_dump_json()


async def write_approval_changed(tx: Tx, rec: ApprovalRecord) -> None:
    """A pending request's new deadline (an extension) or approvers (an escalation)."""
    await tx.send(
        "UPDATE ui_pending_approvals SET expires_at = ?, details_json = ? WHERE request_id = ? AND resolved_at IS NULL",
        (_iso(rec.expires_at), _details(rec), rec.request_id),
    )


async def write_approval_resolved(tx: Tx, payload: ApprovalResolvedProjection) -> None:
    rec = payload.approval
    # A lost or rebuilt file may lack the pending row: write it whole, then resolve it. Nothing
    # here reads a count, so on PostgreSQL the whole write is one round trip (see Tx.send).
    await tx.send(_PENDING_ROW, _pending_row(rec, {}))
    await write_conversation(tx, payload.conversation)
    # A stale decision replaces the approval it was first recorded as (its tool did not run).
    await tx.send(
        """UPDATE ui_pending_approvals SET decision = ?, decided_by = ?, reason = ?, resolved_at = ?,
             edited_arguments_json = ?, preview_json = COALESCE(?, preview_json), reasked_as = ?
           WHERE request_id = ? AND conversation_id = ? AND (resolved_at IS NULL OR ? = 'stale')""",
        (
            rec.resolution,
            rec.decided_by,
            rec.reason,
            _iso(rec.resolved_at),
            None if rec.edited_arguments is None else json.dumps(rec.edited_arguments, sort_keys=True),
            _json_or_none(rec.preview),
            rec.reasked_as,
            rec.request_id,
            rec.conversation_id,
            rec.resolution,
        ),
    )
    await write_decision_facts(tx, rec)


async def keep_trace(tx: Tx, request_id: str, traceparent: str) -> None:
    """The trace a request was asked in (written once: the first projection's)."""
    await tx.send(
        "UPDATE ui_pending_approvals SET trace_parent = ? WHERE request_id = ? AND trace_parent IS NULL",
        (traceparent, request_id),
    )


async def mark_execution(tx: Tx, request_id: str, state: str) -> None:
    """What the UI shows of a decided tool: running, done, or unknown (a worker died mid-run)."""
    await tx.send("UPDATE ui_pending_approvals SET execution_state = ? WHERE request_id = ?", (state, request_id))


async def unresolved_request_ids(tx: Tx, conversation_id: str) -> list[str]:
    rows = await tx.fetchall(
        "SELECT request_id FROM ui_pending_approvals WHERE conversation_id = ? AND resolved_at IS NULL",
        (conversation_id,),
    )
    return [str(row["request_id"]) for row in rows]


async def resolve_stale(tx: Tx, request_id: str, resolution: str, decided_by: str, reason: str) -> bool:
    """Resolve a row Temporal no longer holds pending (used by a rebuild); True when it changed."""
    changed = await tx.execute(
        "UPDATE ui_pending_approvals SET decision = ?, decided_by = ?, reason = ?, resolved_at = ?"
        " WHERE request_id = ? AND resolved_at IS NULL",
        (resolution, decided_by, reason, now_iso(), request_id),
    )
    return changed > 0


async def write_compaction(tx: Tx, payload: CompactionProjection) -> None:
    """Archive messages a compaction takes out of the model's transcript; a row per position, so
    a retried write adds nothing."""
    archived_at = _iso(payload.conversation.updated_at)
    for item in payload.messages:
        await tx.send(
            """INSERT INTO ui_transcript_archive (conversation_id, seq, message_json, archived_at)
               VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING""",
            (payload.conversation.conversation_id, item.seq, item.message.model_dump_json(), archived_at),
        )
    await write_conversation(tx, payload.conversation)
