"""Subagents: the `delegate` tool starts a child ConversationWorkflow and returns its answer.

The child is the same workflow, started with a `SubagentInfo`: it runs one turn over its task
with a subset of its parent's tools under narrowed rules (core.subagent_policy), then ends
with its answer. Its id derives from the parent's id and the tool call id, so a replay or a
retried task starts nothing new. The parent's close signals the child to close (its pending
requests resolve `canceled`, nothing runs); a parent that fails or is terminated cancels it
through the parent close policy. A child that fails gives the parent an error result.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ChildWorkflowError, FailureError
from temporalio.workflow import ParentClosePolicy

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.approvals import ApprovalBook
    from core.chat_model import ChatMessage, ToolCall
    from core.contract import SIGNAL_CLOSE, WORKFLOW_TYPE
    from core.conversation_model import CloseInput, ConversationInput, ConversationState, SubagentInfo
    from core.subagent_policy import narrow
    from core.tool_model import ToolDef
    from core.tool_registry import Catalog
    from core.tool_run_model import ToolResult
    from workflows.approved_calls import canceled_with_conversation
    from workflows.status import PENDING_APPROVALS_KEY, TURN_STATUS_KEY, StatusKeeper
    from workflows.workspace_choice import workspace_fields

DELEGATE = "delegate"
SUBAGENT_PROMPT = (
    "You are a subagent: you do one task for another assistant and answer it with a short report. "
    "Tools that change things need a person's approval; when a call is denied or expires, say so."
)

DELEGATE_TOOL = ToolDef(
    name=DELEGATE,
    description=(
        "Hand a subtask to a subagent. It works with the tools you name (by default all of yours) under "
        "rules at least as strict as yours, and its final answer comes back as this call's result."
    ),
    parameters={
        "type": "object",
        "properties": {
            "task": {"type": "string", "description": "what the subagent must do, in full"},
            "system_prompt": {"type": "string", "description": "instructions for the subagent (optional)"},
            "tools": {"type": "array", "items": {"type": "string"}, "description": "tool names it may use"},
        },
        "required": ["task"],
        "additionalProperties": False,
    },
    permission_type="execute",
    rule_argument="task",
    source="subagent",
    origin="subagent",
)

_UNSAFE = re.compile(r"[^A-Za-z0-9-]+")
_MAX_ID = 128


def child_conversation_id(parent_id: str, tool_call_id: str) -> str:
    """`{parent}.{call}-{hash}`, in the conversation id alphabet (no `_`), at most 128 characters.
    The hash of the raw call id keeps two calls whose cleaned ids agree apart."""
    digest = hashlib.sha256(tool_call_id.encode()).hexdigest()[:8]
    cleaned = _UNSAFE.sub("-", tool_call_id).strip("-")[:24] or "call"
    child = f"{parent_id}.{cleaned}-{digest}"
    if len(child) > _MAX_ID:
        whole = hashlib.sha256(f"{parent_id}\n{tool_call_id}".encode()).hexdigest()[:16]
        child = f"{parent_id[: _MAX_ID - len(whole) - 1]}.{whole}"
    return child


def narrow_catalog(catalog: Catalog, start: ConversationInput) -> Catalog:
    """What a conversation offers: a subagent only its granted tools; `delegate` only above the depth limit."""
    depth = start.subagent.depth if start.subagent is not None else 0
    granted = set(start.subagent.tools) if start.subagent is not None else None
    kept = [
        tool
        for tool in catalog.tools.values()
        if (granted is None or tool.name in granted)
        and not (tool.name == DELEGATE and depth >= start.delegation.max_depth)
    ]
    return Catalog(kept, catalog.unavailable)


def final_state(state: ConversationState, start: ConversationInput) -> ConversationState:
    """A subagent's result goes into its parent's history: only its answer travels, not its transcript."""
    if start.subagent is None:
        return state
    return state.model_copy(update={"messages": state.messages[-1:], "resolutions": {}})


def answer_of(state: ConversationState) -> str | None:
    last = state.messages[-1] if state.messages else None
    if last is None or last.role != "assistant" or last.tool_calls:
        return None
    return last.content or ""


class Delegator:
    """Runs `delegate` calls of one conversation; counts its children for the fan-out limit."""

    def __init__(
        self,
        start: ConversationInput,
        is_closed: Callable[[], bool],
        host_queue: Callable[[], Awaitable[str | None]],
        offered: Callable[[], list[str]],
        workspace: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._start = start
        self._workspace = workspace  # the parent's key: its children work on the same files
        self._is_closed = is_closed
        self._host_queue = host_queue
        self._offered = offered
        self.children_started = start.children_started

    def _refusal(self, tools: list[str]) -> str | None:
        limits, depth = self._start.delegation, self._start.subagent.depth if self._start.subagent else 0
        if depth >= limits.max_depth:
            return f"Not run: subagents may not nest deeper than {limits.max_depth} level(s) (the depth limit)."
        if self.children_started >= limits.max_children:
            return f"Not run: this conversation already started {limits.max_children} subagent(s) (the fan-out limit)."
        unknown = sorted(set(tools) - set(self._offered()))
        if unknown:
            return f"Error: a subagent can only get tools you have; not yours: {', '.join(unknown)}"
        return None

    async def run(self, call: ToolCall, arguments: dict[str, Any]) -> ToolResult:
        requested = arguments.get("tools")
        tools = list(requested) if requested is not None else self._offered()
        refusal = self._refusal(tools)
        if refusal is not None:
            return ToolResult(content=refusal, is_error=True)
        workflow.patched(patches.SUBAGENT_DELEGATION)
        self.children_started += 1
        child_id = child_conversation_id(self._start.conversation_id, call.id)
        try:
            handle = await workflow.start_child_workflow(
                WORKFLOW_TYPE,
                self._child_input(child_id, call, arguments, tools, await self._host_queue()),
                id=child_id,
                result_type=ConversationState,
                parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
                search_attributes=TypedSearchAttributes(
                    [SearchAttributePair(TURN_STATUS_KEY, "running"), SearchAttributePair(PENDING_APPROVALS_KEY, 0)]
                ),
                static_summary=f"subagent of {self._start.conversation_id}: {str(arguments['task'])[:120]}",
            )
        except FailureError as err:  # e.g. a conversation someone started with that id already runs
            return ToolResult(content=f"Error: the subagent {child_id} could not start: {err}", is_error=True)
        await workflow.wait_condition(lambda: handle.done() or self._is_closed())
        if not handle.done():
            # The parent closed while the child works or waits: the child closes the same way.
            with contextlib.suppress(FailureError):  # it ended meanwhile: its result below says how
                await handle.signal(SIGNAL_CLOSE, CloseInput())
        try:
            state = await handle
        except ChildWorkflowError as err:
            cause = err.cause or err
            return ToolResult(content=f"Error: the subagent {child_id} failed: {cause}", is_error=True)
        return _result(child_id, state)

    def _child_input(
        self, child_id: str, call: ToolCall, arguments: dict[str, Any], tools: list[str], host_queue: str | None
    ) -> ConversationInput:
        start, depth = self._start, (self._start.subagent.depth if self._start.subagent else 0) + 1
        prompt = str(arguments.get("system_prompt") or SUBAGENT_PROMPT)
        granted = [name for name in tools if name != DELEGATE or depth < start.delegation.max_depth]
        return ConversationInput(
            conversation_id=child_id,
            started_by=start.started_by,
            policy=narrow(start.policy, start.delegation.rules),
            approval_timeout_seconds=start.approval_timeout_seconds,
            host_gone_seconds=start.host_gone_seconds,
            inbox=[str(arguments["task"])],
            messages=[ChatMessage(role="system", content=prompt)],
            context_budget_tokens=start.context_budget_tokens,
            tool_queue=host_queue,
            delegation=start.delegation,
            **workspace_fields(self._workspace()),
            subagent=SubagentInfo(
                parent_id=start.conversation_id,
                parent_tool_call_id=call.id,
                depth=depth,
                task=str(arguments["task"]),
                tools=granted,
            ),
        )


async def close_after_cancel(close: Callable[[], None], book: ApprovalBook, status: StatusKeeper) -> None:
    """A subagent whose parent failed or was terminated is cancelled by the parent close policy:
    it closes as on a close signal, and the projection shows its waiting requests `canceled`."""
    waiting = book.pending()
    close()
    for record in waiting:
        await canceled_with_conversation(record, status)
    await status.set("closed", [], event="conversation.closed", key="closed")


def _result(child_id: str, state: ConversationState) -> ToolResult:
    if state.last_error is not None:
        return ToolResult(content=f"Error: the subagent {child_id} failed: {state.last_error}", is_error=True)
    answer = answer_of(state)
    if answer is None:
        return ToolResult(content=f"Not run to the end: the subagent {child_id} was closed first.", is_error=True)
    return ToolResult(content=answer)
