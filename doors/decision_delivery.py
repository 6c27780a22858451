"""How a claimed decision reaches its workflow (a conversation or an `ApprovalRequest`): by the
`decide` update, with the signal as the fallback when no worker answers in time.

The time from a decision to the approved tool's result (or to a request's caller resumed) is what
asking costs. An update reaches a waiting workflow's worker at once, in a workflow task the server
hands straight to it; a signal's workflow task first goes through the server's task scheduling
(about 25 ms on the dev server, see docs/benchmarks.md). The workflow applies the decision and
starts what follows (the tool, or a request's end) in that one task. The signal stays the way a
decision is kept with no worker up: if the update is not answered within `UPDATE_WAIT`, or the
server cannot take it now (too many updates in flight for one workflow), the same decision goes as
a signal, and whichever of the two copies the workflow sees second is refused by the one refusal
rule, so the decision lands once.

A door that holds the read model (`store`) asks an `ApprovalRequest` to hand its resolution back
in the update's result and writes it itself (`writes_resolution`): the request then ends without
a write of its own in its deciding task. A decision that went as a signal is written by the
workflow, as before; one the door could not write is written by the failure watch once the
request has closed (workflows/request_healing.py).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode

from core.contract import SIGNAL_APPROVAL_DECISION, UPDATE_DECIDE
from core.conversation_model import DecisionInput, DecisionResult
from core.refusals import DecisionRefused
from storage.store import ProjectionStore
from workflows.approved_calls import write_door_resolution

log = logging.getLogger(__name__)
UPDATE_WAIT = timedelta(seconds=2)


async def deliver_decision(
    handle: WorkflowHandle, decision: DecisionInput, store: ProjectionStore | None = None
) -> None:
    """Send a claimed decision to its workflow. Raises DecisionRefused when the workflow refuses it
    (nothing changed) and RPCError when the workflow cannot take it (ended: NOT_FOUND). `store`:
    the door's read model, where it writes the resolution an `ApprovalRequest` hands back."""
    sent = decision if store is None else decision.model_copy(update={"writes_resolution": True})
    try:
        result = await handle.execute_update(UPDATE_DECIDE, sent, result_type=DecisionResult, rpc_timeout=UPDATE_WAIT)
    except WorkflowUpdateFailedError as err:
        raise DecisionRefused.from_update_error(err) from None
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        await handle.signal(SIGNAL_APPROVAL_DECISION, decision)
        return
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise
        await handle.signal(SIGNAL_APPROVAL_DECISION, decision)
        return
    if store is not None:
        await write_handed_resolution(store, result)


async def write_handed_resolution(store: ProjectionStore, result: DecisionResult) -> None:
    """Write the resolution the workflow handed back, if it did (workflows/approved_calls.py). Never
    raises: the decision is recorded in Temporal already, and the failure watch writes what this
    could not."""
    try:
        await write_door_resolution(result, store)
    except Exception:
        log.warning("could not write the resolution of %s; the failure watch will", result.request_id, exc_info=True)
