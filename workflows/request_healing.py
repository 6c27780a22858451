"""A request's resolution that its door did not write, written from Temporal's history.

An `ApprovalRequest` decided by a door's `decide` update hands its resolution back in the update's
result, and that door writes it to the read model (workflows/approved_calls.py `hand_to_door`,
doors/decision_delivery.py). A door that dies between the two (a killed CLI, a UI restarted, an
update answered after the door gave up and signalled) leaves the request completed in Temporal
and pending in the read model. The failure watch, which already describes every workflow the
projection shows open, hands each description here: a completed `ApprovalRequest` has its handed
resolution read back from the update's outcome in its history and written, the very write (same
rows, same event key) the door would have made, so a late door and the watch never differ. A
caller's approved effect (activities/approved_effects.py), which may start before a slow door has
written, heals its request the same way before it reads the row again.

Not workflow code: it sits beside the corridor it completes, where both the worker's activities
and the maintenance jobs may import it (tests/project/test_import_rules.py).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus
from temporalio.service import RPCError

from core.conversation_model import DecisionResult
from durable_approvals.types import APPROVAL_REQUEST_WORKFLOW
from workflows.approved_calls import ResolutionStore, write_door_resolution

RPC_TIMEOUT = timedelta(seconds=5)
# The deciding update is in the request's last workflow task: the newest events hold it.
NEWEST_EVENTS = 50


async def heal_closed_request(client: Client, store: ResolutionStore, described: WorkflowExecutionDescription) -> bool:
    """Write the resolution a completed request handed its door; False when it is not one that did."""
    if described.workflow_type != APPROVAL_REQUEST_WORKFLOW or described.status != WorkflowExecutionStatus.COMPLETED:
        return False
    handed = await handed_resolution(client, described.id, described.run_id)
    return handed is not None and await write_door_resolution(handed, store)


async def heal_request(client: Client, store: ResolutionStore, row: dict[str, Any]) -> bool:
    """The same for a pending row (its workflow's newest run), for a reader that finds it pending
    although the request's caller has heard its decision; False also when Temporal cannot say."""
    try:
        described = await client.get_workflow_handle(row["conversation_id"]).describe(rpc_timeout=RPC_TIMEOUT)
        return await heal_closed_request(client, store, described)
    except RPCError:
        return False


async def handed_resolution(client: Client, request_id: str, run_id: str) -> DecisionResult | None:
    """The result of the run's newest `decide` update that handed its resolution back, if one did."""
    request = GetWorkflowExecutionHistoryReverseRequest(
        namespace=client.namespace,
        execution=WorkflowExecution(workflow_id=request_id, run_id=run_id),
        maximum_page_size=NEWEST_EVENTS,
    )
    page = await client.workflow_service.get_workflow_execution_history_reverse(request, timeout=RPC_TIMEOUT)
    for event in page.history.events:
        if not event.HasField("workflow_execution_update_completed_event_attributes"):
            continue
        outcome = event.workflow_execution_update_completed_event_attributes.outcome
        if not outcome.HasField("success") or not outcome.success.payloads:
            continue
        [result] = await client.data_converter.decode(outcome.success.payloads[:1], [DecisionResult])
        if result.resolved is not None:
            return result
    return None
