"""Runs the tool calls of one assistant message: validate, apply the policy, ask, execute.

Allowed calls run at once and their results are recorded at once; every asked call of the
message gets its own approval request, all open together, each waiting on its own decision.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from workflows import activity_calls as calls
    from workflows.approvals import outcome_message
    from workflows.models import (
        ApprovalRecord,
        ApprovalRequestedProjection,
        ApprovalResolvedProjection,
        ChatMessage,
        ToolCall,
        ToolRequest,
        ToolResult,
        TurnStatus,
        request_id_for,
    )
    from workflows.policy import SHELL_NORMALISATION_PATCH, evaluate, network_allowed
    from workflows.tool_specs import TOOL_SPECS, InvalidToolCall, ToolSpec, main_argument_text, validate_call

if TYPE_CHECKING:
    from workflows.conversation import ConversationWorkflow


@dataclass
class _Plan:
    """One call of the message: what the checks and the policy made of it."""

    call: ToolCall
    spec: ToolSpec | None
    arguments: dict[str, Any]
    verdict: str
    error: str | None = None
    record: ApprovalRecord | None = None


class ToolRunner:
    def __init__(self, conversation: ConversationWorkflow) -> None:
        self._conv = conversation
        self.used_ids: set[str] = set(conversation.start_input.used_tool_call_ids)
        # Approved tools run one at a time, in the order their decisions arrive.
        self._lock = asyncio.Lock()

    @staticmethod
    def schemas() -> list[dict[str, Any]]:
        return [spec.openai_schema() for spec in TOOL_SPECS.values()]

    def normalise_ids(self, reply: ChatMessage) -> ChatMessage:
        """Make every tool call id unique in the conversation, so request ids never collide."""
        calls_out = []
        for call in reply.tool_calls:
            base = call.id.strip() or "call"
            unique, n = base, 1
            while unique in self.used_ids:
                n += 1
                unique = f"{base}_{n}"
            self.used_ids.add(unique)
            calls_out.append(call.model_copy(update={"id": unique}))
        return reply.model_copy(update={"tool_calls": calls_out})

    async def run_all(self, turn_id: str, tool_calls: list[ToolCall]) -> None:
        """Calls run in the model's order. Those before the first asked call run at once; then every
        asked call of the message goes to a person together, and the rest follow as decisions land."""
        plans = [self._plan(call) for call in tool_calls]
        first_ask = next((i for i, plan in enumerate(plans) if plan.verdict == "ask"), len(plans))
        for plan in plans[:first_ask]:
            await self._settle(turn_id, plan)
        asked = [plan for plan in plans[first_ask:] if plan.verdict == "ask"]
        for plan in asked:
            plan.record = self._open_request(turn_id, plan)
        watchers = [asyncio.ensure_future(self._watch(plan.record)) for plan in asked if plan.record]
        for plan in plans[first_ask:]:
            await self._settle(turn_id, plan)
        await asyncio.gather(*watchers)

    def _plan(self, call: ToolCall) -> _Plan:
        try:
            spec, arguments = validate_call(call.name, call.arguments)
        except InvalidToolCall as err:
            return _Plan(call, None, {}, "invalid", error=f"Error: {err}")
        verdict = evaluate(
            self._conv.start_input.policy,
            spec.name,
            main_argument_text(spec, arguments),
            always_allow=frozenset(self._conv.book.always_allow),
            auto_approve=self._conv.auto_approve,
            normalise_shell=workflow.patched(SHELL_NORMALISATION_PATCH),
        )
        return _Plan(call, spec, arguments, verdict)

    async def _settle(self, turn_id: str, plan: _Plan) -> None:
        """Give one call its one result: run it, or tell the model why it did not run."""
        conv = self._conv
        if plan.spec is None:
            conv.record_tool_message(plan.call, plan.error or "Error: invalid call")
            return
        if plan.verdict == "deny":
            conv.record_tool_message(
                plan.call, f"Not run: a deny rule of the policy forbids this {plan.spec.name} call."
            )
            return
        if plan.record is not None:
            record = plan.record
            await workflow.wait_condition(lambda: record.resolution is not None)
            if record.resolution not in ("allow", "always_allow"):
                conv.record_tool_message(plan.call, outcome_message(record))
                return
        if conv.closed:
            conv.record_tool_message(plan.call, "Not run: the conversation was closed first.")
            return
        await self._execute(turn_id, plan.call, plan.spec, plan.arguments)

    def _open_request(self, turn_id: str, plan: _Plan) -> ApprovalRecord:
        assert plan.spec is not None
        conv = self._conv
        now = workflow.now()
        record = ApprovalRecord(
            request_id=request_id_for(conv.conversation_id, plan.call.id),
            conversation_id=conv.conversation_id,
            turn_id=turn_id,
            tool_call_id=plan.call.id,
            tool_name=plan.spec.name,
            permission_type=plan.spec.permission_type,
            arguments=plan.arguments,
            created_at=now,
            expires_at=now + timedelta(seconds=conv.start_input.approval_timeout_seconds),
        )
        conv.book.open(record)
        return record

    async def _watch(self, record: ApprovalRecord) -> None:
        """Mirror one request into the projection, expire it on time, mirror its resolution."""
        conv, book, status = self._conv, self._conv.book, self._conv.status
        events = [
            status.event("permission.request", record.request_id, {"request_id": record.request_id}),
            status.event("turn.awaiting_approval", record.request_id, {"pending": book.pending_count()}),
        ]
        await calls.project(
            ApprovalRequestedProjection(
                approval=record,
                kv_snapshot=conv.kv,
                conversation=status.snapshot("awaiting_approval", book.pending(), events),
            )
        )
        try:
            await workflow.wait_condition(
                lambda: record.resolution is not None,
                timeout=max(record.expires_at - workflow.now(), timedelta(milliseconds=1)),
                timeout_summary=f"approval {record.request_id} expires",
            )
        except TimeoutError:
            book.expire(record.request_id, workflow.now(), conv.start_input.approval_timeout_seconds)
        pending = book.pending()
        after: TurnStatus = "awaiting_approval" if pending else ("closed" if conv.closed else "running")
        resolved_event = status.event(
            "permission.resolved", record.request_id, {"request_id": record.request_id, "decision": record.resolution}
        )
        await calls.project(
            ApprovalResolvedProjection(approval=record, conversation=status.snapshot(after, pending, [resolved_event]))
        )

    async def _execute(self, turn_id: str, call: ToolCall, spec: ToolSpec, arguments: dict[str, Any]) -> None:
        conv = self._conv
        request = ToolRequest(
            conversation_id=conv.conversation_id,
            turn_id=turn_id,
            tool_call_id=call.id,
            request_id=request_id_for(conv.conversation_id, call.id),
            tool_name=spec.name,
            arguments=arguments,
            kv=conv.kv,
            network=network_allowed(conv.start_input.policy, spec.name, main_argument_text(spec, arguments)),
        )
        summary = f"{spec.name}: {main_argument_text(spec, arguments)[:80]}"
        async with self._lock:
            try:
                result = await calls.execute_tool(request, summary)
            except ActivityError as err:
                cause = err.__cause__ or err
                result = ToolResult(content=f"Error: the tool failed: {cause}", is_error=True)
        if result.kv is not None:
            conv.replace_kv(result.kv)
        conv.record_tool_message(call, result.content)
