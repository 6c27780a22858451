"""ApprovalRequestWorkflow: one approval request that any workflow, in any SDK, can start.

It judges the call by the deployment's rules (deny > ask > allow, approver rules, M-of-N, edits)
with the same pure code a conversation uses, writes the same read-model rows (so the request
shows in the inbox, `pending`, Slack and the audit), takes decisions from every door under the
conversation's signal and update names, and returns the decision. Its workflow id is the
request id, and it is its own "conversation" in the read model: the doors find it by that id.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from workflows import patches

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from core.approvals import ApprovalBook
    from core.approvers import approvers_for, keeps_asking, not_by_for, required_for
    from core.contract import ERROR_INVALID_REQUEST, QUERY_GET_STATE
    from core.conversation_model import ApprovalRecord, ConversationState, arguments_hash
    from core.edits import EditDesk
    from core.ids import InvalidConversationId, check_conversation_id
    from core.notify_plan import plan_for
    from core.policy import evaluate
    from core.policy_rules import NotifyPlan, PolicyRules
    from core.projection_model import ApprovalRequestedProjection
    from core.subagent_policy import narrow
    from core.tool_model import ToolDef
    from core.tool_registry import main_argument_text
    from core.tool_specs import TOOL_SPECS
    from durable_approvals.types import APPROVAL_REQUEST_WORKFLOW, ApprovalRequestInput, ApprovalResult
    from workflows import activity_calls as calls
    from workflows.approved_calls import ResolutionMirror
    from workflows.before_asking import AskedCall, BeforeAsking
    from workflows.decision_handlers import DecisionHandlers
    from workflows.notify_outbox import NotificationOutbox
    from workflows.reminders import RequestTimers
    from workflows.status import StatusKeeper


@workflow.defn(name=APPROVAL_REQUEST_WORKFLOW)
class ApprovalRequestWorkflow(DecisionHandlers):
    @workflow.init
    def __init__(self, request: ApprovalRequestInput) -> None:
        self._request = request
        self._id = workflow.info().workflow_id
        self._book = ApprovalBook(self._id, [], {})
        self._status = StatusKeeper(self._id)
        self._outbox = NotificationOutbox()
        self._record: ApprovalRecord | None = None
        self._resolutions = ResolutionMirror(self._book, self._status, lambda: True)
        self._door_may_write = False  # REQUEST_RESOLUTION_BY_THE_DOOR, checked when the request is asked

    @workflow.run
    async def run(self, request: ApprovalRequestInput) -> ApprovalResult:
        try:
            check_conversation_id(self._id)
            rules_of_request = None if request.rules is None else PolicyRules.model_validate(request.rules)
        except (InvalidConversationId, ValidationError) as err:
            raise ApplicationError(f"invalid approval request: {err}", type=ERROR_INVALID_REQUEST) from None
        service = await calls.service_rules(self._id)
        if service.earlier is not None:
            # The caller ran again under the same request id: the decision stands, asked once.
            return ApprovalResult.model_validate(service.earlier)
        rules = narrow(service.policy, rules_of_request)
        tool = _tool_def(request)
        text = main_argument_text(tool, request.arguments)
        verdict = evaluate(rules, tool, text)
        if verdict == "allow" and keeps_asking(rules, tool, request.arguments, text):
            verdict = "ask"
        if verdict != "ask":
            reason = "a deny rule of the policy forbids it" if verdict == "deny" else "the policy allows it"
            return self._result("allow" if verdict == "allow" else "deny", request.arguments, "policy", reason)
        record = self._open(rules, tool, service.approval_timeout_seconds)
        judged = BeforeAsking(self._id, lambda: rules, self._book, self._resolutions, None)
        await judged.decide([AskedCall(self._id, tool, request.arguments, lambda: record)], request.context)
        if record.resolution is not None:  # a person's grant or the pre-screen decided it
            return self._from_record(record)
        try:
            await self._wait(record, service.approval_timeout_seconds)
        except asyncio.CancelledError:
            # The caller was cancelled or ended: the request ends with it, and says so in the inbox.
            self._book.cancel_all(workflow.now())
            record.reason = "the requesting workflow was canceled"
            await self._mirror(record)
            raise
        return self._from_record(record)

    def _open(self, rules: PolicyRules, tool: ToolDef, default_timeout: float) -> ApprovalRecord:
        request, now = self._request, workflow.now()
        approvers = approvers_for(rules, tool, request.arguments)
        timeout = request.timeout_seconds or default_timeout
        record = ApprovalRecord(
            request_id=self._id,
            conversation_id=self._id,
            turn_id="request",
            tool_call_id=request.key or "request",
            tool_name=tool.name,
            permission_type=tool.permission_type,
            arguments=request.arguments,
            created_at=now,
            expires_at=now + timedelta(seconds=timeout),
            tool_source=tool.source,
            tool_origin=tool.origin,
            tool_hash=tool.definition_hash(),
            annotations=_card(request),
            approvers=approvers,
            required=required_for(rules, tool, request.arguments),
            not_by=not_by_for(rules, tool, request.arguments, None),
            notify=_with_channels(plan_for(rules, tool, request.arguments, approvers), request.notify),
            editable=request.editable,
        )
        self._book.open(record)
        self._book.edits = EditDesk(rules, None, lambda name: tool if name == tool.name else None, lambda: True)
        self._record = record
        return record

    async def _wait(self, record: ApprovalRecord, default_timeout: float) -> None:
        book, status = self._book, self._status
        events = [
            status.event("request.opened", record.request_id, _card(self._request)),
            status.event("permission.request", record.request_id, {"request_id": record.request_id}),
        ]
        # Checked in the asking task, so its marker is not one more command of the deciding task.
        self._door_may_write = workflow.patched(patches.REQUEST_RESOLUTION_BY_THE_DOOR)
        await calls.project(
            ApprovalRequestedProjection(
                approval=record,
                kv_snapshot={},
                conversation=status.snapshot("awaiting_approval", book.pending(), events),
            )
        )
        timeout = self._request.timeout_seconds or default_timeout
        await RequestTimers(
            record,
            expire=lambda: book.expire(record.request_id, workflow.now(), timeout),
            changed=lambda what: calls.project_approval_changed(record, what),
            outbox=self._outbox,
        ).wait()
        await self._mirror(record)

    def _hand_resolution(self, request_id: str) -> dict[str, Any] | None:
        """A decision by the `decide` update of a door that writes the read model: the resolution
        goes back in the update's result and that door writes it, so the deciding task runs no
        local activity and the request ends (and its caller hears) that much sooner. If the door
        dies before it writes, the failure watch writes it from this history
        (workflows/request_healing.py). A request that notified channels writes its own: the
        worker's write also updates the messages posted for it (worker.py, `on_resolved`)."""
        record = self._record
        if not self._door_may_write or record is None or record.resolution is None or _notified(record):
            return None
        handed = self._resolutions.hand_to_door(record)
        return None if handed is None else handed.model_dump(mode="json")

    async def _mirror(self, record: ApprovalRecord) -> None:
        """The resolution into the read model, the request's last step before the caller hears."""
        if self._resolutions.handed(record.request_id):
            return  # before the patch check: the deciding task records no marker either
        locally = workflow.patched(patches.REQUEST_RESOLUTION_LOCAL)
        await self._resolutions.mirror(record, locally)

    def _from_record(self, record: ApprovalRecord) -> ApprovalResult:
        resolution = record.resolution or "canceled"
        outcome = "allow" if resolution == "always_allow" else resolution
        arguments = record.edited_arguments if record.edited_arguments is not None else record.arguments
        return self._result(outcome, arguments, record.decided_via, record.reason, record.decided_by, record)

    def _result(
        self,
        decision: Any,
        arguments: dict[str, Any],
        door: str | None,
        reason: str | None,
        decided_by: str | None = None,
        record: ApprovalRecord | None = None,
    ) -> ApprovalResult:
        return ApprovalResult(
            request_id=self._id,
            decision=decision,
            arguments=arguments,
            args_hash=arguments_hash(arguments),
            decided_by=decided_by if record is not None else "policy",
            door=door if record is None or decision not in ("expired", "canceled") else None,
            reason=reason,
            decided_at=record.resolved_at if record is not None else workflow.now(),
        )

    @workflow.query(name=QUERY_GET_STATE)
    def get_state(self) -> ConversationState:
        """The request as the doors read a conversation's state (one pending call, no messages)."""
        return ConversationState(
            conversation_id=self._id,
            turn_status=self._status.turn_status,
            turn_id="request",
            messages=[],
            pending_approvals=self._book.pending(),
            always_allow=[],
            auto_approve=False,
            resolutions=self._book.resolutions(),
        )


def _tool_def(request: ApprovalRequestInput) -> ToolDef:
    """A built-in's definition keeps its rule argument (so `write_file(deploy/**)` matches its
    path); any other tool's rules match the canonical JSON of its arguments."""
    origin = (request.requester.agent or request.requester.workflow_id) if request.requester else None
    known = TOOL_SPECS.get(request.tool)
    base = known or ToolDef(
        name=request.tool,
        description=request.title or request.tool,
        parameters={"type": "object"},
        permission_type="execute",
    )
    return base.model_copy(update={"source": "external", "origin": origin or "external"})


def _card(request: ApprovalRequestInput) -> dict[str, Any]:
    """What the card shows beside the call: its title, the agent's reason, who asks."""
    card: dict[str, Any] = {"title": request.title or request.tool}
    if request.context:
        card["context"] = request.context
    if request.requester is not None:
        card["requester"] = request.requester.model_dump(exclude_none=True)
    return card


def _notified(record: ApprovalRecord) -> bool:
    plan = record.notify
    return plan is not None and bool(plan.channels or plan.escalate_channels)


def _with_channels(plan: NotifyPlan | None, channels: list[str] | None) -> NotifyPlan | None:
    if not channels:
        return plan
    plan = plan or NotifyPlan()
    plan.channels += [name for name in channels if name not in plan.channels]
    return plan
