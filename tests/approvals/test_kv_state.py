"""Conversation key/value state: written by tools, kept in workflow state, mirrored when a turn waits."""

from __future__ import annotations

import json

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import tool_messages, wait_pending, wait_status
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker


async def test_kv_is_kept_across_turns_and_snapshotted_on_suspension(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(
        ("c_set", "kv_set", {"key": "plan", "value": {"step": 1, "files": ["a.txt"]}}),
        ("c_write", "write_file", {"path": "a.txt", "content": "a"}),
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "plan and write"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        assert json.loads(row["kv_snapshot_json"]) == {"plan": {"step": 1, "files": ["a.txt"]}}
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await wait_status(client, cid, "idle")

        model.behaviour = calls_then_summary(("c_get", "kv_get", {"key": "plan"}), ("c_miss", "kv_get", {"key": "x"}))
        await send_message(client, cid, "what was the plan?")
        state = await wait_status(client, cid, "idle")
    assert state.kv == {"plan": {"step": 1, "files": ["a.txt"]}}
    assert tool_messages(state)[-2:] == ['{"step": 1, "files": ["a.txt"]}', "Nothing is remembered under 'x'"]
