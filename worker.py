"""The worker: runs ConversationWorkflow and every activity (model, tools, projection)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from activities.ledger import Ledger
from activities.llm import LlmActivities
from activities.projection import ProjectionActivities
from activities.sandbox import describe as describe_sandbox
from activities.tool_sources import ToolSources
from activities.tools import ToolActivities
from connection import connect
from projection.db import Writer
from projection.failure_watch import FailureWatch
from settings import Settings
from workflows.conversation import ConversationWorkflow


class ToolWorker(Worker):
    """A Worker that stops the MCP servers it started when it stops."""

    def __init__(self, *args: Any, tools: ToolActivities, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tools = tools

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            await self.tools.sources.close()


def build_worker(client: Client, settings: Settings | None = None, **worker_options: Any) -> Worker:
    """A worker for settings.task_queue; tests pass their own settings and worker options."""
    settings = settings or Settings()
    settings.workspace_dir.mkdir(parents=True, exist_ok=True)
    projection = Writer(settings.approvals_db)
    llm = LlmActivities(settings.openai_base_url, settings.openai_api_key, settings.llm_model)
    sources = ToolSources(settings.load_tools(), settings.workspace_dir)
    tools = ToolActivities(
        settings.workspace_dir, Ledger(settings.ledger_db), projection, sources, settings.sandbox_policy()
    )
    writes = ProjectionActivities(projection)
    # A waiting conversation needs no cache entry: a small cache keeps memory flat, and a
    # conversation is rebuilt by replay when its decision arrives (see bench/results.md).
    worker_options.setdefault("max_cached_workflows", settings.workflow_cache_size)
    return ToolWorker(
        client,
        tools=tools,
        task_queue=settings.task_queue,
        workflows=[ConversationWorkflow],
        activities=[
            llm.call_llm,
            tools.list_tools,
            tools.execute_tool,
            tools.run_python_tool,
            tools.call_mcp_tool,
            writes.project_conversation,
            writes.project_approval_requested,
            writes.project_approval_resolved,
            writes.project_compaction,
        ],
        # The projection activities are synchronous sqlite writes; they run on these threads.
        activity_executor=ThreadPoolExecutor(max_workers=8),
        **worker_options,
    )


async def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = Settings()
    client = await connect(settings)
    worker = build_worker(client, settings)
    logging.info("tool sandbox: %s", describe_sandbox(settings.sandbox_policy()))
    # Beside the worker: shows a conversation whose workflow task keeps failing as failed, with why.
    watch = FailureWatch(client, Writer(settings.approvals_db), settings.failure_watch_interval)
    watching = asyncio.create_task(watch.run())
    logging.info("worker ready: task queue %s on %s", settings.task_queue, settings.temporal_address)
    try:
        await worker.run()
    finally:
        watching.cancel()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
