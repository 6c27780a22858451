"""Before a person is asked: a person's standing grant, then the optional pre-screen, may decide.

The order of judgement, strongest first: deny rules, approver rules and M-of-N, allow rules, a
grant, the pre-screen, a person. So only a call the rules would bring to a person is judged here,
never one a deny rule covers (denied already) nor one that needs several approvers; the pre-screen
is asked only where no approver rule holds either, and no longer in a conversation once it denied
`deny_limit` of its calls. One activity (`judge_call`) reads the grants and asks the pre-screen, so
a replay decides the same way. What it decides is applied like a person's decision (door `grant`
or `prescreen`, decided by the grant's maker or the pre-screen's model, the why in the reason) and
written to the read model at once; a pre-screen's `ask` travels with the request to the person.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from temporalio import workflow

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.approvals import ApprovalBook
    from core.approvers import approvers_for, not_by_for, required_for
    from core.conversation_model import ApprovalRecord, DecisionInput, arguments_hash
    from core.grants import JudgeInput, JudgeVerdict
    from core.policy_rules import PolicyRules
    from core.tool_model import ToolDef
    from core.tool_registry import main_argument_text
    from workflows import activity_calls as calls
    from workflows.approved_calls import ResolutionMirror


@dataclass
class AskedCall:
    """A call the rules bring to a person: its request's id, its tool and arguments, and how to open
    its request (only when it is decided here, or holds a pre-screen's verdict)."""

    request_id: str
    spec: ToolDef
    arguments: dict[str, Any]
    open_request: Callable[[], ApprovalRecord]


class BeforeAsking:
    def __init__(
        self,
        conversation_id: str,
        policy: Callable[[], PolicyRules],
        book: ApprovalBook,
        resolutions: ResolutionMirror,
        started_by: str | None,
        prescreen_denials: int = 0,
    ) -> None:
        self._conversation_id, self._policy, self._book = conversation_id, policy, book
        self._resolutions, self._started_by = resolutions, started_by
        self.prescreen_denials = prescreen_denials  # carried across continue-as-new (the breaker)

    async def decide(self, asked: list[AskedCall], last_user_message: str | None) -> list[ApprovalRecord | None]:
        """For each call asked: its request, opened, when it was judged here (resolved, or holding
        the pre-screen's `ask`); else None. Nothing is asked of Temporal when no call qualifies."""
        # A call whose arguments a person supplies waits for that person: no grant or pre-screen decides it.
        chosen = [
            call
            for call in asked
            if required_for(self._policy(), call.spec, call.arguments) <= 1 and not call.spec.supplied_by_approver
        ]
        opened: dict[str, ApprovalRecord] = {}
        if not chosen or not workflow.patched(patches.GRANTS_DECIDE_ASKED_CALLS):
            return [None] * len(asked)
        inputs = [self._input(call, last_user_message) for call in chosen]
        verdicts = await asyncio.gather(*(calls.judge_call(judge) for judge in inputs))
        resolved = []
        for call, verdict in zip(chosen, verdicts, strict=True):
            record = self._apply(call, verdict)
            if record is not None:
                opened[call.request_id] = record
                if record.resolution is not None:
                    resolved.append(record)
        # Shown at once (the tool's own activity may wait for another tool to finish).
        await asyncio.gather(*(self._resolutions.mirror(record) for record in resolved))
        return [opened.get(call.request_id) for call in asked]

    def _apply(self, call: AskedCall, verdict: JudgeVerdict) -> ApprovalRecord | None:
        screened = verdict.prescreen
        if verdict.verdict == "ask":
            if screened is None:
                return None
            record = call.open_request()
            record.prescreen = screened  # the person sees what the pre-screen said
            return record
        record = call.open_request()
        record.prescreen = screened
        if verdict.verdict == "deny" and screened is not None:
            self.prescreen_denials += 1
            by = f"prescreen ({screened.model})"
            self._book.resolve_by(record.request_id, "deny", screened.reason, by, "prescreen", workflow.now())
            return record
        grant = verdict.grant
        if grant is not None:
            by, reason, door = grant.made_by, f"grant {grant.grant_id}: {grant.pattern}", "grant"
            groups = verdict.groups
        elif screened is not None:
            by, reason, door, groups = f"prescreen ({screened.model})", screened.reason, "prescreen", []
        else:
            return record
        decision = DecisionInput(
            request_id=record.request_id,
            decision="allow",
            reason=reason,
            decided_by=by,
            args_hash=arguments_hash(record.arguments),
            door=door,  # type: ignore[arg-type]
            principal=by,
            groups=groups,
        )
        if self._book.refuse(decision) is None:
            self._book.apply(decision, workflow.now())
        return record

    def _input(self, call: AskedCall, last_user_message: str | None) -> JudgeInput:
        policy, spec, arguments = self._policy(), call.spec, call.arguments
        approvers = approvers_for(policy, spec, arguments)
        return JudgeInput(
            conversation_id=self._conversation_id,
            request_id=call.request_id,
            tool_name=spec.name,
            tool=None if spec.source == "builtin" else spec,
            main_argument=main_argument_text(spec, arguments),
            approvers=approvers,
            not_by=not_by_for(policy, spec, arguments, self._started_by),
            arguments=arguments,
            last_user_message=last_user_message,
            prescreen_denials=self.prescreen_denials,
            prescreen_allowed=approvers is None,
        )
