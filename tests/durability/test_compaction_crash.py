"""SIGKILL the worker while the model writes a compaction's summary: a new worker asks for the
summary again (once), archives once, and the turn completes once."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from config.settings import Settings
from demo_model.script import scripted_summary
from demo_model.server import text_reply, tool_reply
from doors.control import get_state, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.failure_support import held_first, projection_catches_up, wait_turn, worker_process
from tests.support.helpers import TURN_EVENTS, archived, eventually, full_transcript, new_workspace, rows
from tests.support.scripts import ScriptedModel, last_role


def read_big(messages: list[dict[str, Any]]) -> dict[str, Any]:
    if last_role(messages) == "tool":
        return text_reply("read it")
    return tool_reply(("r", "read_file", {"path": "big.txt"}))


async def summarising_or_idle(client: Client, conversation_id: str, model: ScriptedModel) -> bool:
    """Waits until the summarise request is held (True) or the turn ended without one (False)."""

    async def check() -> str | None:
        if model.summary_requests:
            return "summarising"
        try:
            state = await get_state(client, conversation_id)
        except RPCError:  # the worker is still starting
            return None
        return "idle" if state.turn_status == "idle" else None

    return await eventually(check) == "summarising"


async def test_worker_killed_while_the_summary_is_written(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    settings = dataclasses.replace(settings, context_budget_tokens=3000)
    planned, ws = new_workspace(settings)
    (ws / "big.txt").write_text("a line of a big file\n" * 800)
    db = settings.approvals_db
    gate = threading.Event()
    model.behaviour = read_big
    model.summariser = held_first(scripted_summary, gate)
    turns = ["read 1", "read 2", "read 3", "read 4"]
    try:
        with worker_process(settings, client, tmp_path / "worker-1.log") as first:
            cid = histories.track(await start_conversation(client, settings, turns[0], planned))
            sent = 1
            # Turns until one passes the budget: its summarise request is then in flight, held.
            while not await summarising_or_idle(client, cid, model):
                await send_message(client, cid, turns[sent])
                sent += 1
            first.kill()
        gate.set()
        with worker_process(settings, client, tmp_path / "worker-2.log"):
            await wait_turn(client, cid, "idle")
            for text in turns[sent:]:
                await send_message(client, cid, text)
                await wait_turn(client, cid, "idle")
            state = await projection_catches_up(client, db, cid)
    finally:
        gate.set()
    assert 1 < sent < len(turns), "the compaction came in a middle turn"

    events = [r["event_type"] for r in rows(db, TURN_EVENTS, cid)]
    assert events.count("turn.started") == events.count("turn.completed") == len(turns)
    compactions = events.count("conversation.compacted")
    assert compactions >= 1
    # The killed summarise request was asked again once; every assistant message was asked for once.
    assert len(model.summary_requests) == compactions + 1
    transcript = full_transcript(db, state)
    assert len(model.reply_requests) == sum(1 for m in transcript if m.role == "assistant") == 2 * len(turns)
    assert [m.content for m in transcript if m.role == "user"] == turns
    assert [r["seq"] for r in archived(db, cid)] == list(range(1, state.archived_messages + 1))
