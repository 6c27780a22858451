"""Shadow rules: a new policy judged beside the live one, its differences recorded, never acted on.

`[shadow] policy = "NEW.toml"` in POLICY_FILE travels in the conversation's input. Every call of
a model's message is judged under both (the same checks: always-allow, auto-approve, approver
rules); where the verdicts differ, one projection event per call (`policy.shadow_differs`: the
tool, its main argument, the live verdict and the shadow's) says so, so a team sees what NEW would
change on real traffic (`starter.py rules shadow`) before adopting it. The live verdict alone
decides what happens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import workflow

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.conversation_model import ApprovalRecord
    from core.policy_rules import PolicyRules
    from workflows import activity_calls as calls
    from workflows.status import StatusKeeper

EVENT_SHADOW_DIFFERS = "policy.shadow_differs"
_SHOWN = 200  # characters of the main argument kept in the event


class ShadowRules:
    def __init__(
        self, shadow: PolicyRules | None, status: StatusKeeper, pending: Callable[[], list[ApprovalRecord]]
    ) -> None:
        self.rules = shadow
        self._status, self._pending = status, pending

    async def record(self, turn_id: str, differences: list[dict[str, Any]]) -> None:
        """One event per call whose verdicts differ ({call_id, tool_name, main_argument, live, shadow})."""
        if not differences or self.rules is None or not workflow.patched(patches.SHADOW_RULES):
            return
        status = self._status
        events = [
            status.event(
                EVENT_SHADOW_DIFFERS,
                f"{turn_id}:{difference['call_id']}",
                {**difference, "main_argument": str(difference["main_argument"])[:_SHOWN], "turn_id": turn_id},
            )
            for difference in differences
        ]
        await calls.project(status.snapshot(status.turn_status, self._pending(), events))
