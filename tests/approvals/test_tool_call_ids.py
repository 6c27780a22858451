"""A model that reuses `call_1` everywhere: every approval still gets its own request and row."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from demo_model.server import text_reply, tool_reply
from doors.control import send_decision, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, rows, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, last_role
from worker import build_worker


def reuse_call_1(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Writes the user's text to a file named by it, always under tool call id call_1."""
    if last_role(messages) == "tool":
        return text_reply("ok")
    text = str(messages[-1]["content"])
    if text.startswith("twice "):
        name = text.removeprefix("twice ")
        return tool_reply(
            ("call_1", "write_file", {"path": f"{name}-a.txt", "content": "a"}),
            ("call_1", "write_file", {"path": f"{name}-b.txt", "content": "b"}),
        )
    return tool_reply(("call_1", "write_file", {"path": f"{text}.txt", "content": text}))


async def test_reused_ids_get_distinct_requests_across_turns_and_conversations(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = reuse_call_1
    db = settings.approvals_db
    async with build_worker(client, settings):
        first = histories.track(await start_conversation(client, settings, "one"))
        second = histories.track(await start_conversation(client, settings, "other"))
        [first_row] = await wait_pending(db, first, 1)
        [second_row] = await wait_pending(db, second, 1)
        assert first_row["request_id"] == f"perm_{first}_call_1"
        assert second_row["request_id"] == f"perm_{second}_call_1"

        await send_decision(client, settings, DecisionInput(request_id=first_row["request_id"], decision="allow"))
        await wait_status(client, first, "idle")
        await send_message(client, first, "two")
        [turn_two] = await wait_pending(db, first, 1)
        assert turn_two["request_id"] == f"perm_{first}_call_1_2"
        await send_decision(client, settings, DecisionInput(request_id=turn_two["request_id"], decision="deny"))
        await wait_status(client, first, "idle")

        await send_message(client, first, "twice pair")
        pair = await wait_pending(db, first, 2)
        assert sorted(row["tool_call_id"] for row in pair) == ["call_1_3", "call_1_4"]
        by_path = {row["request_id"]: row for row in pair}
        allow_b = next(rid for rid, row in by_path.items() if "pair-b.txt" in row["details_json"])
        deny_a = next(rid for rid in by_path if rid != allow_b)
        await send_decision(client, settings, DecisionInput(request_id=allow_b, decision="allow"))
        await send_decision(client, settings, DecisionInput(request_id=deny_a, decision="deny"))
        await wait_status(client, first, "idle")

        await send_decision(client, settings, DecisionInput(request_id=second_row["request_id"], decision="deny"))
        await wait_status(client, second, "idle")

    ws = workspace_of(settings, first)
    assert (ws / "one.txt").read_text() == "one"
    assert not (ws / "two.txt").exists()
    assert (ws / "pair-b.txt").read_text() == "b" and not (ws / "pair-a.txt").exists()
    assert not (workspace_of(settings, second) / "other.txt").exists(), "the other conversation's deny stayed there"
    assert approval_row(db, first_row["request_id"])["decision"] == "allow"
    assert approval_row(db, second_row["request_id"])["decision"] == "deny"
    all_rows = rows(db, "SELECT request_id FROM ui_pending_approvals")
    assert len(all_rows) == len({row["request_id"] for row in all_rows}) == 5

    async def no_pending() -> bool:
        return not rows(db, "SELECT 1 FROM ui_pending_approvals WHERE resolved_at IS NULL")

    await eventually(no_pending)
