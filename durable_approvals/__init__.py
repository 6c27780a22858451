"""What a caller's workflow imports to ask a person before it acts: `request_approval` (or, from
another namespace, `request_approval_via_nexus`) and the wire types of the `ApprovalRequest`
workflow. Depends on temporalio (and its nexusrpc) and pydantic only, so it brings none of the
service's own packages into the caller's project."""

from durable_approvals.nexus_caller import nexus_request_id, request_approval_via_nexus
from durable_approvals.nexus_service import ApprovalsService, NexusApprovalRequest
from durable_approvals.once import run_approved_once
from durable_approvals.types import (
    APPROVAL_REQUEST_WORKFLOW,
    DEFAULT_TASK_QUEUE,
    ApprovalRequestInput,
    ApprovalResult,
    EffectOutcome,
    Requester,
    RequestOutcome,
    derived_request_id,
)
from durable_approvals.workflow import request_approval

__all__ = [
    "APPROVAL_REQUEST_WORKFLOW",
    "DEFAULT_TASK_QUEUE",
    "ApprovalRequestInput",
    "ApprovalResult",
    "ApprovalsService",
    "EffectOutcome",
    "NexusApprovalRequest",
    "RequestOutcome",
    "Requester",
    "derived_request_id",
    "nexus_request_id",
    "request_approval",
    "request_approval_via_nexus",
    "run_approved_once",
]
