"""Reads the UI needs beyond projection/reader.py; read-only connections, like the reader's."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import quote

from projection import audit, reader
from settings import Settings

ApprovalStatus = Literal["pending", "sent", "resolved", "all"]
APPROVAL_STATUSES: tuple[str, ...] = get_args(ApprovalStatus)
# "sent" rows are unresolved rows with a claimed decision: the reader's "pending" filter, narrowed here.
READER_FILTERS: dict[str, reader.ApprovalFilter] = {
    "pending": "pending",
    "sent": "pending",
    "resolved": "resolved",
    "all": "all",
}


def latest_event_id(db_path: Path) -> int:
    """Where a fresh event stream starts: after everything already written."""
    with reader.reading(db_path) as conn:
        return reader.latest_event_id(conn)


def temporal_url(settings: Settings, conversation_id: str) -> str:
    base = settings.temporal_ui_url.rstrip("/")
    return f"{base}/namespaces/{quote(settings.namespace, safe='')}/workflows/{quote(conversation_id, safe='')}"


def conversations(settings: Settings) -> list[dict[str, Any]]:
    with reader.reading(settings.approvals_db) as conn:
        rows = reader.list_conversations(conn)
    return [{**row, "temporal_url": temporal_url(settings, row["conversation_id"])} for row in rows]


def approvals(settings: Settings, status: str, conversation_id: str | None = None) -> list[dict[str, Any]]:
    """status: pending (not yet recorded by the workflow, including "sent"), sent, resolved or all."""
    with reader.reading(settings.approvals_db) as conn:
        rows = reader.list_approvals(conn, READER_FILTERS[status], conversation_id)
    return [row for row in rows if row["status"] == "sent"] if status == "sent" else rows


def approval(settings: Settings, request_id: str) -> dict[str, Any] | None:
    with reader.reading(settings.approvals_db) as conn:
        return reader.get_approval(conn, request_id)


def conversation_view(settings: Settings, conversation_id: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The projection's row for one conversation and all its approvals, oldest first."""
    with reader.reading(settings.approvals_db) as conn:
        return reader.get_conversation(conn, conversation_id), reader.list_approvals(conn, "all", conversation_id)


def events(db_path: Path, after_event_id: int, limit: int = 200) -> tuple[list[dict[str, Any]], int]:
    """Events after a position, and the newest id (lower than the position after a projection rebuild)."""
    with reader.reading(db_path) as conn:
        return reader.events_after(conn, after_event_id, limit=limit), reader.latest_event_id(conn)


def archived(settings: Settings, conversation_id: str) -> list[dict[str, Any]]:
    """Messages compactions took out of the model's transcript, oldest first."""
    with reader.reading(settings.approvals_db) as conn:
        return reader.archived_messages(conn, conversation_id)


def audit_trail(settings: Settings, since: str | None) -> list[dict[str, Any]]:
    """Every request since an ISO time (all when None), oldest first, with its decision's facts."""
    with reader.reading(settings.approvals_db) as conn:
        return audit.list_audit(conn, since)
