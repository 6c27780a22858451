"""ConversationWorkflow: one conversation, its turns, and the approvals its tools wait for.

The workflow holds no result it has not recorded: the model's reply is an activity result, each
tool's result is an activity result, and a pending approval is state rebuilt by replay. So a
worker can be evicted, killed or replaced while a person thinks, and the turn resumes at the exact
pending call without asking the model again.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from workflows import patches

with workflow.unsafe.imports_passed_through():
    # Pure data and pure functions; passing them through keeps one pydantic class identity.

    from core.approvals import ApprovalBook
    from core.chat_model import ChatMessage, LlmReply, ToolCall
    from core.contract import (
        ERROR_CONTEXT_WINDOW,
        ERROR_INVALID_DECISION,
        ERROR_TOOL_RUNNING,
        ERROR_UNDO_REFUSED,
        QUERY_GET_STATE,
        SIGNAL_CLOSE,
        SIGNAL_FORGET_ALWAYS_ALLOW,
        SIGNAL_HOST_LEFT,
        SIGNAL_POLICY_CHANGED,
        SIGNAL_SET_AUTO_APPROVE,
        SIGNAL_SUBMIT_MESSAGE,
        SIGNAL_TOOL_STILL_RUNNING,
        UPDATE_MOVE,
        UPDATE_UNDO,
        WORKFLOW_TYPE,
    )
    from core.conversation_model import (
        AutoApproveInput,
        CloseInput,
        ConversationInput,
        ConversationState,
        MessageInput,
        MoveInput,
        MoveResult,
        TurnStatus,
    )
    from core.grants import ForgetAlwaysAllow
    from core.hosts import HostLeft
    from core.policy_rules import PolicyRules
    from core.tool_registry import Catalog
    from core.tool_run_model import ToolResult, ToolStillRunning
    from workflows import activity_calls as calls
    from workflows.context import ContextKeeper
    from workflows.decision_handlers import DecisionHandlers
    from workflows.delegation import Delegator, close_after_cancel, final_state, narrow_catalog
    from workflows.handler_payloads import one_payload
    from workflows.host_moves import HostKeeper
    from workflows.notify_outbox import NotificationOutbox
    from workflows.policy_change import adopt, rejudge
    from workflows.status import StatusKeeper
    from workflows.stoppable import unless_closed
    from workflows.switches import Switches
    from workflows.tool_runner import ToolContext, ToolRunner
    from workflows.undo import Undoer, UndoInput, UndoResult
    from workflows.workspace_choice import choose_workspace, workspace_fields

MAX_MODEL_STEPS_PER_TURN = 25
SYSTEM_PROMPT = (
    "You are an assistant with tools over a workspace directory. Tools that change things need a "
    "person's approval; when a call is denied or expires, say so and do not retry it blindly."
)


@workflow.defn(name=WORKFLOW_TYPE)
class ConversationWorkflow(DecisionHandlers):
    @workflow.init
    def __init__(self, start: ConversationInput) -> None:
        self._start = start
        self._id = start.conversation_id
        self._inbox = list(start.inbox)
        self._messages = list(start.messages)
        self._kv = dict(start.kv)
        self._turn_count = start.turn_count
        self._turn_id: str | None = f"turn_{start.turn_count}" if start.turn_count else None
        self._closed = False
        self._workspace: str | None = None  # chosen at the start of run()
        self._last_error: str | None = None
        self._book = ApprovalBook(self._id, start.always_allow, start.resolved, start.always_allow_hashes)
        self._auto_approve = start.auto_approve
        self._switches = Switches(start)
        self._status = StatusKeeper(self._id, start.subagent.parent_id if start.subagent else None)
        self._outbox = NotificationOutbox()
        self._hosts = HostKeeper(
            self._status,
            self._book.pending,
            start.tool_queue,
            start.host_gone_seconds,
            start.left_hosts,
            start.restore_from,
        )
        self._tools = ToolRunner(
            ToolContext(
                conversation_id=self._id,
                policy=start.policy,
                approval_timeout_seconds=start.approval_timeout_seconds,
                book=self._book,
                status=self._status,
                hosts=self._hosts,
                owner=self,
                outbox=self._outbox,
                started_by=start.started_by,
                prescreen_denials=start.prescreen_denials,
                shadow_policy=start.shadow_policy,
                parent_task=start.subagent.task if start.subagent else None,
            ),
            start.used_tool_call_ids,
        )
        self._undo = Undoer(self._tools.context, self._tools, self._hosts.host_queue_now)
        self._delegator = Delegator(
            start, lambda: self._closed, self._hosts.host_queue_now, self._tools.tool_names, lambda: self._workspace
        )
        self._context = ContextKeeper(self._id, start, self._status)

    # ---- run loop -------------------------------------------------------------------------
    @workflow.run
    async def run(self, start: ConversationInput) -> ConversationState:
        self._workspace = choose_workspace(start)
        if not self._messages:
            self._messages.append(ChatMessage(role="system", content=SYSTEM_PROMPT))
        self._outbox.resume(start.notifications)
        while True:
            await workflow.wait_condition(lambda: bool(self._inbox) or self._closed or self._undo.queued())
            if self._closed:
                break
            if self._undo.queued():  # undos asked by people run between turns
                await self._undo.settle_all()
                continue
            try:
                await self._run_turn(self._inbox.pop(0))
            except asyncio.CancelledError:
                if start.subagent is None:
                    raise
                await close_after_cancel(self.close, self._book, self._status)
                raise
            if self._closed:
                break
            if start.subagent is not None:  # a subagent ends with its one task
                self._switches.finished(start.subagent.parent_id, workflow.now())
                break
            if self._should_continue_as_new():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(self._carry_over())
        pending, closer = self._book.pending(), self._switches.closed_payload()
        await self._status.set("closed", pending, event="conversation.closed", key="closed", payload=closer)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return final_state(self.get_state(), start)

    def _should_continue_as_new(self) -> bool:
        info = workflow.info()
        limit = self._start.continue_as_new_after_events
        return info.is_continue_as_new_suggested() or (limit is not None and info.get_current_history_length() > limit)

    def _carry_over(self) -> ConversationInput:
        return self._start.model_copy(
            update={
                "inbox": list(self._inbox),
                "messages": list(self._messages),
                "always_allow": sorted(self._book.always_allow),
                "always_allow_hashes": dict(self._book.always_allow_hashes),
                "auto_approve": self._auto_approve,
                **self._switches.carried(),
                "kv": dict(self._kv),
                "turn_count": self._turn_count,
                "used_tool_call_ids": sorted(self._tools.used_ids),
                "resolved": self._book.resolutions(),
                "tool_queue": self._hosts.host_queue,
                "left_hosts": sorted(self._hosts.left),
                "restore_from": self._hosts.restore_from,
                "prescreen_denials": self._tools.before_asking.prescreen_denials,
                "context_budget_tokens": self._context.budget,
                "context_anchor": self._context.anchor,
                "archived_messages": self._context.archived,
                "children_started": self._delegator.children_started,
                "notifications": self._outbox.carried(),
                **workspace_fields(self._workspace),
            }
        )

    async def _run_turn(self, text: str) -> None:
        self._turn_count += 1
        turn_id = self._turn_id = f"turn_{self._turn_count}"
        self._last_error = None
        self._messages.append(ChatMessage(role="user", content=text))
        if workflow.patched(patches.TURN_START_WITH_THE_LISTING):
            started = [self._status.event("turn.started", turn_id, {"text": text})]
            await self._tools.list_catalog(turn_id, self._status.snapshot("running", [], started))
        else:
            await self._status.set("running", [], event="turn.started", key=turn_id, payload={"text": text})
            await self._tools.list_catalog(turn_id)
        for _ in range(MAX_MODEL_STEPS_PER_TURN):
            answer = await self._ask_model(turn_id)
            if answer is None:
                return
            reply = self._tools.normalise_ids(answer)
            self._messages.append(reply)
            if not reply.tool_calls:
                await self._status.set("idle", [], event="turn.completed", key=turn_id)
                return
            await self._tools.run_all(turn_id, reply.tool_calls)
            if self._closed:
                return
        await self._fail_turn(turn_id, f"the model asked for tools {MAX_MODEL_STEPS_PER_TURN} times without answering")

    async def _ask_model(self, turn_id: str) -> ChatMessage | None:
        """One assistant message, the context compacted first when it would pass the budget; a
        context-window error compacts and retries once. None: the turn failed (and says why)."""
        tools, context = self._tools.schemas(), self._context
        if context.wants_compaction(self._messages, tools) and workflow.patched(patches.CONTEXT_COMPACTION):
            await self._compact(turn_id, tools)
        try:
            reply = await self._model_reply(turn_id, tools)
        except ActivityError as err:
            if not (_error_type(err) == ERROR_CONTEXT_WINDOW and workflow.patched(patches.CONTEXT_COMPACTION)):
                await self._fail_turn(turn_id, f"model call failed: {_cause_message(err)}")
                return None
            context.learn_refusal(context.tokens(self._messages, tools))
            await self._compact(turn_id, tools)
            try:
                reply = await self._model_reply(turn_id, tools)
            except ActivityError as again:
                reason = f"model call failed: {_cause_message(again)}"
                if _error_type(again) == ERROR_CONTEXT_WINDOW:
                    reason = f"the model's context window is too small even after compacting: {_cause_message(again)}"
                await self._fail_turn(turn_id, reason)
                return None
        if reply is None:  # closed while the model was writing: the turn ends with the conversation
            return None
        context.note_usage(len(self._messages) + 1, reply.usage)
        return reply.message()

    async def _model_reply(self, turn_id: str, tools: list[dict]) -> LlmReply | None:
        """None: the conversation was closed while the model was writing (the call is cancelled)."""
        return await unless_closed(
            calls.call_llm(self._context.request(turn_id, self._messages, tools)), self.is_closed
        )

    async def _compact(self, turn_id: str, tools: list[dict]) -> None:
        compacted = await self._context.compact(turn_id, self._messages, tools)
        if compacted is not None:
            self._messages = compacted

    async def _fail_turn(self, turn_id: str, reason: str) -> None:
        self._last_error = reason
        await self._status.set("failed", [], event="turn.failed", key=turn_id, payload={"reason": reason})

    # ---- what the tool runner reads and changes (tool_runner.Conversation) -------------------
    @property
    def auto_approve(self) -> bool:
        return self._auto_approve or self._start.policy.mode == "auto_approve"

    def auto_approves(self) -> bool:
        return self.auto_approve

    def is_closed(self) -> bool:
        return self._closed

    def transcript(self) -> list[ChatMessage]:
        return self._messages

    def append_message(self, message: ChatMessage) -> None:
        self._messages.append(message)

    def kv(self) -> dict[str, Any]:
        return self._kv

    def replace_kv(self, kv: dict[str, Any]) -> None:
        self._kv = dict(kv)

    def workspace_key(self) -> str | None:
        return self._workspace

    def offered_tools(self, catalog: Catalog) -> Catalog:
        return narrow_catalog(catalog, self._start)

    async def delegate(self, call: ToolCall, arguments: dict[str, Any]) -> ToolResult:
        return await self._delegator.run(call, arguments)

    # ---- handlers -------------------------------------------------------------------------
    # Every handler takes *args: the SDK then decodes each payload without a type hint, so no
    # number or shape of payloads can make it raise (a TypeError here would fail the workflow
    # task on every retry and freeze the conversation). Each handler validates its own input.
    @workflow.signal(name=SIGNAL_SUBMIT_MESSAGE)
    def submit_message(self, *args: Any) -> None:
        message = one_payload(SIGNAL_SUBMIT_MESSAGE, args, MessageInput)
        if message is None:
            return
        if self._closed:
            workflow.logger.warning("message ignored: conversation %s is closed", self._id)
            return
        self._inbox.append(message.text)

    @workflow.update(name=UPDATE_UNDO)
    async def undo(self, *args: Any) -> UndoResult:
        """Ask to undo an approved write_file (workflows/undo.py): answered with the undo's request
        id, or refused with the file's three states when it changed since."""
        undo = one_payload(UPDATE_UNDO, args, UndoInput)
        if undo is None or self._closed:
            raise ApplicationError("undo needs a request_id, on an open conversation", type=ERROR_UNDO_REFUSED)
        return await self._undo.ask(undo)

    @workflow.signal(name=SIGNAL_SET_AUTO_APPROVE)
    async def set_auto_approve(self, *args: Any) -> None:
        value = one_payload(SIGNAL_SET_AUTO_APPROVE, args, AutoApproveInput)
        if value is None:
            return
        self._auto_approve = value.enabled
        await self._switches.auto_approve_switched(value, self._status, self._book.pending())

    @workflow.signal(name=SIGNAL_CLOSE)
    def close(self, *args: Any) -> None:
        # `{}` is the contract's payload; no payload or a JSON null also close, as they always did.
        bare = args in ((), (None,))
        closing = None if bare else one_payload(SIGNAL_CLOSE, args, CloseInput)
        if closing is None and not bare:
            return
        if not self._closed:
            self._switches.closed(closing, workflow.now())
        self._closed = True
        self._inbox.clear()
        self._book.cancel_all(workflow.now())

    @workflow.signal(name=SIGNAL_TOOL_STILL_RUNNING)
    def tool_still_running(self, *args: Any) -> None:
        """An approved tool runs past STATUS_CATCH_UP: Temporal's list shows the turn's status
        from now, not only from the tool's result (see StatusKeeper.tool_tells_after)."""
        if one_payload(SIGNAL_TOOL_STILL_RUNNING, args, ToolStillRunning) is not None:
            self._tools.approved.tool_still_running()

    @workflow.signal(name=SIGNAL_POLICY_CHANGED)
    def policy_changed(self, *args: Any) -> None:
        """New rules (`rules reload`): every later call is judged under them, and waiting requests again."""
        new = one_payload(SIGNAL_POLICY_CHANGED, args, PolicyRules)
        if new is None or self._closed:
            return
        adopt(self._start.policy, new, self._start)
        changed = rejudge(self._book, self._start.policy, self._tools.catalog, workflow.now())
        if changed:
            workflow.logger.info("new rules decided %s in %s", ", ".join(changed), self._id)

    @workflow.signal(name=SIGNAL_FORGET_ALWAYS_ALLOW)
    def forget_always_allow(self, *args: Any) -> None:
        """An `approve --always` grant was revoked: that tool is asked again from now on."""
        forget = one_payload(SIGNAL_FORGET_ALWAYS_ALLOW, args, ForgetAlwaysAllow)
        if forget is not None:
            self._book.always_allow.discard(forget.tool_name)
            self._book.always_allow_hashes.pop(forget.tool_name, None)

    @workflow.signal(name=SIGNAL_HOST_LEFT)
    async def host_left(self, *args: Any) -> None:
        """A stopping worker hands its conversations over: their tools go to a live host now."""
        left = one_payload(SIGNAL_HOST_LEFT, args, HostLeft)
        if left is not None and not self._closed:
            await self._hosts.host_left(left.task_queue, left.why)

    @workflow.update(name=UPDATE_MOVE)
    def move(self, *args: Any) -> MoveResult:
        moving = one_payload(UPDATE_MOVE, args, MoveInput)
        if moving is None:
            raise ApplicationError(_MOVE_SHAPE, type=ERROR_INVALID_DECISION, non_retryable=True)
        workflow.patched(patches.MOVE_CONVERSATION_HOST)
        before = self._hosts.moved_by_person(moving.to)  # carried across continue-as-new
        workflow.logger.info("tools of %s moved from %s to %s by %s", self._id, before, moving.to, moving.by)
        return MoveResult(moved_from=before, to=moving.to)

    @move.validator
    def _validate_move(self, *args: Any) -> None:
        if one_payload(UPDATE_MOVE, args, MoveInput) is None:
            raise ApplicationError(_MOVE_SHAPE, type=ERROR_INVALID_DECISION, non_retryable=True)
        if self._tools.tool_running():
            message = "a tool of this conversation is running: move it once the tool has finished"
            raise ApplicationError(message, type=ERROR_TOOL_RUNNING, non_retryable=True)

    @workflow.query(name=QUERY_GET_STATE)
    def get_state(self, *_: Any) -> ConversationState:
        status: TurnStatus = self._status.turn_status
        return ConversationState(
            conversation_id=self._id,
            turn_status=status,
            turn_id=self._turn_id,
            messages=self._messages,
            pending_approvals=self._book.pending(),
            always_allow=sorted(self._book.always_allow),
            auto_approve=self.auto_approve,
            kv=self._kv,
            last_error=self._last_error,
            resolutions=self._book.resolutions(),
            archived_messages=self._context.archived,
            **self._switches.state(),
        )


_MOVE_SHAPE = "move takes one payload {to, by?, door?}"


def _error_type(err: ActivityError) -> str | None:
    cause = err.__cause__
    return cause.type if isinstance(cause, ApplicationError) else None


def _cause_message(err: BaseException) -> str:
    while err.__cause__ is not None:
        err = err.__cause__
    return str(err) or type(err).__name__
