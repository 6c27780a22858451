"""How a claimed decision reaches an `ApprovalRequest` workflow: by the `decide` update, with the
signal as the fallback when no worker answers in time.

A request's caller waits on the request's end, so the time from a decision to the caller resumed
is what asking costs. An update reaches a waiting workflow's worker without the server's
scheduling round trip a signal's workflow task takes, and the request applies it, writes its
resolution and ends in that one task. The signal stays the way a decision is kept with no worker
up: if the update is not answered within `UPDATE_WAIT`, the same decision goes as a signal, and
whichever of the two copies the workflow sees second is refused by the one refusal rule, so the
decision lands once. A conversation's decisions still go by signal (doors/control.py).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from core.models import ERROR_INVALID_DECISION, SIGNAL_APPROVAL_DECISION, UPDATE_DECIDE, DecisionInput, DecisionResult
from storage.claims import DecisionRefused

UPDATE_WAIT = timedelta(seconds=2)


def is_request(conversation_id: str, decision: DecisionInput) -> bool:
    """An `ApprovalRequest` is its own conversation in the read model: its workflow id is the
    request id (a conversation's requests have ids of their own)."""
    return conversation_id == decision.request_id


async def deliver_to_request(handle: WorkflowHandle, decision: DecisionInput) -> None:
    """Send a claimed decision to its request. Raises DecisionRefused when the workflow refuses it
    (nothing changed) and RPCError when the request cannot take it (ended: NOT_FOUND)."""
    try:
        await handle.execute_update(UPDATE_DECIDE, decision, result_type=DecisionResult, rpc_timeout=UPDATE_WAIT)
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError) and cause.type:
            raise DecisionRefused(cause.type, cause.message) from None
        raise DecisionRefused(ERROR_INVALID_DECISION, str(cause or err)) from None
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        await handle.signal(SIGNAL_APPROVAL_DECISION, decision)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise
        await handle.signal(SIGNAL_APPROVAL_DECISION, decision)
