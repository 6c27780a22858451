"""A workflow that runs the example's agent once per prompt, each run from a fresh history, as a
workflow that handles several tasks in turn would."""

from __future__ import annotations

from pydantic import BaseModel
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_approvals.pydantic_ai import run_with_approvals
    from examples.pydantic_ai_approval import MODEL_PREFIX, WriterDeps, WriterJob, writer


class WriterTasks(BaseModel):
    job: WriterJob
    prompts: list[str]


@workflow.defn(name="PydanticWriterTasks")
class PydanticWriterTasks(PydanticAIWorkflow):
    __pydantic_ai_agents__ = (writer,)

    @workflow.run
    async def run(self, tasks: WriterTasks) -> list[str]:
        answers = []
        for prompt in tasks.prompts:
            result = await run_with_approvals(
                writer,
                prompt,
                deps=WriterDeps(out_dir=tasks.job.out_dir),
                model=MODEL_PREFIX + tasks.job.model_url,
                task_queue=tasks.job.approvals_queue,
            )
            answers.append(str(result.output))
        return answers
