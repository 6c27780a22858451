"""What the Pydantic AI adapter's tests share: the scripted model's ask, the agent's worker and
workflow start, and the `pending` cards the agent's requests show as."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.worker import Worker

from config.settings import Settings
from demo_model.server import text_reply, tool_reply
from examples.pydantic_ai_approval import AGENT_NAME, PydanticWriter, WriterJob
from tests.support.helpers import eventually
from tests.support.processes import run_cli
from tests.support.scripts import Behaviour, last_role, tool_results

REASON = "the agent says it needs the release notes"


def asks_to_write(path: str, content: str) -> Behaviour:
    """On the person's message: one `write_file` call with a stated reason; after its result: a
    text quoting the result, so the test sees what the model was told."""

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if last_role(messages) == "user":
            return tool_reply(("w1", "write_file", {"path": path, "content": content}), text=REASON)
        return text_reply("told: " + " | ".join(str(m["content"]) for m in tool_results(messages)))

    return behave


@asynccontextmanager
async def agent_worker(client: Client, *workflows: type) -> AsyncIterator[tuple[Client, str]]:
    """The agent's own worker, as its team runs it: a client with Pydantic AI's plugin, its own
    queue, the example's workflow (or the given ones)."""
    agents = agents_client(client)
    queue = f"agents-{uuid.uuid4().hex[:8]}"
    async with Worker(agents, task_queue=queue, workflows=list(workflows or [PydanticWriter])):
        yield agents, queue


def agents_client(client: Client) -> Client:
    """The client the agent's team connects with: Pydantic AI's plugin on the same server, with the
    SDK's pydantic payload converter as docs/agents-pydantic-ai.md connects (the plugin puts its own
    in its place) and the same payload store."""
    config = client.config()
    config["data_converter"] = dataclasses.replace(
        config["data_converter"], payload_converter_class=PydanticPayloadConverter
    )
    config["plugins"] = [PydanticAIPlugin()]
    return Client(**config)


async def start_agent(
    agents: Client, queue: str, settings: Settings, out: Path, timeout_seconds: float | None = None
) -> WorkflowHandle:
    job = WriterJob(
        prompt="write the notes",
        out_dir=str(out),
        model_url=settings.openai_base_url,
        approvals_queue=settings.task_queue,
        timeout_seconds=timeout_seconds,
    )
    return await agents.start_workflow(PydanticWriter.run, job, id=f"writer-{uuid.uuid4().hex[:8]}", task_queue=queue)


async def pending_cards(
    settings: Settings, client: Client, requester: str | None = None, count: int = 1
) -> list[dict[str, Any]]:
    """The `pending --json` cards of the requests the agent opened (from the workflow `requester`
    if given), once there are `count` of them, in the order of their paths."""

    def opened_by_the_agent(card: dict[str, Any]) -> bool:
        by = card["tool"]["annotations"].get("requester") or {}
        return by.get("agent") == AGENT_NAME and requester in (None, by.get("workflow_id"))

    async def cards() -> list[dict[str, Any]] | None:
        listed = await run_cli(settings, client, "pending", "--json")
        assert listed.returncode == 0, listed.stderr
        mine = [card for card in json.loads(listed.stdout) if opened_by_the_agent(card)]
        return sorted(mine, key=lambda card: card["arguments"]["path"]) if len(mine) == count else None

    return await eventually(cards, timeout=60)
