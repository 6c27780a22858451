"""An OpenAI Agents SDK agent on Temporal asks for a write through the adapter: the request
shows in the read model and `pending` with its requester; an approval runs the tool once, a
denial's reason reaches the model as the tool's output, an edit is refused by every door before
anything is recorded (the SDK cannot run edited arguments);
calls of one reply wait side by side and are decided one by one; an undecided request expires,
and one of a canceled agent is canceled."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.worker import Replayer

from config.settings import Settings
from core.contract import UPDATE_DECIDE
from core.conversation_model import DecisionInput
from demo_model.server import text_reply, tool_reply
from durable_approvals import derived_request_id
from examples.openai_agents_approval import agent_worker, agents_plugin
from examples.openai_agents_writer import AGENT_NAME, NotesWriterAgent, WriterOutcome, WriterTask
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, wait_pending
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, last_role, tool_results
from worker import build_worker


def writes_then_quotes(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Asked "write CONTENT to PATH as CALL_ID": that write; after its result, a quote of it."""
    if last_role(messages) == "tool":
        return text_reply("tool said: " + " | ".join(str(m["content"]) for m in tool_results(messages)))
    words = str(messages[-1]["content"]).split()
    return tool_reply((words[5], "write_file", {"path": words[3], "content": words[1]}), text="I need to write it")


@asynccontextmanager
async def agent_team(client: Client, model: ScriptedModel, notes: Path) -> AsyncIterator[tuple[Client, str]]:
    """The agent team's own client and worker: the OpenAI Agents plugin, the scripted model."""
    assert model.server is not None
    caller = await Client.connect(
        client.service_client.config.target_host,
        namespace=client.namespace,
        plugins=[agents_plugin(model.server.base_url, "test-key")],
    )
    queue = f"agents-{uuid.uuid4().hex[:8]}"
    async with agent_worker(caller, queue, notes):
        yield caller, queue


async def ask(caller: Client, queue: str, settings: Settings, prompt: str) -> tuple[WorkflowHandle, str]:
    """Start the agent on `prompt` (which names the call id last); return it and its request id."""
    task = WriterTask(prompt=prompt, model="scripted-test", approvals_queue=settings.task_queue)
    handle = await caller.start_workflow(
        NotesWriterAgent.run, task, id=f"notes-writer-{uuid.uuid4().hex[:8]}", task_queue=queue
    )
    return handle, derived_request_id(handle.id, f"openai-agents/{prompt.split()[-1]}")


async def replays(caller: Client, agent: WorkflowHandle, model: ScriptedModel) -> None:
    """The agent's own history replays under the plugin: the adapter's workflow code is deterministic."""
    assert model.server is not None
    replayer = Replayer(workflows=[NotesWriterAgent], plugins=[agents_plugin(model.server.base_url, "test-key")])
    await replayer.replay_workflow(await agent.fetch_history())


def tool_outputs_seen(model: ScriptedModel, call_id: str) -> list[str]:
    """What the model was shown as the output of one tool call."""
    return [
        str(message["content"])
        for body in model.requests
        for message in body["messages"]
        if message["role"] == "tool" and message.get("tool_call_id") == call_id
    ]


async def test_an_openai_agent_waits_for_a_person_and_each_decision_lands(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    model.behaviour = writes_then_quotes
    notes = tmp_path / "notes"
    async with build_worker(client, settings), agent_team(client, model, notes) as (caller, queue):
        approved, rid = await ask(caller, queue, settings, "write hello to notes.txt as call-a1")
        histories.track(rid)
        [row] = await wait_pending(settings.approvals_db, rid, 1)
        assert (row["tool_name"], json.loads(row["details_json"])["arguments"]) == (
            "write_file",
            {"path": "notes.txt", "content": "hello"},
        )
        listed = await run_cli(settings, client, "pending", "--json")
        [card] = [r for r in json.loads(listed.stdout) if r["request_id"] == rid]
        assert card["tool"]["annotations"]["requester"]["workflow_id"] == approved.id
        assert card["tool"]["annotations"]["requester"]["agent"] == AGENT_NAME
        assert card["tool"]["annotations"]["context"] == "I need to write it"
        assert not notes.exists(), "nothing runs before the decision"

        done = await run_cli(settings, client, "approve", rid, "--as", "bob")
        assert done.returncode == 0, done.stderr
        outcome = WriterOutcome.model_validate(await approved.result())
        [decision] = outcome.decisions
        assert (decision.decision, decision.decided_by, decision.door) == ("allow", "bob", "cli")
        assert (notes / "notes.txt").read_text() == "hello", "the approved write ran once"
        assert outcome.final_output == "tool said: wrote 5 characters to notes.txt"

        denied, denied_id = await ask(caller, queue, settings, "write secrets to leak.txt as call-d1")
        histories.track(denied_id)
        await wait_pending(settings.approvals_db, denied_id, 1)
        done = await run_cli(settings, client, "deny", denied_id, "--reason", "no secrets in notes", "--as", "bob")
        assert done.returncode == 0, done.stderr
        outcome = WriterOutcome.model_validate(await denied.result())
        assert outcome.decisions[0].decision == "deny"
        assert tool_outputs_seen(model, "call-d1") == ["denied by bob: no secrets in notes"]
        assert outcome.final_output == "tool said: denied by bob: no secrets in notes"

        edited, edited_id = await ask(caller, queue, settings, "write draft to plan.txt as call-e1")
        histories.track(edited_id)
        await wait_pending(settings.approvals_db, edited_id, 1)
        # The SDK cannot run edited arguments: every door refuses the edit up front, nothing is
        # recorded, and the request still waits for an approve or a deny.
        done = await run_cli(settings, client, "edit", edited_id, "--set", "content=final", "--as", "bob")
        assert done.returncode == 3, done.stderr
        assert f"{edited_id} cannot be edited" in done.stderr
        raw_edit = DecisionInput(request_id=edited_id, decision="edit", arguments={"path": "plan.txt", "content": "x"})
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await client.get_workflow_handle(edited_id).execute_update(UPDATE_DECIDE, raw_edit)
        assert "cannot be edited" in str(refused.value.cause)
        assert approval_row(settings.approvals_db, edited_id)["decision"] is None
        done = await run_cli(settings, client, "deny", edited_id, "--reason", "keep the draft", "--as", "bob")
        assert done.returncode == 0, done.stderr
        outcome = WriterOutcome.model_validate(await edited.result())
        assert outcome.decisions[0].decision == "deny"
        assert tool_outputs_seen(model, "call-e1") == ["denied by bob: keep the draft"]
        for agent in (approved, denied, edited):
            await replays(caller, agent, model)

    assert sorted(p.name for p in notes.iterdir()) == ["notes.txt"], "neither the denied nor the edited write ran"
    assert (notes / "notes.txt").read_text() == "hello"
    assert approval_row(settings.approvals_db, denied_id)["reason"] == "no secrets in notes"


def two_writes_at_once(messages: list[dict[str, Any]]) -> dict[str, Any]:
    if last_role(messages) == "tool":
        return text_reply(" | ".join(f"{m['tool_call_id']}: {m['content']}" for m in tool_results(messages)))
    return tool_reply(
        ("call-p1", "write_file", {"path": "one.txt", "content": "first"}),
        ("call-p2", "write_file", {"path": "two.txt", "content": "second"}),
    )


async def test_calls_asked_together_wait_together_and_each_gets_its_own_decision(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    model.behaviour = two_writes_at_once
    notes = tmp_path / "notes"
    async with build_worker(client, settings), agent_team(client, model, notes) as (caller, queue):
        agent, _ = await ask(caller, queue, settings, "write both as call-p1")
        first = histories.track(derived_request_id(agent.id, "openai-agents/call-p1"))
        second = histories.track(derived_request_id(agent.id, "openai-agents/call-p2"))
        await wait_pending(settings.approvals_db, first, 1)
        await wait_pending(settings.approvals_db, second, 1)
        assert len(model.reply_requests) == 1, "both calls came in one reply and wait side by side"

        done = await run_cli(settings, client, "deny", second, "--reason", "one file is enough", "--as", "bob")
        assert done.returncode == 0, done.stderr
        assert approval_row(settings.approvals_db, first)["resolved_at"] is None, "one decision per request"
        done = await run_cli(settings, client, "approve", first, "--as", "bob")
        assert done.returncode == 0, done.stderr
        outcome = WriterOutcome.model_validate(await agent.result())
        assert [(d.request_id, d.decision) for d in outcome.decisions] == [(first, "allow"), (second, "deny")]
        assert outcome.final_output == (
            "call-p1: wrote 5 characters to one.txt | call-p2: denied by bob: one file is enough"
        )
        assert len(model.reply_requests) == 2, "the run resumed once, with both decisions applied"
        await replays(caller, agent, model)

    assert [p.name for p in notes.iterdir()] == ["one.txt"] and (notes / "one.txt").read_text() == "first"


async def test_a_request_left_undecided_expires_and_one_of_a_canceled_agent_is_canceled(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    model.behaviour = writes_then_quotes
    notes = tmp_path / "notes"
    async with build_worker(client, settings), agent_team(client, model, notes) as (caller, queue):
        task = WriterTask(
            prompt="write late to late.txt as call-x1",
            model="scripted-test",
            approvals_queue=settings.task_queue,
            timeout_seconds=2,
        )
        agent = await caller.start_workflow(
            NotesWriterAgent.run, task, id=f"notes-writer-{uuid.uuid4().hex[:8]}", task_queue=queue
        )
        outcome = WriterOutcome.model_validate(await agent.result())
        assert (outcome.decisions[0].decision, outcome.decisions[0].decided_by) == ("expired", "timeout")
        assert tool_outputs_seen(model, "call-x1") == ["not run: the approval request expired without a decision"]

        canceled, canceled_id = await ask(caller, queue, settings, "write gone to gone.txt as call-c1")
        await wait_pending(settings.approvals_db, canceled_id, 1)
        await canceled.cancel()
        with pytest.raises(WorkflowFailureError):
            await canceled.result()

        async def canceled_in_the_read_model() -> bool:
            return approval_row(settings.approvals_db, canceled_id)["decision"] == "canceled"

        await eventually(canceled_in_the_read_model)
        assert tool_outputs_seen(model, "call-c1") == [], "a canceled agent is not resumed"
    assert not notes.exists()
