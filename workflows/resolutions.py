"""Who mirrors an approval's resolution into the read model: its own projection activity, or the
approved tool's activity, which writes it right before the tool runs.

Carrying it with the tool saves an activity and a workflow task per approval, on the path from a
decision to the tool's result. It is carried only when the tool starts at once (no other tool
holds the runner's lock), so the read model never waits on another tool to show a decision; and
whichever of the two sides comes first in the workflow decides, so exactly one writes it.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.approvals import ApprovalBook
    from core.models import ApprovalRecord, ApprovalResolvedProjection, TurnStatus
    from workflows import activity_calls as calls
    from workflows.status import StatusKeeper

# An approved tool's activity writes the approval's resolution; before, an activity of its own did.
# The status in Temporal follows with the tool's result (or soon after); before, with the decision.


class ResolutionMirror:
    def __init__(self, book: ApprovalBook, status: StatusKeeper, is_closed: Callable[[], bool]) -> None:
        self._book, self._status, self._is_closed = book, status, is_closed
        self._written: set[str] = set()  # mirrored by their own activity
        self._carried: set[str] = set()  # handed to the approved tool's activity

    def payload(
        self, record: ApprovalRecord, publish_later: bool = False, tool_tells: bool = False
    ) -> ApprovalResolvedProjection:
        """The resolution and the conversation's status after it (made current in Temporal too, at
        once or, with `publish_later`, by the next workflow task: see StatusKeeper.snapshot)."""
        pending = self._book.pending()
        after: TurnStatus = "awaiting_approval" if pending else ("closed" if self._is_closed() else "running")
        # A stale decision is a second resolution of its request: an event of its own.
        key = f"{record.request_id}:stale" if record.resolution == "stale" else record.request_id
        event = self._status.event(
            "permission.resolved", key, {"request_id": record.request_id, "decision": record.resolution}
        )
        conversation = self._status.snapshot(
            after, pending, [event], publish_later=publish_later, tool_tells=tool_tells
        )
        return ApprovalResolvedProjection(approval=record, conversation=conversation)

    async def mirror(self, record: ApprovalRecord, locally: bool = False) -> None:
        """The request is resolved: write it, unless the approved tool carries it (`locally`: as a
        local activity, where nothing else waits for the workflow's next task)."""
        if record.request_id in self._carried:
            return
        self._written.add(record.request_id)
        if locally:
            await calls.project_resolution_locally(self.payload(record))
        else:
            await calls.project(self.payload(record))

    def carry(self, record: ApprovalRecord | None, tool_waits: bool) -> ApprovalResolvedProjection | None:
        """The resolution for the approved tool's activity to write, or None (written already or
        about to be by its own activity, not an asked call, or the tool would wait for another)."""
        if record is None or record.request_id in self._written or tool_waits:
            return None
        if not workflow.patched(patches.RESOLUTION_WITH_THE_TOOL):
            return None
        self._carried.add(record.request_id)
        later = workflow.patched(patches.STATUS_WITH_THE_TOOL_RESULT)
        return self.payload(record, later, tool_tells=later and workflow.patched(patches.TIMERS_AFTER_THE_TOOL))
