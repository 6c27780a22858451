"""A conversation's tools run on one host's task queue, chosen once and recorded in history."""

from __future__ import annotations

from temporalio.client import Client

from control import send_decision, send_message, start_conversation
from settings import Settings
from tests.conftest import HistoryRecorder
from tests.helpers import wait_pending, wait_status
from tests.scripts import ScriptedModel, calls_then_summary
from worker import build_worker
from workflows.activity_calls import EXECUTE_TOOL, PICK_TOOL_HOST
from workflows.models import DecisionInput


async def scheduled(client: Client, conversation_id: str) -> list[tuple[str, str]]:
    """(activity type, task queue) of every activity the conversation scheduled, in order."""
    history = await client.get_workflow_handle(conversation_id).fetch_history()
    return [
        (attrs.activity_type.name, attrs.task_queue.name)
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
        for attrs in [event.activity_task_scheduled_event_attributes]
    ]


async def test_tools_go_to_the_host_picked_once_for_the_conversation(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(
        ("call_1", "list_dir", {"path": "."}), ("call_2", "write_file", {"path": "a.txt", "content": "x"})
    )
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "list, then write"))
        for turn in range(2):
            [row] = await wait_pending(settings.approvals_db, cid, 1)
            await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
            await wait_status(client, cid, "idle")
            if turn == 0:
                await send_message(client, cid, "again")

    activities = await scheduled(client, cid)
    picks = [queue for name, queue in activities if name == PICK_TOOL_HOST]
    tools = [queue for name, queue in activities if name == EXECUTE_TOOL]
    assert picks == [settings.task_queue], "picked once, by any worker of the shared queue"
    assert tools == [settings.host_task_queue] * 4, "every tool, allowed or approved, on the picked host"
    assert activities.index((PICK_TOOL_HOST, settings.task_queue)) < activities.index(
        (EXECUTE_TOOL, settings.host_task_queue)
    )
    assert (settings.workspace_dir / "a.txt").read_text() == "x"
