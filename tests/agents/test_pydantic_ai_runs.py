"""One workflow runs its Pydantic AI agent several times, each run from a fresh history: the model
numbers its calls the same way in every run (`w1`), yet each run's call is its own request."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from demo_model.server import text_reply, tool_reply
from examples.pydantic_ai_approval import WriterJob
from tests.agents.pydantic_ai_support import agent_worker, pending_cards
from tests.agents.pydantic_ai_workflows import PydanticWriterTasks, WriterTasks
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, first_user_text, last_role, tool_results
from worker import build_worker


def writes_what_it_is_told(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """`write NAME`: one call `w1` writing NAME.txt; after its result, a text quoting it."""
    if last_role(messages) == "user":
        name = first_user_text(messages).removeprefix("write ")
        return tool_reply(("w1", "write_file", {"path": f"{name}.txt", "content": name}))
    return text_reply("told: " + " | ".join(str(m["content"]) for m in tool_results(messages)))


async def test_each_run_of_one_workflow_asks_its_own_request(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    model.behaviour = writes_what_it_is_told
    job = WriterJob(
        prompt="", out_dir=str(tmp_path), model_url=settings.openai_base_url, approvals_queue=settings.task_queue
    )
    async with build_worker(client, settings), agent_worker(client, PydanticWriterTasks) as (agents, queue):
        handle = await agents.start_workflow(
            PydanticWriterTasks.run,
            WriterTasks(job=job, prompts=["write a", "write b"]),
            id=f"writer-tasks-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
        )
        [first] = await pending_cards(settings, client, handle.id)
        assert first["arguments"] == {"path": "a.txt", "content": "a"}
        approved = await run_cli(settings, client, "approve", first["request_id"], "--as", "bob")
        assert approved.returncode == 0, approved.stderr
        [second] = await pending_cards(settings, client, handle.id)
        assert second["request_id"] != first["request_id"]
        assert second["arguments"] == {"path": "b.txt", "content": "b"}
        denied = await run_cli(settings, client, "deny", second["request_id"], "--reason", "one is enough")
        assert denied.returncode == 0, denied.stderr
        answers = await handle.result()
    assert answers == ["told: wrote 1 characters to a.txt", "told: one is enough"]
    assert (tmp_path / "a.txt").read_text() == "a" and not (tmp_path / "b.txt").exists()
