"""Close means stop: a close during a slow model call ends the conversation without waiting for the
model, the call is cancelled, and the close is recorded at the moment the person closed it."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from config.settings import Settings
from core.contract import SIGNAL_CLOSE
from core.conversation_model import CloseInput, ConversationState
from demo_model.server import text_reply
from doors.control import start_conversation
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually
from tests.support.scripts import ScriptedModel
from worker import build_worker

MODEL_SECONDS = 60


async def test_close_during_a_slow_model_call_stops_it_and_records_the_signal_time(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    asked, release, answered = threading.Event(), threading.Event(), threading.Event()

    def slow(messages: list[dict[str, Any]]) -> dict[str, Any]:
        asked.set()
        release.wait(MODEL_SECONDS)  # a model that takes a minute to write its reply
        answered.set()
        return text_reply("too late")

    model.behaviour = slow
    try:
        async with build_worker(client, settings):
            cid = histories.track(await start_conversation(client, settings, "take your time"))
            assert await asyncio.to_thread(asked.wait, 30), "the model was never asked"
            handle = client.get_workflow_handle(cid, result_type=ConversationState)
            await handle.signal(SIGNAL_CLOSE, CloseInput(by="alice", door="cli"))
            final = await handle.result()
            assert not answered.is_set(), "the conversation waited for the model's reply"
            history = await handle.fetch_history()
    finally:
        release.set()

    assert final.turn_status == "closed" and final.closed_by == "alice"
    assert not any(m.role == "assistant" for m in final.messages), "no reply of the cancelled call is kept"
    kinds = [event.event_type for event in history.events]
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED in kinds, "the model call was not cancelled"
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED in kinds

    # The close time is the workflow's clock when the signal was handled, not when anything returned.
    signalled = kinds.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    handled = next(
        event for event in history.events[signalled:] if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
    )

    async def closed_switch() -> dict | None:
        store = ProjectionStore(settings.approvals_db)
        try:
            found = [row for row in await store.switches(cid) if row["switch"] == "close"]
        finally:
            await store.close()
        return found[0] if found else None

    switch = await eventually(closed_switch)
    assert (switch["by"], switch["door"]) == ("alice", "cli")
    recorded = datetime.fromisoformat(str(switch["created_at"]))
    # The same instant (event times carry nanoseconds, Python datetimes microseconds).
    assert abs(recorded - handled.event_time.ToDatetime(tzinfo=UTC)) < timedelta(milliseconds=1)
