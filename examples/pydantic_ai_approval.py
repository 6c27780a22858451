"""A Pydantic AI agent on Temporal whose `write_file` tool waits for a person's yes.

The agent is durable through Pydantic AI's `TemporalDurability`; the tool is registered with
`requires_approval=True`, so a call to it ends the run with `DeferredToolRequests`, and
`run_with_approvals` (durable_approvals.pydantic_ai) turns each call into an `ApprovalRequest`,
decided in the inbox, the CLI, Slack or the API, and runs the agent on with the decisions.

With `make run` going (Temporal, the scripted demo model on :8100, the approvals worker), run

    .venv/bin/python -m examples.pydantic_ai_approval "write hello to notes.txt"

then decide its request (`.venv/bin/python starter.py pending`, then `approve RID`, `deny RID --reason ...`,
`edit RID --set content=...`, or in the inbox). The agent's answer is printed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel
from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.capabilities import ResolveModelId
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
from pydantic_ai.models import Model, ModelResolutionContext
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.workflow import ActivityConfig

with workflow.unsafe.imports_passed_through():
    from durable_approvals import DEFAULT_TASK_QUEUE
    from durable_approvals.pydantic_ai import run_with_approvals

AGENT_NAME = "pydantic-writer"
DEMO_MODEL_URL = "http://127.0.0.1:8100/v1"
MODEL_PREFIX = "openai-compatible@"


class WriterDeps(BaseModel):
    """What the tool needs, carried to its activity: the directory it writes in."""

    out_dir: str


class WriterJob(BaseModel):
    prompt: str
    out_dir: str
    model_url: str = DEMO_MODEL_URL
    approvals_queue: str = DEFAULT_TASK_QUEUE
    timeout_seconds: float | None = None


def openai_compatible(_: ModelResolutionContext[WriterDeps], model_id: str) -> Model | None:
    """`openai-compatible@URL`: a chat model served at URL (the scripted demo model, a local
    llama.cpp). Resolved on the worker, in the model activity, never in workflow code."""
    if not model_id.startswith(MODEL_PREFIX):
        return None
    provider = OpenAIProvider(base_url=model_id.removeprefix(MODEL_PREFIX), api_key="unused")
    return OpenAIChatModel("scripted-demo", provider=provider)


writer = Agent(
    MODEL_PREFIX + DEMO_MODEL_URL,
    name=AGENT_NAME,
    deps_type=WriterDeps,
    output_type=[str, DeferredToolRequests],
    instructions="Write files when asked.",
    capabilities=[
        ResolveModelId(openai_compatible),
        TemporalDurability(activity_config=ActivityConfig(start_to_close_timeout=timedelta(seconds=30))),
    ],
)


@writer.tool(requires_approval=True)
async def write_file(ctx: RunContext[WriterDeps], path: str, content: str) -> str:
    """Write `content` to the file at `path` (appends, so a second run would show)."""
    with (Path(ctx.deps.out_dir) / path).open("a") as out:
        out.write(content)
    return f"wrote {len(content)} characters to {path}"


@workflow.defn(name="PydanticWriter")
class PydanticWriter(PydanticAIWorkflow):
    __pydantic_ai_agents__ = (writer,)

    @workflow.run
    async def run(self, job: WriterJob) -> str:
        result = await run_with_approvals(
            writer,
            job.prompt,
            deps=WriterDeps(out_dir=job.out_dir),
            model=MODEL_PREFIX + job.model_url,
            timeout_seconds=job.timeout_seconds,
            task_queue=job.approvals_queue,
        )
        return str(result.output)


async def main(
    prompt: str,
    out_dir: Path,
    *,
    temporal_address: str = "localhost:7233",
    model_url: str = DEMO_MODEL_URL,
    approvals_queue: str = DEFAULT_TASK_QUEUE,
) -> str:
    """Run the agent's worker and one agent workflow; return the agent's answer."""
    client = await Client.connect(temporal_address, plugins=[PydanticAIPlugin()])
    queue = f"pydantic-writer-{uuid.uuid4().hex[:8]}"
    out_dir.mkdir(parents=True, exist_ok=True)
    job = WriterJob(prompt=prompt, out_dir=str(out_dir.resolve()), model_url=model_url, approvals_queue=approvals_queue)
    async with Worker(client, task_queue=queue, workflows=[PydanticWriter]):
        handle = await client.start_workflow(
            PydanticWriter.run, job, id=f"writer-{uuid.uuid4().hex[:8]}", task_queue=queue
        )
        print(f"agent workflow {handle.id} started; decide its requests (.venv/bin/python starter.py pending)")
        return await handle.result()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prompt", nargs="?", default="write hello to notes.txt")
    parser.add_argument("--out", type=Path, default=Path("data/pydantic-writer"), help="where the tool writes")
    parser.add_argument("--temporal", default="localhost:7233", help="the Temporal frontend")
    parser.add_argument("--model-url", default=DEMO_MODEL_URL, help="an OpenAI-compatible server")
    parser.add_argument("--approvals-queue", default=DEFAULT_TASK_QUEUE, help="the approvals worker's task queue")
    options = parser.parse_args()
    answer = asyncio.run(
        main(
            options.prompt,
            options.out,
            temporal_address=options.temporal,
            model_url=options.model_url,
            approvals_queue=options.approvals_queue,
        )
    )
    print(answer)
