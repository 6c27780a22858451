"""Runs the tool calls of one assistant message: validate, apply the policy, ask, execute.

Allowed calls run at once and their results are recorded at once; every asked call of the
message gets its own approval request, all open together, each waiting on its own decision.
What the runner needs of the workflow arrives in a `ToolContext`: values fixed for the run, and
the conversation itself behind the `Conversation` protocol, the state it reads and changes live.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from core.approvals import ApprovalBook, outcome_message
    from core.approvers import approvers_for, not_by_for, required_for
    from core.chat_model import ChatMessage, ToolCall
    from core.conversation_model import APPROVED_RESOLUTIONS, ApprovalRecord, request_id_for
    from core.edits import EditDesk, ran_with
    from core.notify_plan import plan_for
    from core.policy import network_allowed
    from core.policy_rules import PolicyRules
    from core.projection_model import ApprovalRequestedProjection, ConversationProjection
    from core.tool_model import ToolCatalog, ToolDef
    from core.tool_registry import TOOLS_UNAVAILABLE_NAME, Catalog, main_argument_text
    from core.tool_run_model import ListToolsInput, ToolRequest, ToolResult
    from core.tool_specs import BUILTIN_CATALOG
    from workflows import activity_calls as calls
    from workflows.approved_calls import ApprovedCalls, ResolutionMirror
    from workflows.before_asking import AskedCall, BeforeAsking
    from workflows.call_judgement import CallJudge, CallPlan, shadow_differences
    from workflows.host_moves import HostKeeper
    from workflows.notify_outbox import NotificationOutbox
    from workflows.previewing import MAX_REASKS, Previewer
    from workflows.reminders import RequestTimers
    from workflows.shadow_rules import ShadowRules
    from workflows.status import StatusKeeper


class Conversation(Protocol):
    """What the runner reads and changes of the conversation that owns it (ConversationWorkflow)."""

    def transcript(self) -> list[ChatMessage]: ...
    def append_message(self, message: ChatMessage) -> None: ...
    def is_closed(self) -> bool: ...
    def auto_approves(self) -> bool: ...
    def kv(self) -> dict[str, Any]: ...
    def replace_kv(self, kv: dict[str, Any]) -> None: ...
    def workspace_key(self) -> str | None:
        """Whose workspace the tools use (workflows/workspace_choice.py); None: the shared one."""

    def offered_tools(self, catalog: Catalog) -> Catalog:
        """What the conversation offers of the tools listed this turn (a subagent: its grant)."""

    async def delegate(self, call: ToolCall, arguments: dict[str, Any]) -> ToolResult:
        """Run a `delegate` call as a child conversation (workflows/delegation.py)."""


@dataclass
class ToolContext:
    """What the runner needs of the conversation that owns it: fixed for a run, or read live
    through `owner`."""

    conversation_id: str
    policy: PolicyRules
    approval_timeout_seconds: float
    book: ApprovalBook
    status: StatusKeeper
    # Where this conversation's tools run (its host queue, chosen once, moved off a host that left).
    hosts: HostKeeper
    owner: Conversation
    # Where requests send their notifications (kept across continue-as-new by the conversation).
    outbox: NotificationOutbox
    started_by: str | None = None  # who started the conversation, for self-approval rules
    # Calls the pre-screen denied so far in this conversation (its breaker), carried over continue-as-new.
    prescreen_denials: int = 0
    # [shadow] rules, judged beside the live ones (workflows/shadow_rules.py); None: none.
    shadow_policy: PolicyRules | None = None
    parent_task: str | None = None  # a subagent's task: why the agent wants a call (core/why.py)


class ToolRunner:
    def __init__(self, context: ToolContext, used_ids: list[str]) -> None:
        self._ctx = context
        self.used_ids: set[str] = set(used_ids)
        self._catalog: Catalog = BUILTIN_CATALOG
        # Approved tools run one at a time, in the order their decisions arrive.
        self._lock = asyncio.Lock()
        self._resolutions = ResolutionMirror(context.book, context.status, context.owner.is_closed)
        self.approved = ApprovedCalls(self._resolutions, context.status, context.hosts)
        self._shadow = ShadowRules(context.shadow_policy, context.status, context.book.pending)
        self._judge = CallJudge(
            context.policy,
            context.book,
            context.owner.auto_approves,
            context.started_by,
            context.conversation_id,
            self._shadow.rules,
        )
        self.before_asking = BeforeAsking(
            context.conversation_id,
            lambda: context.policy,
            context.book,
            self._resolutions,
            context.started_by,
            context.prescreen_denials,
        )
        self._previews = Previewer(
            context.conversation_id,
            context.policy,
            context.book,
            context.owner.workspace_key,
            context.hosts.host_queue_now,
            context.owner.transcript,
            context.parent_task,
        )
        self._reask_watchers: list[asyncio.Future[None]] = []
        # Edits are checked against the tools of the turn that asked; markers only outside validators.
        enabled = lambda: workflow.patched(patches.EDIT_BEFORE_APPROVING)  # noqa: E731
        context.book.edits = EditDesk(context.policy, context.started_by, lambda name: self._catalog.get(name), enabled)

    @property
    def context(self) -> ToolContext:
        return self._ctx

    def tool_running(self) -> bool:
        """A tool call of this conversation is on its way to its host or running there."""
        return self._lock.locked()

    async def list_catalog(self, turn_id: str, turn_start: ConversationProjection | None = None) -> Catalog:
        """The tools this turn offers, listed by an activity so replay sees what the model saw.
        `turn_start`: the turn's start, written by the listing's activity before it lists (or by a
        projection activity after it, when the listing's worker did not: one from before it could)."""
        if not workflow.patched(patches.TOOL_CATALOG_ACTIVITY):
            if turn_start is not None:
                await calls.project(turn_start)
            return self._catalog
        try:
            listing = ListToolsInput(
                conversation_id=self._ctx.conversation_id,
                turn_id=turn_id,
                workspace=self._ctx.owner.workspace_key(),
                turn_start=turn_start,
            )
            listed = await calls.list_tools(listing)
        except ActivityError as err:
            why = f"the tools could not be listed: {err.__cause__ or err}"
            listed = ToolCatalog(tools=list(BUILTIN_CATALOG.tools.values()), unavailable={"configured tools": why})
        if turn_start is not None and not listed.wrote_turn_start:
            await calls.project(turn_start)
        self._catalog = Catalog(listed.tools, listed.unavailable)
        self._catalog = self._ctx.owner.offered_tools(self._catalog)
        if listed.unavailable:
            down = "; ".join(f"{source}: {why}" for source, why in sorted(listed.unavailable.items()))
            self._ctx.owner.append_message(
                ChatMessage(
                    role="system",
                    name=TOOLS_UNAVAILABLE_NAME,
                    content=f"Some tools are unavailable this turn ({down}).",
                )
            )
        return self._catalog

    @property
    def catalog(self) -> Catalog:
        """The tools of the current turn (the built-ins before the first)."""
        return self._catalog

    def tool_names(self) -> list[str]:
        return list(self._catalog.tools)

    def schemas(self) -> list[dict[str, Any]]:
        return self._catalog.schemas()

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
        await self._shadow.record(turn_id, shadow_differences(plans))
        # Choose the host before anyone is asked, so a decision is never kept waiting for it; since
        # HOST_BESIDE_JUDGING, while grants and the pre-screen judge the asked calls (independent reads).
        choose_host = any(plan.verdict in ("allow", "ask") for plan in plans)
        if choose_host and workflow.patched(patches.HOST_BESIDE_JUDGING):
            await asyncio.gather(self._ctx.hosts.host_queue_now(), self._judge_before_asking(turn_id, plans))
        else:
            if choose_host:
                await self._ctx.hosts.host_queue_now()
            await self._judge_before_asking(turn_id, plans)
        first_ask = next((i for i, plan in enumerate(plans) if plan.verdict == "ask"), len(plans))
        for plan in plans[:first_ask]:
            await self._settle(turn_id, plan)
        asked = [plan for plan in plans[first_ask:] if plan.verdict == "ask"]
        if asked and workflow.patched(patches.PATCH_CHECKS_BEFORE_ASKING):
            for patch_id in patches.CHECKED_WHEN_DECIDED:
                workflow.patched(patch_id)
        previewed = bool(asked) and self._previews.enabled()
        for plan in asked:
            plan.record = plan.record or self._open_request(turn_id, plan)
        if previewed:  # every asked call's preview, read together, before any door shows the request
            await asyncio.gather(*(self._add_preview(plan.record) for plan in asked if plan.record))
        watchers = [asyncio.ensure_future(self._watch(plan.record)) for plan in asked if plan.record]
        for plan in plans[first_ask:]:
            await self._settle(turn_id, plan)
        await asyncio.gather(*watchers, *self._reask_watchers)
        self._reask_watchers = []
        self.approved.cancel_decided_timers()  # a call decided but not run (the conversation closed first)

    async def _judge_before_asking(self, turn_id: str, plans: list[CallPlan]) -> None:
        """Asked calls a grant or the pre-screen decides are settled in their turn (before_asking.py)."""
        asked = [plan for plan in plans if plan.verdict == "ask" and plan.spec is not None]

        def opener(plan: CallPlan) -> Callable[[], ApprovalRecord]:
            def open_request() -> ApprovalRecord:
                plan.record = self._open_request(turn_id, plan)
                return plan.record

            return open_request

        calls_asked = [
            AskedCall(request_id_for(self._ctx.conversation_id, plan.call.id), plan.spec, plan.arguments, opener(plan))
            for plan in asked
            if plan.spec is not None
        ]
        last_user = next((m.content for m in reversed(self._ctx.owner.transcript()) if m.role == "user"), None)
        for plan, record in zip(asked, await self.before_asking.decide(calls_asked, last_user), strict=True):
            if record is not None and record.resolution is not None:
                plan.verdict = "decided"

    async def _add_preview(self, record: ApprovalRecord) -> None:
        spec = self._catalog.get(record.tool_name)
        if spec is not None:
            record.preview = await self._previews.preview(spec, record.arguments, record.request_id)
        record.why = self._previews.why(record.request_id)

    def _plan(self, call: ToolCall) -> CallPlan:
        return self._judge.plan(call, self._catalog)

    async def _settle(self, turn_id: str, plan: CallPlan) -> None:
        """Give one call its one result: run it, or tell the model why it did not run."""
        if plan.spec is None:
            self._record(plan.call, plan.error or "Error: invalid call")
            return
        if plan.verdict == "deny":
            self._record(plan.call, f"Not run: a deny rule of the policy forbids this {plan.spec.name} call.")
            return
        record, asked_again = plan.record, 0
        while True:
            if record is not None:
                await _decided(record)
                if record.resolution not in APPROVED_RESOLUTIONS:
                    self._record(plan.call, outcome_message(record))
                    return
            if self._ctx.owner.is_closed():
                self._record(plan.call, "Not run: the conversation was closed first.")
                return
            arguments, note = ran_with(record, record.arguments if record is not None else plan.arguments)
            if record is not None and record.edited_arguments is not None and record.preview is not None:
                await self._preview_edit(record)
            result = await self._execute(turn_id, plan.call, plan.spec, arguments, record)
            if result.stale_target is None or record is None or asked_again >= MAX_REASKS:
                break
            asked_again += 1
            record = await self._ask_again(record, plan, asked_again + 1)
        if asked_again:
            changed = f"The target changed after the call was asked; a person was asked again ({asked_again}x)."
            note = changed if note is None else f"{changed}\n\n{note}"
        self._record(plan.call, result.content if note is None else f"{note}\n\n{result.content}")

    async def _preview_edit(self, record: ApprovalRecord) -> None:
        """An edit's own preview, bound to what the person saw when the path is the same one."""
        assert record.preview is not None and record.edited_arguments is not None
        spec = self._catalog.get(record.tool_name)
        if spec is None:
            return
        seen = record.preview
        fresh = await self._previews.preview(spec, record.edited_arguments, record.request_id)
        if fresh is not None and fresh.path == seen.path and fresh.path is not None:
            fresh = fresh.model_copy(update={"target_hash": seen.target_hash})
        record.preview = fresh

    async def _ask_again(self, stale: ApprovalRecord, plan: CallPlan, attempt: int) -> ApprovalRecord:
        """The target changed under an approved call: record it stale, ask the same call anew."""
        assert plan.spec is not None
        again = await self._previews.reask(stale, plan.call.id, attempt, plan.spec)
        self.used_ids.add(again.tool_call_id)
        self._ctx.book.open(again)
        await self._resolutions.mirror_again(stale)
        self._reask_watchers.append(asyncio.ensure_future(self._watch(again)))
        return again

    def _open_request(self, turn_id: str, plan: CallPlan) -> ApprovalRecord:
        assert plan.spec is not None
        ctx, tool = self._ctx, plan.spec
        now = workflow.now()
        approvers = approvers_for(ctx.policy, tool, plan.arguments)
        record = ApprovalRecord(
            request_id=request_id_for(ctx.conversation_id, plan.call.id),
            conversation_id=ctx.conversation_id,
            turn_id=turn_id,
            tool_call_id=plan.call.id,
            tool_name=plan.spec.name,
            permission_type=plan.spec.permission_type,
            arguments=plan.arguments,
            created_at=now,
            expires_at=now + timedelta(seconds=ctx.approval_timeout_seconds),
            tool_source=tool.source,
            tool_origin=tool.origin,
            tool_hash=tool.definition_hash(),
            tool_changed=plan.changed,
            annotations=tool.annotations,
            approvers=approvers,
            required=required_for(ctx.policy, tool, plan.arguments),
            not_by=not_by_for(ctx.policy, tool, plan.arguments, ctx.started_by),
            notify=plan_for(ctx.policy, tool, plan.arguments, approvers),
            supplied_by_approver=list(tool.supplied_by_approver),
        )
        ctx.book.open(record)
        return record

    def watch(self, record: ApprovalRecord) -> asyncio.Future[None]:
        """Show a request opened outside a model's message (an undo) and keep its deadline."""
        return asyncio.ensure_future(self._watch(record))

    async def run_asked(self, record: ApprovalRecord) -> ToolResult | None:
        """Once decided, run a request opened outside a model's message; None: it did not run."""
        await _decided(record)
        spec = BUILTIN_CATALOG.tools.get(record.tool_name)
        if record.resolution not in APPROVED_RESOLUTIONS or spec is None or self._ctx.owner.is_closed():
            self.approved.cancel_decided_timers()
            return None
        call = ToolCall(id=record.tool_call_id, name=record.tool_name, arguments="{}")
        result = await self._execute(record.turn_id, call, spec, record.edited_arguments or record.arguments, record)
        if result.stale_target is not None:  # changed again since the undo was asked: not run
            record.resolution, record.reason = "stale", "the file changed after the undo was asked; not run"
            await self._resolutions.mirror_again(record)
        return result

    async def _watch(self, record: ApprovalRecord) -> None:
        """Mirror one request into the projection, expire it on time, mirror its resolution."""
        ctx, book, status = self._ctx, self._ctx.book, self._ctx.status
        events = [
            status.event("permission.request", record.request_id, {"request_id": record.request_id}),
            status.event("turn.awaiting_approval", record.request_id, {"pending": book.pending_count()}),
        ]
        await calls.project(
            ApprovalRequestedProjection(
                approval=record,
                kv_snapshot=ctx.owner.kv(),
                conversation=status.snapshot("awaiting_approval", book.pending(), events),
            )
        )
        await RequestTimers(
            record,
            expire=lambda: book.expire(record.request_id, workflow.now(), ctx.approval_timeout_seconds),
            changed=lambda what: calls.project_approval_changed(record, what),
            outbox=ctx.outbox,
            keep=lambda timer: self.approved.keep_timer(record, timer),
        ).wait()
        await self._resolutions.mirror(record)

    async def _execute(
        self,
        turn_id: str,
        call: ToolCall,
        spec: ToolDef,
        arguments: dict[str, Any],
        record: ApprovalRecord | None = None,
    ) -> ToolResult:
        ctx = self._ctx
        if spec.source == "subagent":  # a child conversation, no activity
            return await ctx.owner.delegate(call, arguments)
        main_argument = main_argument_text(spec, arguments)
        request = ToolRequest(
            conversation_id=ctx.conversation_id,
            turn_id=turn_id,
            tool_call_id=call.id,
            request_id=record.request_id if record is not None else request_id_for(ctx.conversation_id, call.id),
            tool_name=spec.name,
            arguments=arguments,
            kv=ctx.owner.kv(),
            tool=None if spec.source == "builtin" else spec,
            network=network_allowed(ctx.policy, spec, main_argument),
            workspace=ctx.owner.workspace_key(),
            target_hash=Previewer.target_hash(record, spec.name),
            supplied=record.sealed_supplied if record is not None else {},
        )
        tool_waits = self._lock.locked()
        async with self._lock:
            summary = f"{spec.name}: {main_argument[:80]}"
            result = await self.approved.run(request, record, spec.source, summary, tool_waits)
        if result.kv is not None:
            ctx.owner.replace_kv(result.kv)
        return result

    def _record(self, call: ToolCall, content: str) -> None:
        self._ctx.owner.append_message(ChatMessage(role="tool", tool_call_id=call.id, name=call.name, content=content))


async def _decided(record: ApprovalRecord) -> None:
    await workflow.wait_condition(lambda: record.resolution is not None)
