"""Subagents: a `delegate` call runs a child conversation whose approvals reach the same inbox."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from control import send_decision, start_conversation
from settings import Settings
from tests.conftest import HistoryRecorder
from tests.helpers import approval_row, rows, tool_messages, wait_pending, wait_status
from tests.scripts import ScriptedModel, delegation
from worker import build_worker
from workflows.delegation import child_conversation_id
from workflows.models import ConversationState, DecisionInput

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
        assert not (settings.workspace_dir / "report.txt").exists()
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        state = await wait_status(client, cid, "idle")
        child_final = await client.get_workflow_handle(child, result_type=ConversationState).result()

    assert (settings.workspace_dir / "report.txt").read_text() == "all good"
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

    assert not (settings.workspace_dir / "report.txt").exists()
    [result] = tool_messages(state)
    assert "denied" in result and "reports are read-only" in result
    assert approval_row(settings.approvals_db, row["request_id"])["decision"] == "deny"
