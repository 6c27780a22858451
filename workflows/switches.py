"""Who closed the conversation and who last switched its auto-approve, and through which door.

A switch is evidence like a decision: the workflow keeps the switcher in its state (across
continue-as-new) and the conversation's projection events name them, so `show` and the audit can.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from temporalio import workflow

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.conversation_model import ApprovalRecord, AutoApproveInput, CloseInput, ConversationInput, EndDoor
    from workflows import activity_calls as calls
    from workflows.status import StatusKeeper

EVENT_AUTO_APPROVE = "conversation.auto_approve"


class Switches:
    def __init__(self, start: ConversationInput) -> None:
        self.closed_by: str | None = None
        self.closed_door: EndDoor | None = None
        self.closed_at: datetime | None = None
        self.auto_approve_by = start.auto_approve_by
        self.auto_approve_door = start.auto_approve_door
        self._written = 0

    def closed(self, close: CloseInput | None, at: datetime) -> None:
        """The first close names the closer (a bare close, no payload, names nobody) and its time:
        the signal's, not the end of whatever was running when it came."""
        self.closed_at = at
        if close is not None:
            self.closed_by, self.closed_door = close.by, close.door

    def finished(self, parent_id: str, at: datetime) -> None:
        """A subagent that answered its task ends for its parent: no one closed it."""
        self.closed_by, self.closed_door, self.closed_at = parent_id, "subagent", at

    def closed_payload(self) -> dict[str, Any]:
        at = None if self.closed_at is None else self.closed_at.isoformat()
        return {"by": self.closed_by, "door": self.closed_door, "at": at}

    async def auto_approve_switched(
        self, switch: AutoApproveInput, status: StatusKeeper, pending: list[ApprovalRecord]
    ) -> None:
        self.auto_approve_by, self.auto_approve_door = switch.by, switch.door
        if not workflow.patched(patches.SWITCH_AUDIT):
            return
        self._written += 1
        key = f"auto_approve_{workflow.info().run_id}_{self._written}"
        payload = {"enabled": switch.enabled, "by": switch.by, "door": switch.door}
        event = status.event(EVENT_AUTO_APPROVE, key, payload)
        await calls.project(status.snapshot(status.turn_status, pending, [event]))

    def carried(self) -> dict[str, Any]:
        return {"auto_approve_by": self.auto_approve_by, "auto_approve_door": self.auto_approve_door}

    def state(self) -> dict[str, Any]:
        return {"closed_by": self.closed_by, "closed_door": self.closed_door, **self.carried()}
