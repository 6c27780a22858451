"""How the doors send an edit: claimed like any decision, then checked by the workflow itself.

An edit's checks (the tool's schema, the deny rules and the approver rules on the edited call)
need the conversation's own rules and tools, which only the workflow holds, so an edit goes by
the `decide` update: its validator answers at once, and a refused edit releases its claim and
changes nothing. An update needs a running worker: a bounded query asks first, and with no worker
answering the edit is refused as unchecked before anything is sent.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import Client, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode

from core.contract import ERROR_EDIT_UNCHECKED, QUERY_GET_STATE, UPDATE_DECIDE
from core.conversation_model import DecisionInput, DecisionResult
from core.refusals import DecisionRefused
from doors.decision_delivery import write_handed_resolution
from storage.store import ProjectionStore

EDIT_CHECK_TIMEOUT = timedelta(seconds=10)
WORKER_PROBE_TIMEOUT = timedelta(seconds=2)


async def send_edit(client: Client, decision: DecisionInput, store: ProjectionStore) -> str:
    """Claim the request, then let the workflow check and apply the edit; returns the conversation.
    Raises DecisionRefused (the workflow's refusal, or no worker to check it) or RPCError."""
    row = await store.approval(decision.request_id)
    if row is not None and row["decision"] is None:
        await _worker_answers(client, row["conversation_id"], decision.request_id)
    claimed = await store.claim_decision(decision)
    handle = client.get_workflow_handle(claimed.conversation_id)
    try:
        sent = decision.model_copy(update={"writes_resolution": True})  # this door writes it (decision_delivery.py)
        result = await handle.execute_update(
            UPDATE_DECIDE, sent, result_type=DecisionResult, rpc_timeout=EDIT_CHECK_TIMEOUT
        )
    except WorkflowUpdateFailedError as err:
        await store.release_claim(decision.request_id)
        raise DecisionRefused.from_update_error(err) from None
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        await store.release_claim(decision.request_id)
        raise DecisionRefused(
            ERROR_EDIT_UNCHECKED,
            f"no worker checked the edit of {decision.request_id} within {EDIT_CHECK_TIMEOUT.seconds} s:"
            " an edit needs a running worker; nothing was changed",
        ) from None
    except RPCError:
        await store.release_claim(decision.request_id)
        raise
    await write_handed_resolution(store, result)
    return claimed.conversation_id


async def _worker_answers(client: Client, conversation_id: str, request_id: str) -> None:
    """Ask the workflow first (a bounded query): with no worker to answer, the edit is refused
    before anything is sent, so no update is left behind to land later."""
    try:
        await client.get_workflow_handle(conversation_id).query(QUERY_GET_STATE, rpc_timeout=WORKER_PROBE_TIMEOUT)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise
        raise DecisionRefused(
            ERROR_EDIT_UNCHECKED,
            f"no worker answered, so the edit of {request_id} cannot be checked now: an edit needs a running"
            " worker; nothing was sent",
        ) from None
