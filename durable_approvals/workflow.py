"""`request_approval`: ask a person from inside any Python workflow, as a child workflow.

The request outlives the caller's worker: its state is the child's history, so a caller that is
killed while a person thinks resumes on the same request. If the caller is cancelled or ends
first, the request is canceled with it (never left waiting in the inbox).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from durable_approvals.types import (
        APPROVAL_REQUEST_RESULT,
        APPROVAL_REQUEST_WORKFLOW,
        DEFAULT_TASK_QUEUE,
        ApprovalRequestInput,
        ApprovalResult,
        Requester,
        derived_request_id,
    )


def caller_request(
    tool: str, arguments: dict[str, Any], key: str, agent: str | None, **fields: Any
) -> ApprovalRequestInput:
    """The request as the calling workflow asks it, with that workflow (and its namespace, for
    the card's link) as its requester: the child-workflow and the Nexus helpers send the same input."""
    info = workflow.info()
    requester = Requester(workflow_id=info.workflow_id, run_id=info.run_id, agent=agent, namespace=info.namespace)
    return ApprovalRequestInput(tool=tool, arguments=arguments, key=key, requester=requester, **fields)


async def request_approval(
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
    task_queue: str = DEFAULT_TASK_QUEUE,
) -> ApprovalResult:
    """Wait for the decision on one call and return it. `key` names the request within the
    calling workflow (its id is derived from both unless `request_id` is given). `editable=False`
    where the caller cannot run edited arguments: every door then refuses an edit up front."""
    info = workflow.info()
    request = caller_request(
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
    rid = request_id or derived_request_id(info.workflow_id, key)
    try:
        return await workflow.execute_child_workflow(
            APPROVAL_REQUEST_WORKFLOW,
            request,
            id=rid,
            task_queue=task_queue,
            result_type=ApprovalResult,
            parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            static_summary=f"approval: {title or tool}",
        )
    except WorkflowAlreadyStartedError:
        # A retried caller (a new run, the same key): the request exists, decided or still waiting.
        # Its result is read by the service, never asked for again.
        return await workflow.execute_activity(
            APPROVAL_REQUEST_RESULT,
            rid,
            task_queue=task_queue,
            result_type=ApprovalResult,
            start_to_close_timeout=_RESULT_WAIT,
            heartbeat_timeout=timedelta(seconds=30),
            summary=f"approval: the existing request {rid}",
        )


# A retried caller may find its request still waiting for a person: it waits as long as a request may.
_RESULT_WAIT = timedelta(days=31)
