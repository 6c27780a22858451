"""A plain workflow that asks for a person's yes before it acts, as a deploy pipeline would:
it calls `request_approval` (durable_approvals) and runs its side effect only when approved."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel
from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from durable_approvals import ApprovalResult, EffectOutcome, request_approval, run_approved_once


class WriteJob(BaseModel):
    path: str
    content: str
    out_dir: str
    approvals_queue: str
    timeout_seconds: float | None = None
    key: str = "write"


class JobOutcome(BaseModel):
    approval: ApprovalResult
    effect: EffectOutcome

    @property
    def wrote(self) -> bool:
        return self.effect.state == "ran"


@activity.defn(name="write_release_file")
async def write_release_file(job: WriteJob) -> int:
    """The approved side effect: appends, so a second run would show twice."""
    with (Path(job.out_dir) / job.path).open("a") as out:
        return out.write(job.content)


@workflow.defn(name="ReleasePipeline")
class ReleasePipeline:
    @workflow.run
    async def run(self, job: WriteJob) -> JobOutcome:
        approval = await request_approval(
            "write_file",
            {"path": job.path, "content": job.content},
            key=job.key,
            title=f"Write {job.path}",
            context="the release needs its notes",
            agent="release-pipeline",
            timeout_seconds=job.timeout_seconds,
            task_queue=job.approvals_queue,
        )
        approved = job.model_copy(update=approval.arguments)
        effect = await run_approved_once(
            approval,
            write_release_file,
            approved,
            name="write release file",
            start_to_close_timeout=timedelta(seconds=30),
            task_queue=job.approvals_queue,
        )
        return JobOutcome(approval=approval, effect=effect)
