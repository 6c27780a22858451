"""The result of an ApprovalRequest that already exists, for a caller whose retried run finds
its request started (`durable_approvals.request_approval`): the request is never opened twice,
and a decided one stays decided. Waits, heartbeating, while a person has not decided yet."""

from __future__ import annotations

import asyncio
import contextlib

from temporalio import activity

from durable_approvals.types import APPROVAL_REQUEST_RESULT, ApprovalResult

HEARTBEAT_EVERY = 10.0


@activity.defn(name=APPROVAL_REQUEST_RESULT)
async def approval_request_result(request_id: str) -> ApprovalResult:
    handle = activity.client().get_workflow_handle(request_id, result_type=ApprovalResult)
    waiting = asyncio.ensure_future(handle.result())
    try:
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=HEARTBEAT_EVERY)
            if done:
                return waiting.result()
            activity.heartbeat()
    finally:
        waiting.cancel()
        with contextlib.suppress(BaseException):
            await waiting
