"""A decided audit, written through the worker's own projection writes (storage/writes.py), with
the times, doors and people a test chooses."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from config.settings import Settings
from core.conversation_model import ApprovalRecord, request_id_for
from core.projection_model import ApprovalResolvedProjection, ConversationProjection
from storage.store import ProjectionStore

START = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Decided:
    tool: str
    arguments: dict[str, Any]
    decision: str  # allow, deny, edit, expired, canceled
    seconds: float  # from the request to its decision
    by: str | None = "alice"
    door: str | None = "ui"
    at: datetime = START  # when it was asked


async def seed_decided(settings: Settings, calls: list[Decided], conversation_id: str = "conv-seeded") -> list[str]:
    """Each call as a request resolved `seconds` after it was asked; returns the request ids."""
    store = ProjectionStore(settings.approvals_db)
    ids = []
    try:
        for number, call in enumerate(calls, start=1):
            record = ApprovalRecord(
                request_id=request_id_for(conversation_id, f"call_{number}"),
                conversation_id=conversation_id,
                turn_id=f"turn_{number}",
                tool_call_id=f"call_{number}",
                tool_name=call.tool,
                permission_type="execute" if call.tool == "run_shell" else "write",
                arguments=call.arguments,
                created_at=call.at,
                expires_at=call.at + timedelta(days=7),
                resolution=call.decision,  # type: ignore[arg-type]
                decided_by=call.by if call.decision not in ("expired", "canceled") else "timeout",
                decided_via=call.door if call.decision not in ("expired", "canceled") else None,  # type: ignore[arg-type]
                resolved_at=call.at + timedelta(seconds=call.seconds),
                edited_arguments=call.arguments if call.decision == "edit" else None,
            )
            conversation = ConversationProjection(
                conversation_id=conversation_id,
                turn_status="idle",
                pending_count=0,
                updated_at=record.resolved_at or call.at,
                version=number,
            )
            await store.project_approval_resolved(
                ApprovalResolvedProjection(approval=record, conversation=conversation)
            )
            ids.append(record.request_id)
    finally:
        await store.close()
    return ids
