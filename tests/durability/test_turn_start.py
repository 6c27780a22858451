"""A turn's start reaches the read model with the turn's tool listing (`turn-start-with-the-listing`):
the `list_tools` activity writes it before it lists, so no projection activity of its own runs for
it. A listing worker that cannot write it (one from before) leaves it to the workflow, as before.
The turn's end is still written by the workflow's own projection activity, after the workflow has
taken the reply: the read model never shows a state history does not hold."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from activities.ledger import Ledger
from activities.tools import ToolActivities
from config.settings import Settings
from core.conversation_model import DecisionInput
from core.projection_model import ConversationProjection
from core.tool_model import ToolCatalog
from core.tool_run_model import ListToolsInput
from demo_model.server import text_reply
from doors.control import send_decision, send_message, start_conversation
from storage.backend import StoreUnavailable
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import (
    TURN_EVENTS,
    eventually,
    rows,
    scheduled_activities,
    start_and_wait,
    wait_reply,
    wait_status,
)
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker
from workflows.activity_calls import LIST_TOOLS, PROJECT_CONVERSATION


async def row_status(settings: Settings, conversation_id: str, status: str) -> bool:
    [row] = rows(settings.approvals_db, "SELECT * FROM ui_conversations WHERE conversation_id = ?", conversation_id)
    return bool(row["turn_status"] == status and row["pending_count"] == 0)


def turn_events(settings: Settings, conversation_id: str) -> list[str]:
    events = [e["event_type"] for e in rows(settings.approvals_db, TURN_EVENTS, conversation_id)]
    return [e for e in events if e.startswith("turn.")]


async def test_each_turn_starts_in_the_read_model_with_its_listing(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "notes.txt", "content": "hello"}))
    async with build_worker(client, settings):
        asked = await start_and_wait(client, settings, "write hello to notes.txt", histories, pending=1)
        cid, [row] = asked.conversation_id, asked.pending
        assert turn_events(settings, cid)[0] == "turn.started"
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await wait_status(client, cid, "idle", tool_results=1)
        model.behaviour = lambda messages: text_reply("second answer")
        await send_message(client, cid, "and again")
        await wait_reply(client, cid, "second answer")
        await eventually(lambda: row_status(settings, cid, "idle"))
        activities = scheduled_activities(await client.get_workflow_handle(cid).fetch_history())
    assert activities.count(LIST_TOOLS) == 2
    assert activities.count(PROJECT_CONVERSATION) == 2  # each turn's end, none for a start
    turns = [e for e in turn_events(settings, cid) if e in ("turn.started", "turn.completed")]
    assert turns == ["turn.started", "turn.completed", "turn.started", "turn.completed"]


class ListingWorkerThatCannotWrite(ToolActivities):
    """A listing activity from before the turn's start went with it: it ignores `turn_start`."""

    @activity.defn(name=LIST_TOOLS)
    async def list_tools(self, request: ListToolsInput) -> ToolCatalog:
        return await self.sources.catalog(request.workspace)


async def test_a_listing_worker_that_cannot_write_leaves_the_turn_start_to_the_workflow(
    client: Client, settings: Settings, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("worker.ToolActivities", ListingWorkerThatCannotWrite)
    model.behaviour = lambda messages: text_reply("plain answer")
    async with build_worker(client, settings):
        cid = await start_conversation(client, settings, "hello")
        await wait_status(client, cid, "idle")
        await eventually(lambda: row_status(settings, cid, "idle"))
        activities: list[Any] = scheduled_activities(await client.get_workflow_handle(cid).fetch_history())
    assert activities == [LIST_TOOLS, PROJECT_CONVERSATION, "call_llm", PROJECT_CONVERSATION]
    assert turn_events(settings, cid) == ["turn.started", "turn.completed"]


class RefusingReadModel(ProjectionStore):
    """A read model whose conversation rows cannot be written (a full disk, a database away)."""

    async def project_conversation(self, conv: ConversationProjection) -> None:
        raise StoreUnavailable("the read model (APPROVALS_DB) cannot be written: its disk is full")


async def test_a_start_the_read_model_refuses_leaves_the_listing_whole(tmp_path: Path) -> None:
    ledger, projection = Ledger(tmp_path / "ledger.db"), RefusingReadModel(tmp_path / "approvals.db")
    tools = ToolActivities(tmp_path / "workspace", ledger, projection)
    start = ConversationProjection(
        conversation_id="c", turn_status="running", pending_count=0, updated_at=datetime.now(UTC), version=1
    )
    try:
        listed = await ActivityEnvironment().run(
            tools.list_tools, ListToolsInput(conversation_id="c", turn_id="turn_1", turn_start=start)
        )
    finally:
        await ledger.close()
        await projection.close()
    assert not listed.wrote_turn_start  # so the workflow writes it by its projection activity
    assert "write_file" in {tool.name for tool in listed.tools} and not listed.unavailable
