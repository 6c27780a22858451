"""The conversation's two switches through the doors people use: `close` and `auto-approve` in the
CLI, and their API routes behind the UI's buttons."""

from __future__ import annotations

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import ConversationState
from doors.control import get_state, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, pending_rows, wait_pending, wait_status, workspace_of
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.stack import one_line
from tests.support.ui_fixtures import api_client
from worker import build_worker

WRITE = ("call_1", "write_file", {"path": "auto.txt", "content": "by auto-approve"})


async def test_cli_switches_auto_approve_and_closes(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(WRITE)
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write auto.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)

        on = await run_cli(settings, client, "auto-approve", cid, "on")
        assert on.returncode == 0, on.stderr
        assert "Auto-approve is on" in on.stdout
        await eventually(lambda: _auto_approve(client, cid, True))
        off = await run_cli(settings, client, "auto-approve", cid, "off")
        assert off.returncode == 0, off.stderr
        await eventually(lambda: _auto_approve(client, cid, False))
        bad = await run_cli(settings, client, "auto-approve", cid, "maybe")
        assert bad.returncode == 2 and "invalid choice" in one_line(bad.stderr)

        closed = await run_cli(settings, client, "close", cid)
        assert closed.returncode == 0, closed.stderr
        final = await client.get_workflow_handle(cid, result_type=ConversationState).result()
        again = await run_cli(settings, client, "close", cid)
        unknown = await run_cli(settings, client, "close", "conv-nowhere")

    assert final.turn_status == "closed"
    assert approval_row(settings.approvals_db, row["request_id"])["decision"] == "canceled"
    assert not (workspace_of(settings, cid) / "auto.txt").exists()
    assert again.returncode == 3 and "closing" in one_line(again.stderr)
    assert unknown.returncode == 3 and "conv-nowhere" in one_line(unknown.stderr)


async def _auto_approve(client: Client, conversation_id: str, expected: bool) -> bool:
    return (await get_state(client, conversation_id)).auto_approve is expected


async def test_api_auto_approve_lets_the_next_ask_run_and_close_ends_the_conversation(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(WRITE)
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "write auto.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        denied = await http.post(f"/api/approvals/{row['request_id']}/decision", json={"decision": "deny"})
        assert denied.status_code == 200
        await wait_status(client, cid, "idle")

        malformed = await http.post(f"/api/conversations/{cid}/auto-approve", json={"enabled": "yes"})
        assert malformed.status_code == 422
        switched = await http.post(f"/api/conversations/{cid}/auto-approve", json={"enabled": True})
        assert switched.status_code == 202 and switched.json() == {"conversation_id": cid, "auto_approve": True}
        assert (await http.get(f"/api/conversations/{cid}")).json()["auto_approve"] is True

        await send_message(client, cid, "write it again")
        await wait_status(client, cid, "idle")
        assert pending_rows(settings.approvals_db, cid) == [], "the second write was not asked"

        closing = await http.post(f"/api/conversations/{cid}/close")
        assert closing.status_code == 202
        final = await client.get_workflow_handle(cid, result_type=ConversationState).result()
        again = await http.post(f"/api/conversations/{cid}/close")
        unknown = await http.post("/api/conversations/conv-nowhere/auto-approve", json={"enabled": False})

    assert (workspace_of(settings, cid) / "auto.txt").read_text() == "by auto-approve"
    assert final.turn_status == "closed"
    assert again.status_code == 404 and unknown.status_code == 404
