"""Always-allow and auto-approve lift asks for a conversation, and never beat a deny rule."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from config.settings import Settings
from core.contract import SIGNAL_SET_AUTO_APPROVE
from core.conversation_model import AutoApproveInput, DecisionInput
from demo_model.server import text_reply, tool_reply
from doors.control import send_decision, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import pending_rows, rows, tool_messages, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, last_role
from worker import build_worker


def shell_per_message(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Runs the user's text as a shell command; `both X; Y` asks for two commands in one message."""
    if last_role(messages) == "tool":
        return text_reply("done")
    text = str(messages[-1]["content"])
    if text.startswith("both "):
        first, second = text.removeprefix("both ").split(";")
        return tool_reply(
            ("c1", "run_shell", {"command": first.strip()}), ("c2", "run_shell", {"command": second.strip()})
        )
    return tool_reply(("c1", "run_shell", {"command": text}))


def approvals_of(settings: Settings, conversation_id: str) -> int:
    return len(
        rows(settings.approvals_db, "SELECT 1 FROM ui_pending_approvals WHERE conversation_id = ?", conversation_id)
    )


async def test_always_allow_covers_siblings_and_later_turns_but_not_denies(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = shell_per_message
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "both echo a > a.txt; echo b > b.txt"))
        ws = workspace_of(settings, cid)
        first, _second = await wait_pending(settings.approvals_db, cid, 2)
        await send_decision(
            client, settings, DecisionInput(request_id=first["request_id"], decision="always_allow", decided_by="ann")
        )
        state = await wait_status(client, cid, "idle")
        assert state.always_allow == ["run_shell"]
        assert (ws / "a.txt").exists() and (ws / "b.txt").exists(), "the waiting sibling was released too"
        assert approvals_of(settings, cid) == 2

        await send_message(client, cid, "echo c > c.txt")
        await wait_status(client, cid, "idle", tool_results=3)
        assert (ws / "c.txt").exists()
        assert approvals_of(settings, cid) == 2, "a later turn ran without asking"

        await send_message(client, cid, "sudo touch root.txt")
        state = await wait_status(client, cid, "idle", tool_results=4)
        assert "deny rule" in tool_messages(state)[-1]
        await send_message(client, cid, "echo ok; sudo touch hidden.txt")
        state = await wait_status(client, cid, "idle", tool_results=5)
        assert "deny rule" in tool_messages(state)[-1], "a denied segment cannot hide in a compound command"
    assert not (ws / "root.txt").exists() and not (ws / "hidden.txt").exists()
    assert pending_rows(settings.approvals_db, cid) == []


async def test_auto_approve_runs_asks_but_still_honours_deny(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = shell_per_message
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "echo before > before.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="deny"))
        await wait_status(client, cid, "idle")

        await client.get_workflow_handle(cid).signal(SIGNAL_SET_AUTO_APPROVE, AutoApproveInput(enabled=True))
        await send_message(client, cid, "echo auto > auto.txt")
        state = await wait_status(client, cid, "idle", tool_results=2)
        assert state.auto_approve is True
        await send_message(client, cid, "sudo rm -rf /tmp/anything")
        state = await wait_status(client, cid, "idle", tool_results=3)
    assert (workspace_of(settings, cid) / "auto.txt").read_text() == "auto\n"
    assert not (workspace_of(settings, cid) / "before.txt").exists()
    assert "deny rule" in tool_messages(state)[-1]
    assert approvals_of(settings, cid) == 1
