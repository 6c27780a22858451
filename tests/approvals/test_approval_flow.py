"""The approval loop on a real Temporal dev server, with a scripted model over HTTP."""

from __future__ import annotations

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, tool_messages, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker
from workflows.status import TURN_STATUS_KEY


async def test_allowed_write_runs_once_and_turn_ends_idle(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "notes.txt", "content": "hello"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write hello to notes.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        assert row["tool_name"] == "write_file"
        assert row["request_id"] == f"perm_{cid}_call_1"
        assert not (workspace_of(settings, cid) / "notes.txt").exists()
        description = await client.get_workflow_handle(cid).describe()
        assert description.typed_search_attributes.get(TURN_STATUS_KEY) == "awaiting_approval"

        await send_decision(
            client, settings, DecisionInput(request_id=row["request_id"], decision="allow", decided_by="alice")
        )
        state = await wait_status(client, cid, "idle")

    assert (workspace_of(settings, cid) / "notes.txt").read_text() == "hello"
    assert tool_messages(state) == ["Wrote 5 bytes to notes.txt"]
    assert state.messages[-1].content == "results: Wrote 5 bytes to notes.txt"
    assert len(model.requests) == 2
    resolved = approval_row(settings.approvals_db, row["request_id"])
    assert (resolved["decision"], resolved["decided_by"]) == ("allow", "alice")
    assert resolved["execution_state"] == "done"


async def test_denied_write_never_runs_and_model_gets_reason(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "secret.txt", "content": "x"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write the secret"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        decision = DecisionInput(request_id=row["request_id"], decision="deny", reason="not in prod", decided_by="bob")
        await send_decision(client, settings, decision)
        state = await wait_status(client, cid, "idle")

    assert not (workspace_of(settings, cid) / "secret.txt").exists()
    [result] = tool_messages(state)
    assert "denied" in result and "not in prod" in result
    last_request_tool_messages = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert "not in prod" in last_request_tool_messages[-1]["content"]
    assert approval_row(settings.approvals_db, row["request_id"])["decision"] == "deny"
