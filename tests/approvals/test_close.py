"""Closing a conversation cancels what waits: nothing runs, the rows say canceled, the run ends."""

from __future__ import annotations

from temporalio.client import Client

from config.settings import Settings
from core.contract import SIGNAL_CLOSE
from core.conversation_model import CloseInput, ConversationState
from doors.control import send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, rows, wait_pending, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker


async def test_close_cancels_pending_approvals_and_ends_the_workflow(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(
        ("c1", "write_file", {"path": "one.txt", "content": "1"}),
        ("c2", "run_shell", {"command": "echo 2 > two.txt"}),
        ("c3", "read_file", {"path": "one.txt"}),
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "three things"))
        pending = await wait_pending(settings.approvals_db, cid, 2)
        handle = client.get_workflow_handle(cid, result_type=ConversationState)
        await handle.signal(SIGNAL_CLOSE, CloseInput())
        await send_message(client, cid, "ignored after close")
        final = await handle.result()

    assert final.turn_status == "closed"
    results = [m.content or "" for m in final.messages if m.role == "tool"]
    assert len(results) == 3 and all(text.startswith("Not run") for text in results)
    assert "canceled" in results[0] and "closed" in results[2]
    assert (
        not (workspace_of(settings, cid) / "one.txt").exists()
        and not (workspace_of(settings, cid) / "two.txt").exists()
    )
    for row in pending:
        assert approval_row(settings.approvals_db, row["request_id"])["decision"] == "canceled"
    [conversation] = rows(settings.approvals_db, "SELECT * FROM ui_conversations WHERE conversation_id = ?", cid)
    assert (conversation["turn_status"], conversation["pending_count"]) == ("closed", 0)
    assert len(model.requests) == 1, "the model is not asked again after a close"
    assert not any(m.role == "user" and m.content == "ignored after close" for m in final.messages)
