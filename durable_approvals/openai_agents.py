"""Ask a person before an OpenAI Agents SDK agent's tool runs, inside a Temporal workflow.

A function tool made with `needs_approval=True` pauses the agent's run: the run ends with
`interruptions` instead of a final output. `run_with_approvals` sends each interruption to the
service as its own `ApprovalRequest` (all of them at once), applies every decision to the run's
state (approve, or reject with a message the model reads as the tool's output) and resumes the
run, until it ends without one. The SDK cannot run a call with arguments other than the model's,
so its requests are asked as not editable: every door refuses an edit before anything is
recorded (a service older than that records it, and the model reads `EDIT_REFUSED`).

Use it in a workflow run by a worker with `temporalio.openai_agents.OpenAIAgentsPlugin`.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agents import Agent, ItemHelpers, MessageOutputItem, Runner, RunResult, RunState, ToolApprovalItem

    from durable_approvals.types import DEFAULT_TASK_QUEUE, ApprovalResult
    from durable_approvals.workflow import request_approval

EDIT_REFUSED = "edited arguments cannot be applied to an OpenAI Agents SDK call; approve or deny it"
KEY_PREFIX = "openai-agents"


@dataclass
class ApprovedRun:
    """The agent's finished run, and every decision it waited for, in the order they were asked."""

    result: RunResult
    decisions: list[ApprovalResult] = field(default_factory=list)

    @property
    def final_output(self) -> Any:
        return self.result.final_output


@dataclass(frozen=True)
class ApprovalOptions:
    """How each request is asked: the service's task queue, and the request fields the caller sets."""

    task_queue: str = DEFAULT_TASK_QUEUE
    agent: str | None = None
    timeout_seconds: float | None = None
    rules: dict[str, Any] | None = None
    notify: list[str] | None = None
    # Before each call id in the request's key: give each run of one workflow its own when the
    # model reuses call ids across runs (as scripted models do).
    key_prefix: str = KEY_PREFIX


async def run_with_approvals(
    agent: Agent[Any],
    input: str | list[Any],
    *,
    options: ApprovalOptions | None = None,
    **run_options: Any,
) -> ApprovedRun:
    """`Runner.run(agent, input, **run_options)`, with every interruption decided by a person.
    The requester's agent name is the agent's own unless `options.agent` names another."""
    options = options or ApprovalOptions()
    if options.agent is None:
        options = replace(options, agent=agent.name)
    asked: Counter[str] = Counter()
    decisions: list[ApprovalResult] = []
    result = await Runner.run(agent, input, **run_options)
    while result.interruptions:
        state, decided = await decide_interruptions(result, options, asked)
        decisions.extend(decided)
        result = await Runner.run(agent, state, **run_options)
    return ApprovedRun(result=result, decisions=decisions)


async def decide_interruptions(
    result: RunResult, options: ApprovalOptions, asked: Counter[str] | None = None
) -> tuple[RunState[Any], list[ApprovalResult]]:
    """One request per interruption, asked in parallel; the run state with every decision applied.
    `asked` counts the keys already used by this workflow, so a model that reuses a call id still
    opens a new request instead of finding the decided one."""
    asked = Counter() if asked is None else asked
    items = list(result.interruptions)
    reason = stated_reason(result)
    keys = [request_key(item, asked, options.key_prefix) for item in items]
    decisions = await asyncio.gather(
        *(
            request_approval(
                item.tool_name or "tool",
                call_arguments(item),
                key=key,
                context=reason,
                agent=options.agent,
                timeout_seconds=options.timeout_seconds,
                rules=options.rules,
                notify=options.notify,
                editable=False,  # the SDK runs a call with the arguments the model gave, or not at all
                task_queue=options.task_queue,
            )
            for item, key in zip(items, keys, strict=True)
        )
    )
    state = result.to_state()
    for item, decision in zip(items, decisions, strict=True):
        apply_decision(state, item, decision)
    return state, list(decisions)


def apply_decision(state: RunState[Any], item: ToolApprovalItem, decision: ApprovalResult) -> None:
    if decision.decision == "allow":
        state.approve(item)
    else:
        state.reject(item, rejection_message=rejection_message(decision))


def rejection_message(decision: ApprovalResult) -> str:
    """What the model reads in place of the tool's output when the call does not run."""
    if decision.decision == "edit":
        return EDIT_REFUSED
    if decision.decision == "expired":
        return "not run: the approval request expired without a decision"
    if decision.decision == "canceled":
        return "not run: the approval request was canceled"
    by = f" by {decision.decided_by}" if decision.decided_by else ""
    return f"denied{by}: {decision.reason}" if decision.reason else f"denied{by}"


def request_key(item: ToolApprovalItem, asked: Counter[str], prefix: str = KEY_PREFIX) -> str:
    """The tool call id names the request; its n-th reuse within one run gets `#n`."""
    base = f"{prefix}/{item.call_id or item.tool_name}"
    asked[base] += 1
    return base if asked[base] == 1 else f"{base}#{asked[base]}"


def call_arguments(item: ToolApprovalItem) -> dict[str, Any]:
    """The call's JSON arguments as an object; text that is no JSON object is shown as `input`."""
    raw = item.arguments
    try:
        parsed = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {"input": raw}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


def stated_reason(result: RunResult) -> str | None:
    """The text the model wrote beside its tool calls, if any: the card's context."""
    messages = [item for item in result.new_items if isinstance(item, MessageOutputItem)]
    text = ItemHelpers.text_message_output(messages[-1]).strip() if messages else ""
    return text or None
