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
from activities.tools import ToolActivities
from connection import connect
from projection.db import Writer
from settings import Settings
from workflows.conversation import ConversationWorkflow


def build_worker(client: Client, settings: Settings | None = None, **worker_options: Any) -> Worker:
    """A worker for settings.task_queue; tests pass their own settings and worker options."""
    settings = settings or Settings()
    settings.workspace_dir.mkdir(parents=True, exist_ok=True)
    projection = Writer(settings.approvals_db)
    llm = LlmActivities(settings.openai_base_url, settings.openai_api_key, settings.llm_model)
    tools = ToolActivities(settings.workspace_dir, Ledger(settings.ledger_db), projection, settings.sandbox_policy())
    writes = ProjectionActivities(projection)
    # A waiting conversation needs no cache entry: a small cache keeps memory flat, and a
    # conversation is rebuilt by replay when its decision arrives (see bench/results.md).
    worker_options.setdefault("max_cached_workflows", settings.workflow_cache_size)
    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[ConversationWorkflow],
        activities=[
            llm.call_llm,
            tools.execute_tool,
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
    logging.info("worker ready: task queue %s on %s", settings.task_queue, settings.temporal_address)
    await worker.run()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
