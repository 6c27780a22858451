"""The `approvals` Nexus service: what a workflow in another namespace (or another team's
cluster) imports to ask for an approval through a Nexus endpoint.

One operation, `request`, backed by an `ApprovalRequest` workflow in the service's namespace: it
completes when the request is decided, with the same `ApprovalResult` a child workflow returns.
Its input is the workflow's input plus the request id, which the caller chooses (the Python
helper derives it from the caller's namespace, workflow id and key, so a retried call names the
same request).
"""

from __future__ import annotations

import nexusrpc
from pydantic import Field

from durable_approvals.types import ApprovalRequestInput, ApprovalResult

APPROVALS_SERVICE = "approvals"
REQUEST_OPERATION = "request"


class NexusApprovalRequest(ApprovalRequestInput):
    """`ApprovalRequest`'s input and the id the request will have (its workflow id)."""

    request_id: str = Field(min_length=1, description="the request's id: the same id is the same request")

    def workflow_input(self) -> ApprovalRequestInput:
        return ApprovalRequestInput.model_validate(self.model_dump(exclude={"request_id"}))


@nexusrpc.service(name=APPROVALS_SERVICE)
class ApprovalsService:
    request: nexusrpc.Operation[NexusApprovalRequest, ApprovalResult] = nexusrpc.Operation(name=REQUEST_OPERATION)
