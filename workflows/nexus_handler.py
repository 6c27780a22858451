"""The handler of the `approvals` Nexus service, run by the worker on the shared task queue (it
is not workflow code: it runs beside the workflows, like a client starting one).

Its one operation, `request`, starts the `ApprovalRequest` workflow under the caller's request id
and completes with the workflow's result (Temporal delivers it to the caller's namespace). A start
retried while the request waits joins that request; a request already decided is not opened again.
"""

from __future__ import annotations

import nexusrpc
from nexusrpc.handler import service_handler
from temporalio import nexus
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from core.ids import InvalidConversationId, check_conversation_id
from durable_approvals.nexus_service import ApprovalsService, NexusApprovalRequest
from durable_approvals.types import ApprovalResult
from workflows.approval_request import ApprovalRequestWorkflow


@service_handler(service=ApprovalsService)
class ApprovalsNexusHandler:
    @nexus.workflow_run_operation
    async def request(
        self, ctx: nexus.WorkflowRunOperationContext, input: NexusApprovalRequest
    ) -> nexus.WorkflowHandle[ApprovalResult]:
        try:
            check_conversation_id(input.request_id)
        except InvalidConversationId as err:
            raise nexusrpc.HandlerError(str(err), type=nexusrpc.HandlerErrorType.BAD_REQUEST) from None
        try:
            return await ctx.start_workflow(
                ApprovalRequestWorkflow.run,
                input.workflow_input(),
                id=input.request_id,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                static_summary=f"approval: {input.title or input.tool}",
            )
        except WorkflowAlreadyStartedError:
            raise nexusrpc.OperationError(
                f"approval request {input.request_id} was already decided", state=nexusrpc.OperationErrorState.FAILED
            ) from None
