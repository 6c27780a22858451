"""Undo of an approved write_file: asked as a request of its own, approved and audited, it restores
the exact bytes the write replaced; the model hears of it in its next turn; after a later change of
the file it refuses and shows the three states of the file."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from demo_model.server import text_reply, tool_reply
from doors.control import send_decision, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, new_workspace, pending_rows, rows, wait_pending, wait_status
from tests.support.postgres import on_both_backends
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, last_role
from worker import build_worker

OLD = "première ligne\r\nsans fin de ligne".encode()
NEW = "rewritten\n"


def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
    if last_role(messages) == "user" and messages[-1]["content"] == "rewrite it":
        return tool_reply(("c1", "write_file", {"path": "doc.txt", "content": NEW}))
    return text_reply("ok")


@on_both_backends
async def test_an_undo_is_asked_restores_the_exact_bytes_and_refuses_after_a_later_change(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    cid, ws = new_workspace(settings)
    target = ws / "doc.txt"
    target.write_bytes(OLD)
    model.behaviour = behave
    async with build_worker(client, settings):
        histories.track(await start_conversation(client, settings, "rewrite it", cid))
        [write] = await wait_pending(settings.approvals_db, cid, 1)
        await send_decision(client, settings, DecisionInput(request_id=write["request_id"], decision="allow"))
        await wait_status(client, cid, "idle")
        assert target.read_text() == NEW

        asked = await run_cli(settings, client, "undo", write["request_id"], "--as", "carol")
        assert asked.returncode == 0, asked.stderr
        undo_id = asked.stdout.strip()
        assert undo_id == f"perm_{cid}_undo-c1"
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        assert row["request_id"] == undo_id and row["tool_name"] == "write_file"
        assert target.read_text() == NEW, "an undo waits for its approval"
        assert "-rewritten" in row["preview_json"] and "carol asked to undo" in row["why_json"]

        await send_decision(client, settings, DecisionInput(request_id=undo_id, decision="allow", decided_by="dave"))
        await eventually(lambda: _done(settings, undo_id))
        assert target.read_bytes() == OLD
        await eventually(lambda: _idle(settings, cid))  # the read model shows it between turns again
        decided = approval_row(settings.approvals_db, undo_id)
        assert (decided["decision"], decided["decided_by"], decided["execution_state"]) == ("allow", "dave", "done")

        await send_message(client, cid, "what happened?")
        await wait_status(client, cid, "idle", tool_results=0)
        told = [m["content"] for m in model.reply_requests[-1]["messages"] if m["role"] == "system"]
        assert any("dave undid the approved write_file of doc.txt" in text for text in told)

        target.write_text("a later edit\n")
        again = await run_cli(settings, client, "undo", write["request_id"])
        assert again.returncode == 3, again.stdout
        assert "changed since" in again.stderr and "+a later edit" in again.stdout
        assert "== what the approved write changed" in again.stdout
        assert pending_rows(settings.approvals_db, cid) == []
    assert target.read_text() == "a later edit\n"


async def _idle(settings: Settings, cid: str) -> bool:
    [row] = rows(settings.approvals_db, "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?", cid)
    return row["turn_status"] == "idle"


async def _done(settings: Settings, request_id: str) -> bool:
    return approval_row(settings.approvals_db, request_id)["execution_state"] == "done"
