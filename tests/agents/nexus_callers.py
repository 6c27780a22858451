"""A pipeline of another team, in its own namespace, that asks for a person's yes through the
`approvals` Nexus endpoint (durable_approvals.request_approval_via_nexus) and writes only when
approved. Its worker knows nothing of the service but the endpoint's name."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_approvals import EffectOutcome
    from durable_approvals.nexus_caller import request_approval_via_nexus
    from tests.support.caller_workflows import JobOutcome, WriteJob, write_release_file


class NexusWriteJob(WriteJob):
    endpoint: str


@workflow.defn(name="NexusReleasePipeline")
class NexusReleasePipeline:
    @workflow.run
    async def run(self, job: NexusWriteJob) -> JobOutcome:
        approval = await request_approval_via_nexus(
            job.endpoint,
            "write_file",
            {"path": job.path, "content": job.content},
            key=job.key,
            title=f"Write {job.path}",
            context="the release needs its notes",
            agent="release-pipeline",
            timeout_seconds=job.timeout_seconds,
        )
        if not approval.approved:
            return JobOutcome(approval=approval, effect=EffectOutcome(state="not_approved"))
        approved = job.model_copy(update=approval.arguments)
        # The ledger's run-once helper reaches the service's own namespace only: here, a plain activity.
        wrote = await workflow.execute_activity(
            write_release_file, approved, start_to_close_timeout=timedelta(seconds=30)
        )
        return JobOutcome(approval=approval, effect=EffectOutcome(state="ran", result=wrote))
