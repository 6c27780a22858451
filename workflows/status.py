"""Turn status, as Temporal shows it (search attributes, current details) and as the projection shows it."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from core.models import ApprovalRecord, ConversationProjection, ProjectionEvent, TurnStatus
    from workflows import activity_calls as calls

TURN_STATUS_KEY = SearchAttributeKey.for_keyword("TurnStatus")
PENDING_APPROVALS_KEY = SearchAttributeKey.for_int("PendingApprovals")


class StatusKeeper:
    def __init__(self, conversation_id: str, parent_id: str | None = None) -> None:
        self._conversation_id = conversation_id
        self._parent_id = parent_id  # set for a subagent: the projection shows it under its parent
        self.turn_status: TurnStatus = "idle"
        self._pending = -1
        self._seq = 0

    def snapshot(
        self, status: TurnStatus, pending: list[ApprovalRecord], events: list[ProjectionEvent]
    ) -> ConversationProjection:
        """Make status current in Temporal and return it for the projection write."""
        if (status, len(pending)) != (self.turn_status, self._pending):
            workflow.upsert_search_attributes(
                [TURN_STATUS_KEY.value_set(status), PENDING_APPROVALS_KEY.value_set(len(pending))]
            )
        self.turn_status, self._pending = status, len(pending)
        workflow.set_current_details(_details(status, pending))
        self._seq += 1
        now = workflow.now()
        return ConversationProjection(
            conversation_id=self._conversation_id,
            turn_status=status,
            pending_count=len(pending),
            updated_at=now,
            version=int(now.timestamp() * 1000) * 1000 + self._seq % 1000,
            events=events,
            parent_id=self._parent_id,
        )

    def event(self, event_type: str, key: str, payload: dict[str, Any] | None = None) -> ProjectionEvent:
        return ProjectionEvent(
            event_key=f"{self._conversation_id}:{key}:{event_type}",
            event_type=event_type,
            conversation_id=self._conversation_id,
            payload=payload or {},
        )

    async def set(
        self,
        status: TurnStatus,
        pending: list[ApprovalRecord],
        *,
        event: str,
        key: str,
        payload: dict[str, Any] | None = None,
    ) -> None:
        await calls.project(self.snapshot(status, pending, [self.event(event, key, payload)]))


def _details(status: TurnStatus, pending: list[ApprovalRecord]) -> str:
    if not pending:
        return f"Turn status: {status}"
    lines = [f"Waiting for a person to decide {len(pending)} tool call(s):"]
    lines += [f"- {rec.tool_name} {rec.arguments} (request {rec.request_id})" for rec in pending]
    return "\n".join(lines)
