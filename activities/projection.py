"""Projection activities: mirror what the workflow recorded into the SQLite read model."""

from __future__ import annotations

from temporalio import activity

from projection.db import Writer
from projection.writes import (
    write_approval_requested,
    write_approval_resolved,
    write_compaction,
    write_conversation,
)
from workflows.activity_calls import (
    PROJECT_APPROVAL_REQUESTED,
    PROJECT_APPROVAL_RESOLVED,
    PROJECT_COMPACTION,
    PROJECT_CONVERSATION,
)
from workflows.models import (
    ApprovalRequestedProjection,
    ApprovalResolvedProjection,
    CompactionProjection,
    ConversationProjection,
)


class ProjectionActivities:
    def __init__(self, writer: Writer) -> None:
        self._writer = writer

    @activity.defn(name=PROJECT_CONVERSATION)
    def project_conversation(self, payload: ConversationProjection) -> None:
        with self._writer.transaction() as conn:
            write_conversation(conn, payload)

    @activity.defn(name=PROJECT_APPROVAL_REQUESTED)
    def project_approval_requested(self, payload: ApprovalRequestedProjection) -> None:
        with self._writer.transaction() as conn:
            write_approval_requested(conn, payload)

    @activity.defn(name=PROJECT_APPROVAL_RESOLVED)
    def project_approval_resolved(self, payload: ApprovalResolvedProjection) -> None:
        with self._writer.transaction() as conn:
            write_approval_resolved(conn, payload)

    @activity.defn(name=PROJECT_COMPACTION)
    def project_compaction(self, payload: CompactionProjection) -> None:
        with self._writer.transaction() as conn:
            write_compaction(conn, payload)
