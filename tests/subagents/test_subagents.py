"""Subagents: a `delegate` call runs a child conversation whose approvals reach the same inbox."""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import CancelledError

from config.settings import Settings
from core.conversation_model import ConversationState, DecisionInput
from core.refusals import DecisionRefused
from demo_model.server import text_reply
from doors.control import close_conversation, send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.failure_support import replay_recorded
from tests.support.helpers import approval_row, eventually, rows, tool_messages, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary, delegation, first_user_text
from worker import build_worker
from workflows.delegation import child_conversation_id

TASK = "write the report to report.txt"


def write_policy(tmp_path: Path, text: str) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return str(path)


async def test_approved_child_write_runs_once_and_the_parent_reads_the_answer(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = delegation(TASK, ("w1", "write_file", {"path": "report.txt", "content": "all good"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "please delegate the report"))
        child = histories.track(child_conversation_id(cid, "d1"))
        [row] = await wait_pending(settings.approvals_db, child, 1)
        assert row["tool_name"] == "write_file" and row["request_id"] == f"perm_{child}_w1"
        [link] = rows(settings.approvals_db, "SELECT parent_id FROM ui_conversations WHERE conversation_id = ?", child)
        assert link["parent_id"] == cid
        assert not (workspace_of(settings, cid) / "report.txt").exists()
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        state = await wait_status(client, cid, "idle")
        child_final = await client.get_workflow_handle(child, result_type=ConversationState).result()

    assert (workspace_of(settings, cid) / "report.txt").read_text() == "all good"
    answer = "results: Wrote 8 bytes to report.txt"
    assert child_final.messages[-1].content == answer
    assert tool_messages(state) == [answer], "the child's answer is the parent's tool result"
    assert state.messages[-1].content == f"results: {answer}"
    assert approval_row(settings.approvals_db, row["request_id"])["execution_state"] == "done"
    # One request per assistant message: the parent's two and the child's two.
    assert len(model.reply_requests) == 4


async def test_denied_child_write_never_runs_and_the_parent_reads_the_reason(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = delegation(TASK, ("w1", "write_file", {"path": "report.txt", "content": "x"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "please delegate the report"))
        child = histories.track(child_conversation_id(cid, "d1"))
        [row] = await wait_pending(settings.approvals_db, child, 1)
        decision = DecisionInput(request_id=row["request_id"], decision="deny", reason="reports are read-only")
        await send_decision(client, settings, decision)
        state = await wait_status(client, cid, "idle")

    assert not (workspace_of(settings, cid) / "report.txt").exists()
    [result] = tool_messages(state)
    assert "denied" in result and "reports are read-only" in result
    assert approval_row(settings.approvals_db, row["request_id"])["decision"] == "deny"


async def test_a_child_cannot_run_what_the_parent_denies_even_when_its_own_rules_allow_it(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    policy = write_policy(
        tmp_path,
        'allow = ["delegate", "read_file"]\nask = ["write_file"]\ndeny = ["run_shell"]\n'
        '[delegation]\nmode = "auto_approve"\nallow = ["run_shell", "write_file", "read_file"]\n',
    )
    settings = replace(settings, policy_file=policy)
    model.behaviour = delegation(
        TASK,
        ("s1", "run_shell", {"command": "echo hi > shell.txt"}),
        ("w1", "write_file", {"path": "report.txt", "content": "ok"}),
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "please delegate the report"))
        child = histories.track(child_conversation_id(cid, "d1"))
        # The parent's deny holds; its ask stays an ask although the child's rules allow the write.
        [row] = await wait_pending(settings.approvals_db, child, 1)
        assert row["tool_name"] == "write_file"
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await wait_status(client, cid, "idle")
        child_final = await client.get_workflow_handle(child, result_type=ConversationState).result()

    assert not (workspace_of(settings, cid) / "shell.txt").exists()
    assert (workspace_of(settings, cid) / "report.txt").read_text() == "ok"
    answer = child_final.messages[-1].content or ""
    assert "a deny rule of the policy forbids this run_shell call" in answer
    assert child_final.auto_approve is False, "auto-approve holds only when the parent has it too"


async def test_depth_and_fan_out_limits_refuse_with_a_clear_result(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    settings = replace(
        settings,
        policy_file=write_policy(
            tmp_path, 'allow = ["delegate", "list_dir"]\n[delegation]\nmax_depth = 1\nmax_children = 1\n'
        ),
    )
    child = calls_then_summary(("l1", "list_dir", {"path": "."}))
    parent = calls_then_summary(("d1", "delegate", {"task": "first"}), ("d2", "delegate", {"task": "second"}))
    model.behaviour = lambda messages: (child if first_user_text(messages) == "first" else parent)(messages)
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "two subtasks"))
        histories.track(child_conversation_id(cid, "d1"))
        state = await wait_status(client, cid, "idle")

    first, second = tool_messages(state)
    assert first.startswith("results: ")
    assert "fan-out limit" in second and "1 subagent" in second
    child_requests = [body for body in model.reply_requests if first_user_text(body["messages"]) == "first"]
    assert len(child_requests) == 2
    offered = {tool["function"]["name"] for tool in child_requests[0]["tools"]}
    assert "delegate" not in offered, "at the depth limit the tool is not offered"
    assert "delegate" in {tool["function"]["name"] for tool in model.reply_requests[0]["tools"]}


async def test_closing_the_parent_cancels_the_waiting_child_and_nothing_runs(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = delegation(TASK, ("w1", "write_file", {"path": "report.txt", "content": "x"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "please delegate the report"))
        child = histories.track(child_conversation_id(cid, "d1"))
        [row] = await wait_pending(settings.approvals_db, child, 1)
        await close_conversation(client, cid)
        final = await client.get_workflow_handle(cid, result_type=ConversationState).result()
        child_final = await client.get_workflow_handle(child, result_type=ConversationState).result()
        refused = await send_decision_refusal(client, settings, row["request_id"])

    assert (final.turn_status, child_final.turn_status) == ("closed", "closed")
    assert "closed first" in tool_messages(final)[0]
    assert approval_row(settings.approvals_db, row["request_id"])["decision"] == "canceled"
    assert not (workspace_of(settings, cid) / "report.txt").exists()
    assert refused, "a decision after the cancel changes nothing"
    [conversation] = rows(settings.approvals_db, "SELECT * FROM ui_conversations WHERE conversation_id = ?", child)
    assert (conversation["turn_status"], conversation["pending_count"]) == ("closed", 0)
    assert len(model.reply_requests) == 2, "neither the parent nor the child asks the model again"


async def send_decision_refusal(client: Client, settings: Settings, request_id: str) -> bool:
    try:
        await send_decision(client, settings, DecisionInput(request_id=request_id, decision="allow"))
    except DecisionRefused:
        return True
    return False


async def test_a_terminated_parent_cancels_its_waiting_child(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = delegation(TASK, ("w1", "write_file", {"path": "report.txt", "content": "x"}))
    async with build_worker(client, settings):
        cid = await start_conversation(client, settings, "please delegate the report")
        child = child_conversation_id(cid, "d1")
        [row] = await wait_pending(settings.approvals_db, child, 1)
        await client.get_workflow_handle(cid).terminate("operator stopped it")
        with pytest.raises(WorkflowFailureError) as ended:
            await client.get_workflow_handle(child).result()
        await eventually(lambda: _resolved_as(settings, row["request_id"], "canceled"))

    assert isinstance(ended.value.cause, CancelledError)
    assert not (workspace_of(settings, cid) / "report.txt").exists()
    [conversation] = rows(settings.approvals_db, "SELECT * FROM ui_conversations WHERE conversation_id = ?", child)
    assert (conversation["turn_status"], conversation["pending_count"]) == ("closed", 0)


async def _resolved_as(settings: Settings, request_id: str, decision: str) -> bool:
    return approval_row(settings.approvals_db, request_id)["decision"] == decision


async def test_a_child_that_fails_gives_the_parent_an_error_result(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = delegation(TASK, ("w1", "write_file", {"path": "report.txt", "content": "x"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "please delegate the report"))
        child = child_conversation_id(cid, "d1")
        await wait_pending(settings.approvals_db, child, 1)
        # Both waiting, the parent on its child and the child on a person: saved and replayed as they are.
        assert await replay_recorded(client, [cid, child], "subagent-waiting") == 2
        await client.get_workflow_handle(child).terminate("stuck")
        state = await wait_status(client, cid, "idle")

    [result] = tool_messages(state)
    assert result.startswith(f"Error: the subagent {child} failed") and "terminated" in result.lower()
    assert state.messages[-1].content == f"results: {result}", "the parent's model read the error"
    assert not (workspace_of(settings, cid) / "report.txt").exists()


async def test_a_child_id_already_taken_gives_the_parent_an_error_result(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    parent_id = f"conv-{uuid.uuid4().hex[:8]}"
    taken = child_conversation_id(parent_id, "d1")
    delegating = delegation(TASK, ("l1", "list_dir", {"path": "."}))
    model.behaviour = lambda m: text_reply("squatting") if first_user_text(m) == "squat" else delegating(m)
    async with build_worker(client, settings):
        histories.track(await start_conversation(client, settings, "squat", taken))
        cid = histories.track(await start_conversation(client, settings, "please delegate the report", parent_id))
        state = await wait_status(client, cid, "idle")
        await close_conversation(client, taken)

    [result] = tool_messages(state)
    assert result.startswith(f"Error: the subagent {taken} could not start"), result


async def test_an_asked_delegation_shows_its_decision_while_the_child_works(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    settings = replace(settings, policy_file=write_policy(tmp_path, 'ask = ["delegate", "write_file"]\n'))
    model.behaviour = delegation(TASK, ("w1", "write_file", {"path": "report.txt", "content": "ok"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "please delegate the report"))
        child = histories.track(child_conversation_id(cid, "d1"))
        [asked] = await wait_pending(settings.approvals_db, cid, 1)
        assert asked["tool_name"] == "delegate"
        await send_decision(client, settings, DecisionInput(request_id=asked["request_id"], decision="allow"))
        [row] = await wait_pending(settings.approvals_db, child, 1)
        await eventually(lambda: _resolved_as(settings, asked["request_id"], "allow"))
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        state = await wait_status(client, cid, "idle")

    assert tool_messages(state) == ["results: Wrote 2 bytes to report.txt"]
