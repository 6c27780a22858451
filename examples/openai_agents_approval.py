"""Run an OpenAI Agents SDK agent on Temporal that asks the approvals service before it writes.

With the system running (`make run`: the dev server, the approvals worker, the inbox and the
scripted demo model), in a second terminal:

    .venv/bin/python -m examples.openai_agents_approval "write hello to notes.txt"

It starts the agent's own worker (the `OpenAIAgentsPlugin`, its model calls going to the model
server of OPENAI_BASE_URL, the demo model by default), starts the agent, prints each request as
it waits (with the commands that decide it), and then what the agent did. Decide in the inbox,
with `python starter.py approve|deny ID`, or let the example decide: `--approve-as bob`,
`--deny-as bob --reason "not today"`. `--serve` runs only the agent's worker, as a deployment
would, until it is stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

from agents.models.openai_provider import OpenAIProvider
from openai import AsyncOpenAI
from temporalio.client import Client, WorkflowHandle
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.worker import Worker

from config.settings import Settings
from examples.openai_agents_writer import NotesFolder, NotesWriterAgent, WriterOutcome, WriterTask

AGENT_QUEUE = "notes-writer-agent"
REPO_ROOT = Path(__file__).resolve().parents[1]


def agents_plugin(base_url: str, api_key: str) -> OpenAIAgentsPlugin:
    """The plugin with its model activity calling an OpenAI-compatible Chat Completions server.
    Retries are the activity's, not the client's."""
    client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    return OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=60)),
        model_provider=OpenAIProvider(openai_client=client, use_responses=False),
    )


async def waiting_requests(client: Client, agent: WorkflowHandle, seen: set[str]) -> list[str]:
    """The agent's approval requests that are running and not yet shown."""
    query = f"ParentWorkflowId = '{agent.id}' AND ExecutionStatus = 'Running'"
    found = [execution.id async for execution in client.list_workflows(query) if execution.id not in seen]
    seen.update(found)
    return found


def decide(request_id: str, args: argparse.Namespace) -> None:
    if args.approve_as:
        command = ["approve", request_id, "--as", args.approve_as]
    else:
        command = ["deny", request_id, "--as", args.deny_as, "--reason", args.reason]
    subprocess.run([sys.executable, "starter.py", *command], cwd=REPO_ROOT, check=True)


async def show_requests(client: Client, agent: WorkflowHandle, args: argparse.Namespace) -> None:
    seen: set[str] = set()
    while True:
        for request_id in await waiting_requests(client, agent, seen):
            print(f"waiting for a person: request {request_id}")
            if args.approve_as or args.deny_as:
                await asyncio.to_thread(decide, request_id, args)
            else:
                print(f"  python starter.py approve {request_id} --as YOU")
                print(f'  python starter.py deny {request_id} --as YOU --reason "why not"')
        await asyncio.sleep(0.5)


def agent_worker(client: Client, queue: str, notes: Path) -> Worker:
    return Worker(client, task_queue=queue, workflows=[NotesWriterAgent], activities=[NotesFolder(notes).write_file])


async def main(args: argparse.Namespace) -> None:
    settings = Settings()
    plugin = agents_plugin(settings.openai_base_url, settings.openai_api_key)
    client = await Client.connect(settings.temporal_address, namespace=settings.namespace, plugins=[plugin])
    notes = Path(args.notes_dir)
    if args.serve:
        async with agent_worker(client, args.queue, notes):
            print(f"agent worker ready: task queue {args.queue}", flush=True)
            await asyncio.Event().wait()
    async with agent_worker(client, args.queue, notes):
        task = WriterTask(prompt=args.prompt, model=settings.llm_model, approvals_queue=settings.task_queue)
        agent = await client.start_workflow(
            NotesWriterAgent.run, task, id=f"notes-writer-{uuid.uuid4().hex[:8]}", task_queue=args.queue
        )
        print(f"agent {agent.id} started: {args.prompt!r}")
        watcher = asyncio.create_task(show_requests(client, agent, args))
        try:
            outcome = WriterOutcome.model_validate(await agent.result())
        finally:
            watcher.cancel()
    for decision in outcome.decisions:
        print(f"{decision.request_id}: {decision.decision} by {decision.decided_by} ({decision.reason or 'no reason'})")
    print(f"the agent answered: {outcome.final_output}")
    for path in sorted(p for p in notes.rglob("*") if p.is_file()):
        print(f"{path}: {path.read_text()!r}")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m examples.openai_agents_approval", description=__doc__)
    parser.add_argument("prompt", nargs="?", default="write hello to notes.txt")
    parser.add_argument("--notes-dir", default="data/agent-notes", help="where the agent's write_file writes")
    parser.add_argument("--queue", default=AGENT_QUEUE, help="the agent worker's task queue")
    parser.add_argument("--serve", action="store_true", help="run only the agent's worker, until stopped")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--approve-as", metavar="NAME", help="approve each request as NAME")
    who.add_argument("--deny-as", metavar="NAME", help="deny each request as NAME (with --reason)")
    parser.add_argument("--reason", default="not today", help="the reason a denial gives the agent")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse()))
