"""An OpenAI Agents SDK agent on Temporal whose one tool, `write_file`, needs a person's yes.

The tool is a Temporal activity (`activity_as_tool`) marked `needs_approval=True`; the workflow
runs the agent through `durable_approvals.openai_agents.run_with_approvals`, so each write the
model asks for waits in the approvals inbox and runs only once approved.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel
from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from agents import Agent, FunctionTool, RunConfig
    from temporalio.openai_agents.workflow import activity_as_tool

    from durable_approvals import DEFAULT_TASK_QUEUE, ApprovalResult
    from durable_approvals.openai_agents import ApprovalOptions, run_with_approvals

AGENT_NAME = "notes-writer"


class WriterTask(BaseModel):
    prompt: str
    model: str = "scripted-demo"
    approvals_queue: str = DEFAULT_TASK_QUEUE
    timeout_seconds: float | None = None


class WriterOutcome(BaseModel):
    final_output: str
    decisions: list[ApprovalResult]


class NotesFolder:
    """The side effect the approval guards, as an activity: it appends, so a second run shows."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    @activity.defn(name="write_file")
    async def write_file(self, path: str, content: str) -> str:
        """Write text to a file in the notes folder.

        Args:
            path: the file's path inside the notes folder, e.g. notes.txt
            content: the text to write
        """
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root):
            raise ValueError(f"{path} is outside the notes folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a") as out:
            out.write(content)
        return f"wrote {len(content)} characters to {path}"


def write_file_tool() -> FunctionTool:
    """The activity as the agent's tool; `activity_as_tool` has no `needs_approval`, so it is set here."""
    tool = activity_as_tool(NotesFolder.write_file, start_to_close_timeout=timedelta(seconds=30))
    assert isinstance(tool, FunctionTool)
    return dataclasses.replace(tool, needs_approval=True)


@workflow.defn(name="NotesWriterAgent")
class NotesWriterAgent:
    @workflow.run
    async def run(self, task: WriterTask) -> WriterOutcome:
        agent = Agent(
            name=AGENT_NAME,
            instructions="You keep the team's notes. Write files only with the write_file tool.",
            model=task.model,
            tools=[write_file_tool()],
        )
        options = ApprovalOptions(task_queue=task.approvals_queue, timeout_seconds=task.timeout_seconds)
        # No traces: they would go to OpenAI's platform, where a scripted model has no account.
        run = await run_with_approvals(agent, task.prompt, options=options, run_config=RunConfig(tracing_disabled=True))
        return WriterOutcome(final_output=str(run.final_output), decisions=run.decisions)
