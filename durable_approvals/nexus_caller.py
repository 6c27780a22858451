"""`request_approval_via_nexus`: ask a person from a workflow in another namespace, through a
Nexus endpoint that targets the approvals service's namespace and task queue.

The caller's history holds the Nexus operation; the request's state lives in the service's
`ApprovalRequest` workflow. A cancelled caller cancels the operation, and so the request.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_approvals.nexus_service import ApprovalsService, NexusApprovalRequest
    from durable_approvals.types import ApprovalResult, derived_request_id
    from durable_approvals.workflow import caller_request


def nexus_request_id(namespace: str, workflow_id: str, key: str) -> str:
    """The helper's default request id: the caller's namespace is part of its name, so two
    namespaces with the same workflow id never share a request."""
    return derived_request_id(f"{namespace}/{workflow_id}", key)


async def request_approval_via_nexus(
    endpoint: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    key: str,
    title: str | None = None,
    context: str | None = None,
    agent: str | None = None,
    timeout_seconds: float | None = None,
    rules: dict[str, Any] | None = None,
    notify: list[str] | None = None,
    request_id: str | None = None,
    editable: bool = True,
    schedule_to_close_timeout: timedelta | None = None,
) -> ApprovalResult:
    """Wait for the decision on one call, asked through the Nexus `endpoint`, and return it."""
    info = workflow.info()
    asked = caller_request(
        tool,
        arguments,
        key,
        agent,
        title=title,
        context=context,
        timeout_seconds=timeout_seconds,
        rules=rules,
        notify=notify,
        editable=editable,
    )
    request = NexusApprovalRequest(
        request_id=request_id or nexus_request_id(info.namespace, info.workflow_id, key), **asked.model_dump()
    )
    approvals = workflow.create_nexus_client(service=ApprovalsService, endpoint=endpoint)
    return await approvals.execute_operation(
        ApprovalsService.request,
        request,
        schedule_to_close_timeout=schedule_to_close_timeout,
        summary=f"approval: {title or tool}",
    )
