"""From a decision to its tool's result: the one place that says who writes a request's
resolution, when the turn's status is published, and which timer ends with the tool.

A resolution is written once, by one party. Either the workflow writes it with a projection
activity of its own (`ResolutionMirror.mirror`), or, when an approved tool can start at once,
it is handed to the tool's activity (`ToolRequest.resolved`), which writes it beside the
tool's launch (`write_handed_resolution`, called by activities/tools.py). Whichever side comes
first in the workflow decides, so exactly one writes it. Handing it over saves an activity and a workflow task per
approval, on the path a person waits on. An `ApprovalRequest` decided by a door's `decide` update
hands it to that door instead (`hand_to_door`, written by `write_door_resolution`).

The turn's status in Temporal's list follows the same path: a decision whose tool starts in the
same workflow task holds its status back (StatusKeeper.snapshot) and publishes it with the
tool's result, or when the tool says it still runs, or when the call goes round by its host
queue and may wait there. The expiry timer a decision ended is cancelled with the result too,
off the deciding task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.approvals import ApprovalBook
    from core.conversation_model import APPROVED_RESOLUTIONS, ApprovalRecord, DecisionResult, TurnStatus
    from core.projection_model import ApprovalResolvedProjection
    from core.tool_run_model import ToolRequest, ToolResult
    from workflows import activity_calls as calls
    from workflows.host_moves import HostKeeper
    from workflows.status import StatusKeeper
    from workflows.tool_dispatch import run_pinned


class ResolutionMirror:
    """Writes resolutions into the read model, unless the approved tool's activity was handed it."""

    def __init__(self, book: ApprovalBook, status: StatusKeeper, is_closed: Callable[[], bool]) -> None:
        self._book, self._status, self._is_closed = book, status, is_closed
        self._written: set[str] = set()  # mirrored by their own activity
        self._handed_to_tool: set[str] = set()
        self._handed_to_door: set[str] = set()

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
        """The request is resolved: write it, unless it was handed to the approved tool (`locally`: as a
        local activity, where nothing else waits for the workflow's next task)."""
        if self.handed(record.request_id):
            return
        self._written.add(record.request_id)
        if locally:
            await calls.project_resolution_locally(self.payload(record))
        else:
            await calls.project(self.payload(record))

    async def mirror_again(self, record: ApprovalRecord) -> None:
        """A second resolution of a request already written (an approved call found stale)."""
        await calls.project(self.payload(record))

    def hand_to_tool(self, record: ApprovalRecord | None, tool_waits: bool) -> ApprovalResolvedProjection | None:
        """The resolution for the approved tool's activity to write, or None (written already or
        about to be by its own activity, not an asked call, or the tool would wait for another)."""
        if record is None or record.request_id in self._written or tool_waits:
            return None
        if not workflow.patched(patches.RESOLUTION_WITH_THE_TOOL):
            return None
        self._handed_to_tool.add(record.request_id)
        later = workflow.patched(patches.STATUS_WITH_THE_TOOL_RESULT)
        return self.payload(record, later, tool_tells=later and workflow.patched(patches.TIMERS_AFTER_THE_TOOL))

    def hand_to_door(self, record: ApprovalRecord) -> ApprovalResolvedProjection | None:
        """The resolution for the door whose `decide` update decided it to write (an ApprovalRequest's:
        see `write_door_resolution`), or None when it is written or handed already."""
        rid = record.request_id
        if rid in self._written or self.handed(rid):
            return None
        self._handed_to_door.add(rid)
        return self.payload(record)

    def handed(self, request_id: str) -> bool:
        """Whether the approved tool's activity or the deciding door writes this resolution."""
        return request_id in self._handed_to_tool or request_id in self._handed_to_door


async def canceled_with_conversation(record: ApprovalRecord, status: StatusKeeper) -> None:
    """A waiting request of a conversation cancelled from outside (a subagent whose parent ended)."""
    resolved = status.event("permission.resolved", record.request_id, {"request_id": record.request_id})
    await calls.project(
        ApprovalResolvedProjection(approval=record, conversation=status.snapshot("closed", [], [resolved]))
    )


class ResolutionStore(Protocol):
    async def project_approval_resolved(self, payload: ApprovalResolvedProjection) -> None: ...


async def write_handed_resolution(request: ToolRequest, store: ResolutionStore) -> None:
    """The tool activity's side: write the resolution its workflow handed it (`hand_to_tool`)."""
    if request.resolved is not None:
        await store.project_approval_resolved(request.resolved)


async def write_door_resolution(result: DecisionResult, store: ResolutionStore) -> bool:
    """The door's side of `hand_to_door` (doors/decision_delivery.py), and the failure watch's for a
    door that died before it wrote (workflows/request_healing.py): write what the update's result
    carries. False when it carries none (the workflow writes its own)."""
    if result.resolved is None:
        return False
    await store.project_approval_resolved(ApprovalResolvedProjection.model_validate(result.resolved))
    return True


class ApprovedCalls:
    """Runs a call on its host and ends what its decision left open: the resolution (when it was
    handed to the tool), the held status, and the decision's timer."""

    def __init__(self, resolutions: ResolutionMirror, status: StatusKeeper, hosts: HostKeeper) -> None:
        self.resolutions, self._status, self._hosts = resolutions, status, hosts
        # The timers decisions ended, cancelled with the tool's result (RequestTimers' `keep`).
        self._decided_timers: list[asyncio.Future[None]] = []

    async def run(
        self, request: ToolRequest, record: ApprovalRecord | None, source: str, summary: str, tool_waits: bool
    ) -> ToolResult:
        """Run one call (`record`: the request that approved it, if it was asked) and return its
        result; `tool_waits`: another tool holds the conversation's tools, so this one waits."""
        resolved = self.resolutions.hand_to_tool(record, tool_waits)
        catch_up = self._status.tool_tells_after() if resolved is not None else None
        request = request.model_copy(update={"resolved": resolved, "status_catch_up_seconds": catch_up})
        held_status = catch_up is not None

        async def round_by_the_host_queue(sent: ToolRequest) -> ToolRequest:
            """The call may now wait for its host a while: publish what it was handed."""
            if held_status:
                self._status.catch_up()
            if sent.resolved is not None:
                await calls.project(sent.resolved)
            return sent.model_copy(update={"resolved": None})

        try:
            result = await run_pinned(request, source, summary, self._hosts, round_by_the_host_queue)
        except ActivityError as err:
            cause = err.__cause__ or err
            result = ToolResult(content=f"Error: the tool failed: {cause}", is_error=True)
            if resolved is not None:  # its activity may have failed before writing it
                await calls.project(resolved)
        self._status.catch_up()
        self.cancel_decided_timers()
        return result

    def tool_still_running(self) -> None:
        """The tool's activity says it runs past STATUS_CATCH_UP: publish the held status now."""
        self._status.catch_up()

    def keep_timer(self, record: ApprovalRecord, timer: asyncio.Future[None]) -> None:
        """The timer a decision ended: an approved call's is cancelled with its tool's result, off
        the deciding workflow task (where its command would delay the tool); any other's at once."""
        if record.resolution in APPROVED_RESOLUTIONS:
            self._decided_timers.append(timer)
        else:
            timer.cancel()

    def cancel_decided_timers(self) -> None:
        for timer in self._decided_timers:
            timer.cancel()
        self._decided_timers = []
