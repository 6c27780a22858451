"""The callers of the request latency scenario: a workflow that asks for an approval, as another
team's would, then runs the floor's activity with the approved command.

One workflow type, three ways to ask: `request_approval` (an `ApprovalRequest` child, in our
namespace), `request_approval_via_nexus` (from another namespace, through the endpoint), or a bare
child that waits on one signal (the floor of asking by child workflow). What
follows the decision is the floor's own activity, so the ratio to the floor is the asking alone.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import BaseModel
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from bench.floor import BARE_REQUEST_WORKFLOW, FLOOR_ACTIVITY
    from durable_approvals import request_approval
    from durable_approvals.nexus_caller import request_approval_via_nexus

CALLER_WORKFLOW = "BenchRequestCaller"
REQUEST_KEY = "bench"


Via = Literal["child", "nexus", "bare"]


class CallerJob(BaseModel):
    via: Via
    command: str
    approvals_queue: str = ""
    endpoint: str = ""


@workflow.defn(name=CALLER_WORKFLOW)
class RequestCaller:
    @workflow.run
    async def run(self, job: CallerJob) -> str:
        call = ("run_shell", {"command": job.command})
        if job.via == "bare":
            await workflow.execute_child_workflow(
                BARE_REQUEST_WORKFLOW, id=bare_request_id(workflow.info().workflow_id), task_queue=job.approvals_queue
            )
            return await self._run_floor_activity(job.command)
        if job.via == "child":
            approval = await request_approval(*call, key=REQUEST_KEY, task_queue=job.approvals_queue)
        else:
            approval = await request_approval_via_nexus(job.endpoint, *call, key=REQUEST_KEY)
        if not approval.approved:
            return f"not approved: {approval.decision}"
        return await self._run_floor_activity(approval.arguments["command"])

    async def _run_floor_activity(self, command: str) -> str:
        result: str = await workflow.execute_activity(
            FLOOR_ACTIVITY,
            command,
            start_to_close_timeout=timedelta(minutes=1),
            heartbeat_timeout=timedelta(seconds=10),
        )
        return result


def bare_request_id(caller_id: str) -> str:
    return f"{caller_id}-bare"
