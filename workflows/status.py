"""Turn status, as Temporal shows it (search attributes, current details) and as the projection shows it."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from core.conversation_model import ApprovalRecord, TurnStatus
    from core.projection_model import ConversationProjection, ProjectionEvent
    from workflows import activity_calls as calls

TURN_STATUS_KEY = SearchAttributeKey.for_keyword("TurnStatus")
PENDING_APPROVALS_KEY = SearchAttributeKey.for_int("PendingApprovals")
# The most a decision's status may wait to be published when its tool runs at once (see
# StatusKeeper.snapshot); a tool that ends sooner publishes it with its result.
STATUS_CATCH_UP = timedelta(seconds=2)


class StatusKeeper:
    def __init__(self, conversation_id: str, parent_id: str | None = None) -> None:
        self._conversation_id = conversation_id
        self._parent_id = parent_id  # set for a subagent: the projection shows it under its parent
        self.turn_status: TurnStatus = "idle"
        self._pending = -1
        self._seq = 0
        self._held: tuple[TurnStatus, int] | None = None  # not yet published (see snapshot)
        self._publishing: asyncio.Future[None] | None = None

    def snapshot(
        self,
        status: TurnStatus,
        pending: list[ApprovalRecord],
        events: list[ProjectionEvent],
        *,
        publish_later: bool = False,
        tool_tells: bool = False,
    ) -> ConversationProjection:
        """Make status current in Temporal and return it for the projection write.

        `publish_later`: the search attributes wait for the next workflow task (`catch_up`), at
        most STATUS_CATCH_UP. A decision whose tool starts in the same task uses it: an update of
        search attributes in that task costs the server a visibility write before it hands the
        tool to the worker, and the read model shows the decision at once anyway. A timer keeps
        the STATUS_CATCH_UP, or with `tool_tells` the tool's activity does (`tool_tells_after`):
        then the decision's task starts no timer either."""
        if (status, len(pending)) != (self.turn_status, self._pending) or self._held is not None:
            if publish_later:
                self._hold(status, len(pending), timer=not tool_tells)
            else:
                self._publish(status, len(pending))
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

    def catch_up(self) -> None:
        """Publish a status held back by `snapshot(publish_later=True)`, if one is."""
        if self._held is not None:
            self._publish(*self._held)

    def tool_tells_after(self) -> float | None:
        """Seconds after which a tool still running signals SIGNAL_TOOL_STILL_RUNNING (which calls
        `catch_up`), when a status is held with no timer to publish it; None when none is."""
        if self._held is None or (self._publishing is not None and not self._publishing.done()):
            return None
        return STATUS_CATCH_UP.total_seconds()

    def _publish(self, status: TurnStatus, pending: int) -> None:
        self._held = None
        workflow.upsert_search_attributes([TURN_STATUS_KEY.value_set(status), PENDING_APPROVALS_KEY.value_set(pending)])

    def _hold(self, status: TurnStatus, pending: int, timer: bool) -> None:
        waiting = self._held is not None
        self._held = (status, pending)
        if timer and not waiting:
            self._publishing = asyncio.ensure_future(self._catch_up_in_time())

    async def _catch_up_in_time(self) -> None:
        try:
            await workflow.wait_condition(
                lambda: self._held is None, timeout=STATUS_CATCH_UP, timeout_summary="publish the turn's status"
            )
        except TimeoutError:
            self.catch_up()

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
