"""Undo an approved write_file: a request of its own, asked, approved and audited like any call.

The update handler prepares it on the tool's host (what the write replaced, and whether the file is
still what the write left) and answers at once: refused with the three states of the file, or with
the undo's request id. The request is then shown and decided like the model's own calls; the
conversation runs it between turns, bound to the content the approved write left, and tells the
model in its next turn that a person undid its change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.approvers import approvers_for, required_for
    from core.chat_model import ChatMessage
    from core.contract import ERROR_UNDO_REFUSED, UPDATE_UNDO
    from core.conversation_model import ApprovalRecord, TurnStatus, request_id_for
    from core.tool_specs import UNDO_TOOL
    from core.undo import UNDO_CALL_PREFIX, PrepareUndoInput, UndoInput, UndoResult, undo_note
    from core.why import WhyContext
    from workflows import activity_calls as calls
    from workflows.tool_runner import ToolContext, ToolRunner

__all__ = ["UPDATE_UNDO", "UndoInput", "UndoResult", "Undoer"]


class Undoer:
    def __init__(self, ctx: ToolContext, runner: ToolRunner, host_queue: Callable[[], Awaitable[str | None]]) -> None:
        self._ctx, self._runner, self._host_queue = ctx, runner, host_queue
        self._asked: list[tuple[ApprovalRecord, str, asyncio.Future[None]]] = []

    def queued(self) -> bool:
        return bool(self._asked)

    async def ask(self, undo: UndoInput) -> UndoResult:
        if not workflow.patched(patches.UNDO_FILE_CHANGE):
            raise ApplicationError("this conversation's release cannot undo", type=ERROR_UNDO_REFUSED)
        ctx = self._ctx
        prefix = request_id_for(ctx.conversation_id, "")
        if not undo.request_id.startswith(prefix):
            return UndoResult(refused=f"{undo.request_id} is not a request of conversation {ctx.conversation_id}")
        prepare = PrepareUndoInput(
            conversation_id=ctx.conversation_id, request_id=undo.request_id, workspace=ctx.owner.workspace_key()
        )
        plan = await calls.prepare_undo(prepare, await self._host_queue())
        if plan.refused is not None or plan.path is None or plan.content is None:
            return UndoResult(refused=plan.refused or "nothing to restore", three_way=plan.three_way)
        base = f"{UNDO_CALL_PREFIX}{undo.request_id.removeprefix(prefix)}"
        call_id, n = base, 1
        while call_id in self._runner.used_ids:
            n += 1
            call_id = f"{base}_{n}"
        self._runner.used_ids.add(call_id)
        now = workflow.now()
        spec = UNDO_TOOL.spec  # the undoable tool's own call restores the file
        arguments = UNDO_TOOL.writing(plan.path, plan.content)
        record = ApprovalRecord(
            request_id=request_id_for(ctx.conversation_id, call_id),
            conversation_id=ctx.conversation_id,
            turn_id="undo",
            tool_call_id=call_id,
            tool_name=spec.name,
            permission_type=spec.permission_type,
            arguments=arguments,
            created_at=now,
            expires_at=now + timedelta(seconds=ctx.approval_timeout_seconds),
            tool_hash=spec.definition_hash(),
            preview=plan.preview,
            why=WhyContext(user_message=f"{undo.by or 'a person'} asked to undo {undo.request_id}"),
            approvers=approvers_for(ctx.policy, spec, arguments),  # that tool's rules decide who may approve
            required=required_for(ctx.policy, spec, arguments),
        )
        ctx.book.open(record)
        self._asked.append((record, undo.request_id, self._runner.watch(record)))
        return UndoResult(request_id=record.request_id)

    async def settle_all(self) -> None:
        """Run every asked undo once decided (between turns), and tell the model of each one done."""
        while self._asked:
            record, original, watcher = self._asked.pop(0)
            result = await self._runner.run_asked(record)
            await watcher
            if result is not None and not result.is_error and result.stale_target is None:
                path, _ = UNDO_TOOL.written(record.arguments)
                self._ctx.owner.append_message(
                    ChatMessage(role="system", content=undo_note(record.decided_by, original, path))
                )
            if not self._ctx.owner.is_closed():  # between turns again
                pending = self._ctx.book.pending()
                after: TurnStatus = "awaiting_approval" if pending else "idle"
                await self._ctx.status.set(after, pending, event="undo.settled", key=record.request_id)
