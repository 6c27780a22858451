"""Asking from outside Temporal: start an `ApprovalRequest` for a caller's key, and wait for its end.

Callers that are not Temporal workflows (an HTTP client, Claude Code's permission tool, a CI job)
ask through here. The request is an ordinary `ApprovalRequest` workflow (the inbox, the rules, the
audit and the expiry apply), its id derived from the asker and the caller's idempotency key, so
the same key always names the same request: a second ask finds the first (running or ended) and
never opens another.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from config.settings import Settings
from durable_approvals.types import (
    APPROVAL_REQUEST_WORKFLOW,
    ApprovalRequestInput,
    ApprovalResult,
    Requester,
    derived_request_id,
)

RPC_TIMEOUT = timedelta(seconds=10)


def request_id_for(asker: str, key: str) -> str:
    """The same asker and key always name the same request."""
    return derived_request_id(f"ask:{asker}", key)


async def ask(client: Client, settings: Settings, request: ApprovalRequestInput, key: str, asker: str) -> str:
    """Start the request (or find the one this key started); its request id."""
    request_id = request_id_for(asker, key)
    requester = request.requester or Requester(agent=asker)
    started = request.model_copy(update={"key": key, "requester": requester})
    with contextlib.suppress(WorkflowAlreadyStartedError):  # asked before and already decided: the same request
        await client.start_workflow(
            APPROVAL_REQUEST_WORKFLOW,
            started,
            id=request_id,
            task_queue=settings.task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            rpc_timeout=RPC_TIMEOUT,
        )
    return request_id


async def outcome(client: Client, request_id: str, wait_seconds: float = 0.0) -> ApprovalResult | None:
    """The request's result once it has one, waiting at most wait_seconds; None while it waits.
    A request that failed (an invalid one) raises WorkflowFailureError."""
    handle = client.get_workflow_handle(request_id, result_type=ApprovalResult)
    if wait_seconds <= 0:
        described = await handle.describe(rpc_timeout=RPC_TIMEOUT)
        if described.status == WorkflowExecutionStatus.RUNNING:
            return None
        return await handle.result(rpc_timeout=RPC_TIMEOUT)
    try:
        return await asyncio.wait_for(handle.result(), wait_seconds)
    except TimeoutError:
        return None


async def cancel(client: Client, request_id: str) -> None:
    """Cancel a waiting request: it resolves `canceled` and says so in the inbox."""
    await client.get_workflow_handle(request_id).cancel(rpc_timeout=RPC_TIMEOUT)


__all__ = ["WorkflowFailureError", "ask", "cancel", "outcome", "request_id_for"]
