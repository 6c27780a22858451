"""What the CLI and the UI do to conversations: start, send, decide, read state."""

from __future__ import annotations

import contextlib
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta

from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from config.settings import Settings
from config.telemetry import span, tracing_active
from core.contract import (
    ERROR_CONVERSATION_CLOSED,
    ERROR_REFUSED,
    ERROR_UNDELIVERED,
    ERROR_UNKNOWN_APPROVAL,
    QUERY_GET_STATE,
    SIGNAL_APPROVAL_DECISION,
    SIGNAL_CLOSE,
    SIGNAL_SET_AUTO_APPROVE,
    SIGNAL_SUBMIT_MESSAGE,
    UPDATE_EXTEND,
    UPDATE_MOVE,
    WORKFLOW_TYPE,
)
from core.conversation_model import (
    AutoApproveInput,
    CloseInput,
    ConversationInput,
    ConversationState,
    DecisionInput,
    Door,
    ExtensionInput,
    ExtensionResult,
    MessageInput,
    MoveInput,
    MoveResult,
)
from core.ids import check_conversation_id
from core.refusals import DecisionRefused
from doors.decision_delivery import deliver_decision
from storage.backend import StoreFull
from storage.store import ProjectionStore
from workflows.status import PENDING_APPROVALS_KEY, TURN_STATUS_KEY

log = logging.getLogger(__name__)
QUERY_TIMEOUT = timedelta(seconds=5)


def new_conversation_id() -> str:
    return f"conv-{uuid.uuid4().hex[:12]}"


async def start_conversation(
    client: Client,
    settings: Settings,
    message: str,
    conversation_id: str | None = None,
    started_by: str | None = None,
) -> str:
    """Start one; an id outside the alphabet of core/ids.py raises InvalidConversationId.
    started_by: the principal the door verified (self-approval rules refuse them their own calls)."""
    conversation_id = check_conversation_id(conversation_id or new_conversation_id())
    await client.start_workflow(
        WORKFLOW_TYPE,
        _start_input(settings, conversation_id, started_by, [message]),
        id=conversation_id,
        task_queue=settings.task_queue,
        search_attributes=_START_ATTRIBUTES,
    )
    return conversation_id


async def send_or_start(
    client: Client, settings: Settings, conversation_id: str, message: str, started_by: str | None = None
) -> None:
    """Signal-with-start: the message goes to the running conversation of that id, or starts it.
    An ended conversation is not started again (WorkflowAlreadyStartedError): its id stays its own."""
    await client.start_workflow(
        WORKFLOW_TYPE,
        _start_input(settings, check_conversation_id(conversation_id), started_by, []),
        id=conversation_id,
        task_queue=settings.task_queue,
        search_attributes=_START_ATTRIBUTES,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        start_signal=SIGNAL_SUBMIT_MESSAGE,
        start_signal_args=[MessageInput(text=message)],
    )


_START_ATTRIBUTES = TypedSearchAttributes(
    [SearchAttributePair(TURN_STATUS_KEY, "running"), SearchAttributePair(PENDING_APPROVALS_KEY, 0)]
)


def _start_input(
    settings: Settings, conversation_id: str, started_by: str | None, inbox: list[str]
) -> ConversationInput:
    return ConversationInput(
        conversation_id=conversation_id,
        started_by=started_by,
        policy=settings.load_policy(),
        delegation=settings.load_delegation(),
        approval_timeout_seconds=settings.approval_timeout,
        host_gone_seconds=settings.host_gone_seconds,
        shadow_policy=settings.load_shadow_policy(),
        inbox=inbox,
        context_budget_tokens=settings.context_budget_tokens,
    )


async def send_message(client: Client, conversation_id: str, text: str) -> None:
    await client.get_workflow_handle(conversation_id).signal(SIGNAL_SUBMIT_MESSAGE, MessageInput(text=text))


async def close_conversation(
    client: Client, conversation_id: str, by: str | None = None, door: Door | None = None
) -> None:
    """End it; its pending approvals resolve as canceled. A finished one raises RPCError NOT_FOUND.
    `by` and `door` are kept as evidence of who closed it."""
    await client.get_workflow_handle(conversation_id).signal(SIGNAL_CLOSE, CloseInput(by=by, door=door))


async def set_auto_approve(
    client: Client, conversation_id: str, enabled: bool, by: str | None = None, door: Door | None = None
) -> None:
    """Auto-approve mode for one conversation: every ask is allowed, deny rules still apply."""
    switch = AutoApproveInput(enabled=enabled, by=by, door=door)
    await client.get_workflow_handle(conversation_id).signal(SIGNAL_SET_AUTO_APPROVE, switch)


async def send_decision(
    client: Client, settings: Settings, decision: DecisionInput, store: ProjectionStore | None = None
) -> str:
    """Claim the request (first wins), then send it to its workflow: by update, or by signal, which
    is kept even with no worker up (doors/decision_delivery.py).

    `store` is the caller's open projection store (the UI keeps one); without it one is opened here.
    """
    if store is None:
        store = ProjectionStore(settings.approvals_db)
        try:
            return await send_decision(client, settings, decision, store)
        finally:
            await store.close()
    row = await store.approval(decision.request_id) if tracing_active() else None
    parent: str | None = row.get("trace_parent") if row is not None else None
    try:
        # The decision's span joins the request's trace; Temporal's signal span is its child.
        with span("approval.decide", _decision_attributes(decision), parent):
            conversation_id = await _claim_and_send(client, decision, store)
    except DecisionRefused as refused:
        await _count(store, refused, decision)
        raise
    if decision.decision in ("allow", "always_allow") and decision.decided_by:
        await _note_rapid(store, settings, decision.decided_by)
    return conversation_id


async def _note_rapid(store: ProjectionStore, settings: Settings, person: str) -> None:
    """A run of approvals too fast to have been read is recorded (the page shows it); a notice that
    cannot be written never fails the decision, which has been sent."""
    try:
        await store.note_rapid_run(person, settings.rapid_approval_count, settings.rapid_approval_seconds)
    except Exception:
        log.warning("could not check %s's approvals for a rapid run", person, exc_info=True)


def _decision_attributes(decision: DecisionInput) -> dict[str, str | None]:
    """Who decided what, through which door: never the arguments, the reason or a token."""
    return {
        "approval.request_id": decision.request_id,
        "approval.decision": decision.decision,
        "approval.door": decision.door or "signal",
        "approval.decided_by": decision.decided_by,
    }


async def _count(store: ProjectionStore, refused: DecisionRefused, decision: DecisionInput) -> None:
    """Refusals feed the metrics; a count that cannot be written never hides the refusal itself."""
    try:
        await store.count_refusal(refused.error_type, decision.door)
    except Exception:
        log.warning("could not count the refusal of %s", decision.request_id, exc_info=True)


async def _claim_and_send(client: Client, decision: DecisionInput, store: ProjectionStore) -> str:
    if decision.decision == "edit":
        from doors.edit_control import send_edit

        return await send_edit(client, decision, store)
    try:
        claimed = await store.claim_decision(decision)
    except DecisionRefused as refused:
        if refused.earlier is not None:
            # The first decider may have died between its claim and its delivery: signal the first
            # decision again so it is never lost (a second copy changes nothing in the workflow).
            with contextlib.suppress(RPCError):
                earlier_handle = client.get_workflow_handle(refused.earlier.conversation_id)
                await earlier_handle.signal(SIGNAL_APPROVAL_DECISION, refused.earlier.decision)
        raise
    handle: WorkflowHandle = client.get_workflow_handle(claimed.conversation_id)
    try:
        await deliver_decision(handle, decision, store)
    except (RPCError, DecisionRefused):
        await store.release(claimed)
        raise
    return claimed.conversation_id


@dataclass(frozen=True)
class BatchResult:
    """One call of a batch: sent (error_type None) or refused, with why."""

    request_id: str
    conversation_id: str | None = None
    error_type: str | None = None
    message: str | None = None


async def send_batch(
    client: Client, settings: Settings, decisions: list[DecisionInput], store: ProjectionStore
) -> list[BatchResult]:
    """Each decision on its own, in order: one refused or undeliverable call does not stop the others,
    and every call gets exactly one result."""
    results = []
    for decision in decisions:
        try:
            conversation_id = await send_decision(client, settings, decision, store)
        except DecisionRefused as err:
            results.append(BatchResult(decision.request_id, None, err.error_type, str(err)))
        except RPCError as err:
            # NOT_FOUND: the conversation has ended; anything else: Temporal could not take it now.
            kind = ERROR_CONVERSATION_CLOSED if err.status == RPCStatusCode.NOT_FOUND else ERROR_UNDELIVERED
            results.append(BatchResult(decision.request_id, None, kind, f"{decision.request_id}: {err.message}"))
        except StoreFull as err:  # the claim could not be written: nothing was sent, it may be sent again
            why = f"{decision.request_id}: not decided: {err}"
            results.append(BatchResult(decision.request_id, None, ERROR_UNDELIVERED, why))
        else:
            results.append(BatchResult(decision.request_id, conversation_id))
    return results


async def extend_approval(client: Client, extension: ExtensionInput, store: ProjectionStore) -> ExtensionResult:
    """Move a pending request's deadline by update: the workflow checks the approver rules and answers
    at once (it needs a running worker). A refusal raises DecisionRefused with the workflow's reason."""
    row = await store.approval(extension.request_id)
    if row is None:
        raise DecisionRefused(ERROR_UNKNOWN_APPROVAL, f"no approval request {extension.request_id}")
    handle = client.get_workflow_handle(row["conversation_id"])
    try:
        return await handle.execute_update(
            UPDATE_EXTEND, extension, result_type=ExtensionResult, rpc_timeout=QUERY_TIMEOUT
        )
    except WorkflowUpdateFailedError as err:
        raise DecisionRefused.from_update_error(err, ERROR_REFUSED) from None


async def move_conversation(
    client: Client, conversation_id: str, host_queue: str, by: str | None = None, door: Door | None = None
) -> MoveResult:
    """Re-pin the conversation's tools to another host queue, by update (it needs a running worker).
    A tool of it running refuses (DecisionRefused with the workflow's reason)."""
    handle = client.get_workflow_handle(conversation_id)
    try:
        return await handle.execute_update(
            UPDATE_MOVE, MoveInput(to=host_queue, by=by, door=door), result_type=MoveResult, rpc_timeout=QUERY_TIMEOUT
        )
    except WorkflowUpdateFailedError as err:
        raise DecisionRefused.from_update_error(err, ERROR_REFUSED) from None


async def get_state(client: Client, conversation_id: str, timeout: timedelta = QUERY_TIMEOUT) -> ConversationState:
    """Bounded: a query needs a worker, and with none it would wait forever."""
    handle = client.get_workflow_handle(conversation_id)
    return await handle.query(QUERY_GET_STATE, result_type=ConversationState, rpc_timeout=timeout)
