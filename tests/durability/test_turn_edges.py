"""A turn's start and end reach the read model with the activities beside them: the start with the
tool listing, the end with the model call whose reply asks for no tool. No projection activity of
their own runs, and the row still ends as the workflow's status says, also when another write
came between the call and its reply, and when the model's worker cannot write."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.llm import LlmActivities
from config.settings import Settings
from core.conversation_model import DecisionInput
from demo_model.server import text_reply
from doors.control import get_state, send_decision, send_message, set_auto_approve, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import TURN_EVENTS, eventually, rows, start_and_wait, wait_status
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import api_client
from worker import build_worker
from workflows.activity_calls import PROJECT_CONVERSATION
from workflows.switches import EVENT_AUTO_APPROVE


async def scheduled_activities(client: Client, conversation_id: str) -> list[str]:
    history = await client.get_workflow_handle(conversation_id).fetch_history()
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def row_status(settings: Settings, conversation_id: str, status: str) -> bool:
    [row] = rows(settings.approvals_db, "SELECT * FROM ui_conversations WHERE conversation_id = ?", conversation_id)
    return bool(row["turn_status"] == status and row["pending_count"] == 0)


async def test_two_turns_write_their_edges_without_a_projection_activity(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "notes.txt", "content": "hello"}))
    async with build_worker(client, settings):
        asked = await start_and_wait(client, settings, "write hello to notes.txt", histories, pending=1)
        cid, [row] = asked.conversation_id, asked.pending
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await wait_status(client, cid, "idle", tool_results=1)
        await eventually(lambda: row_status(settings, cid, "idle"))
        model.behaviour = lambda messages: text_reply("second answer")
        await send_message(client, cid, "and again")

        async def answered_again() -> bool:
            state = await get_state(client, cid)
            return state.turn_status == "idle" and state.messages[-1].content == "second answer"

        await eventually(answered_again)
        await eventually(lambda: row_status(settings, cid, "idle"))

        activities = await scheduled_activities(client, cid)
    assert PROJECT_CONVERSATION not in activities
    assert activities.count("list_tools") == 2 and activities.count("call_llm") == 3
    events = [e["event_type"] for e in rows(settings.approvals_db, TURN_EVENTS, cid)]
    turns = [e for e in events if e in ("turn.started", "turn.completed")]
    assert turns == ["turn.started", "turn.completed", "turn.started", "turn.completed"]
    assert events.index("permission.request") < events.index("turn.completed")


async def test_a_write_during_the_model_call_has_the_turn_end_written_again(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    """The auto-approve switch writes the row (status running) after the call took the turn end's
    version: the call's write loses to it, so the workflow writes the end once more."""
    release = threading.Event()

    def held_reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
        release.wait(30)
        return text_reply("done at last")

    model.behaviour = held_reply
    try:
        async with build_worker(client, settings):
            cid = histories.track(await start_conversation(client, settings, "take your time"))

            async def model_asked() -> bool:
                return len(model.requests) == 1

            await eventually(model_asked)
            await set_auto_approve(client, cid, True, by="alice")

            async def switch_written() -> bool:
                return EVENT_AUTO_APPROVE in [e["event_type"] for e in rows(settings.approvals_db, TURN_EVENTS, cid)]

            await eventually(switch_written)
            release.set()
            await wait_status(client, cid, "idle")
            await eventually(lambda: row_status(settings, cid, "idle"))
            activities = await scheduled_activities(client, cid)
    finally:
        release.set()
    assert activities.count(PROJECT_CONVERSATION) == 2  # the switch's write, then the turn's end again
    events = [e["event_type"] for e in rows(settings.approvals_db, TURN_EVENTS, cid)]
    assert events.count("turn.completed") == 1 and events[-1] == "turn.completed"


class ModelWorkerThatCannotWrite(LlmActivities):
    """A model activity from before the turn's end rode with it: it ignores `turn_end`."""

    def __init__(self, *args: Any, turn_ends: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)


async def test_a_model_worker_that_cannot_write_leaves_the_turn_end_to_the_workflow(
    client: Client, settings: Settings, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("worker.LlmActivities", ModelWorkerThatCannotWrite)
    model.behaviour = lambda messages: text_reply("plain answer")
    async with build_worker(client, settings):
        cid = await start_conversation(client, settings, "hello")
        await wait_status(client, cid, "idle")
        await eventually(lambda: row_status(settings, cid, "idle"))
        activities = await scheduled_activities(client, cid)
    assert activities.count(PROJECT_CONVERSATION) == 1
    events = [e["event_type"] for e in rows(settings.approvals_db, TURN_EVENTS, cid)]
    assert [e for e in events if e.startswith("turn.")] == ["turn.started", "turn.completed"]


class HeldTurnEnds:
    """The worker's turn-end writes, each held after it is written until the test lets the model's
    activity return: the event log shows the turn's end while the workflow has not taken the reply."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.written = asyncio.Event()
        self.release = asyncio.Event()

    async def project_conversation(self, conv: Any) -> None:
        await self._store.project_conversation(conv)
        self.written.set()
        await self.release.wait()


async def test_a_detail_read_on_the_turn_end_event_waits_for_the_workflow_to_take_the_reply(
    client: Client, settings: Settings, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    held: list[HeldTurnEnds] = []

    class HeldModelActivities(LlmActivities):
        def __init__(self, *args: Any, turn_ends: Any = None, **kwargs: Any) -> None:
            held.append(HeldTurnEnds(turn_ends))
            super().__init__(*args, turn_ends=held[-1], **kwargs)

    monkeypatch.setattr("worker.LlmActivities", HeldModelActivities)
    model.behaviour = lambda messages: text_reply("the whole reply")
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = await start_conversation(client, settings, "hello")
        [turn_ends] = held
        try:
            await asyncio.wait_for(turn_ends.written.wait(), 30)
            before = await get_state(client, cid)
            reading = asyncio.create_task(http.get(f"/api/conversations/{cid}"))
            await asyncio.sleep(0.2)
        finally:
            turn_ends.release.set()
        detail = (await reading).json()
    assert before.turn_status == "running" and before.messages[-1].content == "hello"
    assert detail["turn_status"] == "idle"
    assert detail["messages"][-1]["content"] == "the whole reply"
