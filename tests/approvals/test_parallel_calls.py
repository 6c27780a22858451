"""Several tool calls in one assistant message: each gets its own result and its own approval."""

from __future__ import annotations

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, new_workspace, tool_messages, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker


async def executed_tools(client: Client, conversation_id: str) -> list[str]:
    """Tool names of every execute_tool activity scheduled in the history, retries excluded."""
    history = await client.get_workflow_handle(conversation_id).fetch_history()
    names = []
    for event in history.events:
        attributes = event.activity_task_scheduled_event_attributes
        if (
            event.HasField("activity_task_scheduled_event_attributes")
            and attributes.activity_type.name == "execute_tool"
        ):
            names.append(attributes.input.payloads[0].data.decode())
    return names


async def test_three_calls_one_allowed_by_rule_two_asked(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    planned, ws = new_workspace(settings)
    (ws / "notes.txt").write_text("original notes")
    model.behaviour = calls_then_summary(
        ("call_read", "read_file", {"path": "notes.txt"}),
        ("call_write", "write_file", {"path": "out.txt", "content": "written"}),
        ("call_shell", "run_shell", {"command": "echo ran > shell.txt"}),
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "do three things", planned))
        pending = await wait_pending(settings.approvals_db, cid, 2)
        assert {row["tool_name"] for row in pending} == {"write_file", "run_shell"}
        waiting = await wait_status(client, cid, "awaiting_approval")
        assert tool_messages(waiting) == ["original notes"], "the allowed read ran before the suspension"

        by_tool = {row["tool_name"]: row["request_id"] for row in pending}
        await send_decision(client, settings, DecisionInput(request_id=by_tool["write_file"], decision="allow"))
        await send_decision(
            client, settings, DecisionInput(request_id=by_tool["run_shell"], decision="deny", reason="no shell")
        )
        state = await wait_status(client, cid, "idle")
        executed = await executed_tools(client, cid)

    results = {str(m.tool_call_id): m.content for m in state.messages if m.role == "tool"}
    assert sorted(results) == ["call_read", "call_shell", "call_write"], "each call has exactly one result"
    assert results["call_read"] == "original notes"
    assert results["call_write"] == "Wrote 7 bytes to out.txt"
    assert results["call_shell"] is not None and "no shell" in results["call_shell"]
    assert (workspace_of(settings, cid) / "out.txt").read_text() == "written"
    assert not (workspace_of(settings, cid) / "shell.txt").exists()
    assert len(executed) == 2 and sum("read_file" in item for item in executed) == 1, executed
    assert approval_row(settings.approvals_db, by_tool["run_shell"])["decision"] == "deny"
    assert len(model.requests) == 2
