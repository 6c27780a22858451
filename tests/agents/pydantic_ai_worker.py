"""`python -m tests.agents.pydantic_ai_worker ADDRESS QUEUE`: the example agent's worker alone,
in its own process, as a team runs it; the crash test kills it with SIGKILL."""

from __future__ import annotations

import asyncio
import sys

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import Client
from temporalio.worker import Worker

from examples.pydantic_ai_approval import PydanticWriter


async def serve(address: str, queue: str) -> None:
    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    async with Worker(client, task_queue=queue, workflows=[PydanticWriter]):
        print("agent worker ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], sys.argv[2]))
