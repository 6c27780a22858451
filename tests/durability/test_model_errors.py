"""Model errors: bad credentials fail the turn at once with the reason; a passing fault is retried."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from config.settings import Settings
from demo_model.server import ScriptedHttpError, text_reply
from doors.control import send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import rows, wait_status
from tests.support.scripts import ScriptedModel
from worker import build_worker


async def test_authentication_error_fails_the_turn_without_retrying(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    def reject(messages: list[dict[str, Any]]) -> dict[str, Any]:
        raise ScriptedHttpError(401, "invalid api key")

    model.behaviour = reject
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "hello"))
        state = await wait_status(client, cid, "failed")
        assert state.last_error is not None and "invalid api key" in state.last_error
        assert len(model.requests) == 1, "a non-retryable error is not retried"

        model.behaviour = lambda messages: text_reply("back again")
        await send_message(client, cid, "try again")
        state = await wait_status(client, cid, "idle")
    assert state.messages[-1].content == "back again", "a failed turn does not end the conversation"
    [conversation] = rows(settings.approvals_db, "SELECT * FROM ui_conversations WHERE conversation_id = ?", cid)
    assert conversation["turn_status"] == "idle"
    events = [
        r["event_type"]
        for r in rows(
            settings.approvals_db,
            "SELECT event_type FROM ui_events WHERE event_type <> 'message.delta' ORDER BY event_id",
        )
    ]
    assert events == ["turn.started", "turn.failed", "turn.started", "turn.completed"]


async def test_server_error_is_retried_by_temporal(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    failures = iter([True, False])

    def flaky(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if next(failures, False):
            raise ScriptedHttpError(500, "overloaded")
        return text_reply("recovered")

    model.behaviour = flaky
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "hello"))
        state = await wait_status(client, cid, "idle")
    assert state.messages[-1].content == "recovered"
    assert len(model.requests) == 2
