"""A Pydantic AI agent on Temporal (its `TemporalDurability`, the real SDK and dev server, the
scripted model over HTTP) asks for a write through the adapter: the request shows in `pending`
with the agent's workflow as its requester, and each decision reaches the agent as Pydantic AI
takes it: approve runs the tool once, a denial's reason is what the model reads next, an edit
runs the tool with the edited arguments."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import Client, WorkflowFailureError
from temporalio.worker import Replayer

from config.settings import Settings
from demo_model.script import respond
from demo_model.server import text_reply, tool_reply
from examples.pydantic_ai_approval import AGENT_NAME, PydanticWriter, main
from tests.agents.pydantic_ai_support import REASON, agent_worker, asks_to_write, pending_cards, start_agent
from tests.support.helpers import approval_row, eventually
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, last_role, tool_results
from worker import build_worker


async def test_an_approved_write_runs_once_and_the_request_names_the_agent(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    model.behaviour = asks_to_write("notes.txt", "v2")
    async with build_worker(client, settings), agent_worker(client) as (agents, queue):
        handle = await start_agent(agents, queue, settings, tmp_path)
        [card] = await pending_cards(settings, client, handle.id)
        assert card["tool"]["annotations"]["context"] == REASON
        assert card["tool"]["origin"] == AGENT_NAME
        assert not (tmp_path / "notes.txt").exists(), "nothing runs before the decision"

        done = await run_cli(settings, client, "approve", card["request_id"], "--as", "bob")
        assert done.returncode == 0, done.stderr
        answer = await handle.result()
        history = await handle.fetch_history()
    assert answer == "told: wrote 2 characters to notes.txt"
    assert (tmp_path / "notes.txt").read_text() == "v2", "the tool ran exactly once"
    assert len(model.reply_requests) == 2
    replayer = Replayer(workflows=[PydanticWriter], plugins=[PydanticAIPlugin()], data_converter=agents.data_converter)
    await replayer.replay_workflow(history)  # the adapter's commands are deterministic


async def test_a_denial_reason_is_what_the_model_reads_and_the_tool_never_runs(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    model.behaviour = asks_to_write("notes.txt", "v2")
    async with build_worker(client, settings), agent_worker(client) as (agents, queue):
        handle = await start_agent(agents, queue, settings, tmp_path)
        [card] = await pending_cards(settings, client, handle.id)
        done = await run_cli(
            settings, client, "deny", card["request_id"], "--reason", "not in the freeze", "--as", "bob"
        )
        assert done.returncode == 0, done.stderr
        answer = await handle.result()
    assert answer == "told: not in the freeze"
    [told] = tool_results(model.reply_requests[-1]["messages"])
    assert (told["tool_call_id"], told["content"]) == ("w1", "not in the freeze")
    assert not (tmp_path / "notes.txt").exists()


async def test_an_edit_runs_the_tool_with_the_edited_arguments(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    model.behaviour = asks_to_write("notes.txt", "draft")
    async with build_worker(client, settings), agent_worker(client) as (agents, queue):
        handle = await start_agent(agents, queue, settings, tmp_path)
        [card] = await pending_cards(settings, client, handle.id)
        done = await run_cli(settings, client, "edit", card["request_id"], "--set", "content=final", "--as", "bob")
        assert done.returncode == 0, done.stderr
        answer = await handle.result()
    assert answer == "told: wrote 5 characters to notes.txt"
    assert (tmp_path / "notes.txt").read_text() == "final", "the edited arguments ran, not the proposed ones"


async def test_parallel_calls_are_asked_at_once_and_each_decision_reaches_its_own_call(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    calls = [
        ("w1", "write_file", {"path": "a.txt", "content": "A"}),
        ("w2", "write_file", {"path": "b.txt", "content": "B"}),
    ]

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if last_role(messages) == "user":
            return tool_reply(*calls)
        return text_reply("told: " + " | ".join(str(m["content"]) for m in tool_results(messages)))

    model.behaviour = behave
    async with build_worker(client, settings), agent_worker(client) as (agents, queue):
        handle = await start_agent(agents, queue, settings, tmp_path)
        first, second = await pending_cards(settings, client, handle.id, count=2)
        assert first["request_id"] != second["request_id"]
        denied = await run_cli(settings, client, "deny", second["request_id"], "--reason", "only a.txt", "--as", "bob")
        assert denied.returncode == 0, denied.stderr
        approved = await run_cli(settings, client, "approve", first["request_id"], "--as", "bob")
        assert approved.returncode == 0, approved.stderr
        answer = await handle.result()
    assert answer == "told: wrote 1 characters to a.txt | only a.txt"
    assert (tmp_path / "a.txt").read_text() == "A" and not (tmp_path / "b.txt").exists()
    assert len(model.reply_requests) == 2, "one run on with both decisions, not one per decision"


async def test_an_id_the_model_reuses_in_a_later_response_is_a_new_request(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    """Models number their calls per response (`call_1` again and again): the second ask is its
    own request, not the first one's decision found again."""

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        results = [m for m in messages if m["role"] == "tool"]
        if not results:
            return tool_reply(("w1", "write_file", {"path": "a.txt", "content": "A"}))
        if len(results) == 1:
            return tool_reply(("w1", "write_file", {"path": "b.txt", "content": "B"}))
        return text_reply("told: " + " | ".join(str(m["content"]) for m in results))

    model.behaviour = behave
    async with build_worker(client, settings), agent_worker(client) as (agents, queue):
        handle = await start_agent(agents, queue, settings, tmp_path)
        [first] = await pending_cards(settings, client, handle.id)
        approved = await run_cli(settings, client, "approve", first["request_id"], "--as", "bob")
        assert approved.returncode == 0, approved.stderr
        [second] = await pending_cards(settings, client, handle.id)
        assert second["request_id"] != first["request_id"] and second["arguments"]["path"] == "b.txt"
        denied = await run_cli(settings, client, "deny", second["request_id"], "--reason", "enough", "--as", "bob")
        assert denied.returncode == 0, denied.stderr
        answer = await handle.result()
    assert answer == "told: wrote 1 characters to a.txt | enough"
    assert (tmp_path / "a.txt").read_text() == "A" and not (tmp_path / "b.txt").exists()


async def test_a_request_nobody_decides_expires_and_the_model_is_told(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    model.behaviour = asks_to_write("notes.txt", "v2")
    async with build_worker(client, settings), agent_worker(client) as (agents, queue):
        handle = await start_agent(agents, queue, settings, tmp_path, timeout_seconds=2)
        answer = await handle.result()
    [told] = tool_results(model.reply_requests[-1]["messages"])
    assert told["content"] == answer.removeprefix("told: ") and "no decision within" in answer
    assert not (tmp_path / "notes.txt").exists()


async def test_canceling_the_agent_cancels_its_request_and_nothing_runs(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    model.behaviour = asks_to_write("notes.txt", "v2")
    async with build_worker(client, settings), agent_worker(client) as (agents, queue):
        handle = await start_agent(agents, queue, settings, tmp_path)
        [card] = await pending_cards(settings, client, handle.id)
        await handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await handle.result()

        async def canceled_in_the_read_model() -> bool:
            return approval_row(settings.approvals_db, card["request_id"])["decision"] == "canceled"

        await eventually(canceled_in_the_read_model)
    assert not (tmp_path / "notes.txt").exists()
    assert len(model.reply_requests) == 1


async def test_a_deny_rule_answers_at_once_and_the_model_reads_why(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('ask = ["write_file"]\ndeny = ["write_file(.git/**)"]\n')
    settings = replace(settings, policy_file=str(policy))
    model.behaviour = asks_to_write(".git/config", "x")
    async with build_worker(client, settings), agent_worker(client) as (agents, queue):
        answer = await (await start_agent(agents, queue, settings, tmp_path)).result()
    assert answer == "told: a deny rule of the policy forbids it"
    assert not (tmp_path / ".git").exists()


async def test_the_example_runs_as_documented_against_the_demo_model(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    model.behaviour = lambda messages: respond({"messages": messages})
    target = client.service_client.config.target_host
    async with build_worker(client, settings):
        run = asyncio.create_task(
            main(
                "write hello to notes.txt",
                tmp_path,
                temporal_address=target,
                model_url=settings.openai_base_url,
                approvals_queue=settings.task_queue,
            )
        )
        try:
            [card] = await pending_cards(settings, client)
            done = await run_cli(settings, client, "approve", card["request_id"], "--as", "bob")
            assert done.returncode == 0, done.stderr
            answer = await run
        finally:
            run.cancel()  # the example's worker stops with it when the test failed first
    assert (tmp_path / "notes.txt").read_text() == "hello"
    assert "wrote 5 characters to notes.txt" in answer
