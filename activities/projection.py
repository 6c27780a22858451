"""Projection activities: mirror what the workflow recorded into the read model (SQLite or PostgreSQL)."""

from __future__ import annotations

from temporalio import activity

from config.telemetry import current_traceparent, span
from core.conversation_model import ApprovalRecord
from core.projection_model import (
    ApprovalRequestedProjection,
    ApprovalResolvedProjection,
    CompactionProjection,
    ConversationProjection,
)
from storage.store import ProjectionStore
from workflows.activity_calls import (
    PROJECT_APPROVAL_CHANGED,
    PROJECT_APPROVAL_REQUESTED,
    PROJECT_APPROVAL_RESOLVED,
    PROJECT_COMPACTION,
    PROJECT_CONVERSATION,
)


class ProjectionActivities:
    def __init__(self, store: ProjectionStore) -> None:
        self._store = store

    @activity.defn(name=PROJECT_CONVERSATION)
    async def project_conversation(self, payload: ConversationProjection) -> None:
        await self._store.project_conversation(payload)

    @activity.defn(name=PROJECT_APPROVAL_REQUESTED)
    async def project_approval_requested(self, payload: ApprovalRequestedProjection) -> None:
        record = payload.approval
        attributes = {"approval.request_id": record.request_id, "approval.tool": record.tool_name}
        with span("approval.requested", attributes):
            await self._store.project_approval_requested(payload)
            traceparent = current_traceparent()
            if traceparent is not None:
                await self._store.keep_trace(record.request_id, traceparent)

    @activity.defn(name=PROJECT_APPROVAL_RESOLVED)
    async def project_approval_resolved(self, payload: ApprovalResolvedProjection) -> None:
        await self._store.project_approval_resolved(payload)

    @activity.defn(name=PROJECT_APPROVAL_CHANGED)
    async def project_approval_changed(self, record: ApprovalRecord) -> None:
        await self._store.project_approval_changed(record)

    @activity.defn(name=PROJECT_COMPACTION)
    async def project_compaction(self, payload: CompactionProjection) -> None:
        await self._store.project_compaction(payload)
