"""What the workflow wrote about its approvals, read back from its Temporal history for a rebuild.

Every write of an approval row is an activity whose input is in history: the pending request
(`project_approval_requested`), a changed deadline or approvers (`project_approval_changed`), a
resolution (`project_approval_resolved`), and an approved call's own resolution, which the tool
activity writes before it runs (`ToolRequest.resolved`). Replayed in history's order through the
projection's own idempotent writes, they restore each decided row as it was: who decided, through
which door, with which groups and hash, and for an edit both the proposed and the edited arguments.
"""

from __future__ import annotations

from temporalio.client import Client, WorkflowExecution

from core.conversation_model import ApprovalRecord
from core.projection_model import ApprovalRequestedProjection, ApprovalResolvedProjection
from core.tool_run_model import ToolRequest
from storage.store import ProjectionStore
from workflows.activity_calls import (
    PROJECT_APPROVAL_CHANGED,
    PROJECT_APPROVAL_REQUESTED,
    PROJECT_APPROVAL_RESOLVED,
    TOOL_ACTIVITIES,
)

Recorded = ApprovalRequestedProjection | ApprovalRecord | ApprovalResolvedProjection
_INPUTS: dict[str, type] = {
    PROJECT_APPROVAL_REQUESTED: ApprovalRequestedProjection,
    PROJECT_APPROVAL_CHANGED: ApprovalRecord,
    PROJECT_APPROVAL_RESOLVED: ApprovalResolvedProjection,
    **{name: ToolRequest for name in TOOL_ACTIVITIES.values()},
}


async def recorded_approvals(client: Client, execution: WorkflowExecution) -> list[Recorded]:
    """The approval writes one run scheduled, in its history's order."""
    handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
    found: list[Recorded] = []
    async for event in handle.fetch_history_events():
        if not event.HasField("activity_task_scheduled_event_attributes"):
            continue
        scheduled = event.activity_task_scheduled_event_attributes
        kind = _INPUTS.get(scheduled.activity_type.name)
        if kind is None or not scheduled.input.payloads:
            continue
        [value] = await client.data_converter.decode(scheduled.input.payloads[:1], [kind])
        if isinstance(value, ToolRequest):
            if value.resolved is not None:
                found.append(value.resolved)
        else:
            found.append(value)
    return found


async def replay_approvals(store: ProjectionStore, recorded: list[Recorded]) -> set[str]:
    """Write them again; the ids of the request rows that were missing."""
    added: set[str] = set()
    for write in recorded:
        if isinstance(write, ApprovalRequestedProjection):
            if await store.project_approval_requested(write):
                added.add(write.approval.request_id)
        elif isinstance(write, ApprovalResolvedProjection):
            await store.project_approval_resolved(write)
        else:
            await store.project_approval_changed(write)
    return added
