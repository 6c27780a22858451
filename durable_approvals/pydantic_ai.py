"""Pydantic AI agents on Temporal ask people through `ApprovalRequest`.

A tool registered with `requires_approval=True` ends the agent's run with `DeferredToolRequests`
(the agent's output type must allow it). `approval_results` opens one request per waiting call, all
at once, and turns the decisions into `DeferredToolResults`: an approval or an edit becomes
`ToolApproved` (an edit's arguments as `override_args`), a denial, an expiry or a cancel becomes
`ToolDenied` whose message tells the model why. `run_with_approvals` runs the agent, asks, and runs
it again with the results until the run ends with an answer. Both run in workflow code; the
requests are child workflows of the calling workflow, so they survive its worker.

Needs `pydantic-ai-slim` (the `pydantic-ai` extra) besides temporalio and pydantic.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

# Pydantic AI prices every reply from genai_prices' table, a module of 11,000 lines imported on
# first use: in a workflow task that import can outlast the SDK's 2-second deadlock check on a
# busy host (the task fails and the run stalls), so it is imported here, before any task runs.
import genai_prices.data  # noqa: F401
from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.agent import AbstractAgent, AgentRunResult
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_approvals.types import DEFAULT_TASK_QUEUE, ApprovalResult
    from durable_approvals.workflow import request_approval

__all__ = ["approval_key", "approval_results", "decision_result", "run_with_approvals"]

UNANSWERED = {
    "deny": "a person denied this call",
    "expired": "nobody decided on this call in time; it did not run",
    "canceled": "the approval request was canceled; the call did not run",
}


def approval_key(call: ToolCallPart, messages: Sequence[ModelMessage] = ()) -> str:
    """The request's key within the calling workflow: the call's id, after the agent run and the
    number of the model response that made it (models reuse ids such as `call_1` from one response
    to the next, and a workflow may run its agent many times). A replayed run has the same
    messages and, on Temporal, the same run ids, so it finds the same request."""
    found = response_of(messages, call)
    if found is None:
        return f"pydantic-ai:{call.tool_call_id}"
    number, response = found
    return f"pydantic-ai:{response.run_id or '-'}:{number}:{call.tool_call_id}"


def decision_result(result: ApprovalResult) -> ToolApproved | ToolDenied:
    """One decision as Pydantic AI takes it: what runs, or what the model is told instead."""
    if result.decision == "edit":
        return ToolApproved(override_args=dict(result.arguments))
    if result.decision == "allow":
        return ToolApproved()
    return ToolDenied(result.reason or UNANSWERED[result.decision])


def response_of(messages: Sequence[ModelMessage], call: ToolCallPart) -> tuple[int, ModelResponse] | None:
    """The model response that made the call, and its number among the responses in `messages` (from 1)."""
    responses = [message for message in messages if isinstance(message, ModelResponse)]
    for number, response in reversed(list(enumerate(responses, start=1))):
        if any(isinstance(part, ToolCallPart) and part.tool_call_id == call.tool_call_id for part in response.parts):
            return number, response
    return None


def stated_reason(messages: Sequence[ModelMessage], call: ToolCallPart) -> str | None:
    """The text the model wrote beside the call, if any: its own reason, shown on the card."""
    found = response_of(messages, call)
    if found is None:
        return None
    text = " ".join(part.content.strip() for part in found[1].parts if isinstance(part, TextPart)).strip()
    return text or None


async def approval_results(
    requests: DeferredToolRequests,
    *,
    agent: str | None = None,
    messages: Sequence[ModelMessage] = (),
    timeout_seconds: float | None = None,
    rules: dict[str, Any] | None = None,
    notify: list[str] | None = None,
    task_queue: str = DEFAULT_TASK_QUEUE,
) -> DeferredToolResults:
    """Ask for every call in `requests.approvals` in parallel and wait for all the decisions.
    `messages` (the run's messages, `result.all_messages()`) number the requests' keys and lend
    each card the model's stated reason."""
    calls = list(requests.approvals)
    decisions = await asyncio.gather(
        *(
            request_approval(
                call.tool_name,
                call.args_as_dict(),
                key=approval_key(call, messages),
                context=stated_reason(messages, call),
                agent=agent,
                timeout_seconds=timeout_seconds,
                rules=rules,
                notify=notify,
                task_queue=task_queue,
            )
            for call in calls
        )
    )
    return DeferredToolResults(
        approvals={call.tool_call_id: decision_result(result) for call, result in zip(calls, decisions, strict=True)},
        answered_by={
            call.tool_call_id: result.decided_by
            for call, result in zip(calls, decisions, strict=True)
            if result.decided_by
        },
    )


async def run_with_approvals(
    agent: AbstractAgent[Any, Any],
    user_prompt: str | None = None,
    *,
    timeout_seconds: float | None = None,
    rules: dict[str, Any] | None = None,
    notify: list[str] | None = None,
    task_queue: str = DEFAULT_TASK_QUEUE,
    **run_options: Any,
) -> AgentRunResult[Any]:
    """`agent.run(user_prompt, **run_options)`, asking a person whenever the run stops for
    approvals and running the agent again with the decisions. Returns the last run's result: an
    answer, or `DeferredToolRequests` holding only calls that wait for something other than an
    approval (external calls are the caller's to answer)."""
    history = run_options.pop("message_history", None)  # the next runs continue from the last one's
    result = await agent.run(user_prompt, message_history=history, **run_options)
    while isinstance(result.output, DeferredToolRequests) and result.output.approvals:
        messages = result.all_messages()
        decided = await approval_results(
            result.output,
            agent=agent.name,
            messages=messages,
            timeout_seconds=timeout_seconds,
            rules=rules,
            notify=notify,
            task_queue=task_queue,
        )
        result = await agent.run(message_history=messages, deferred_tool_results=decided, **run_options)
    return result
