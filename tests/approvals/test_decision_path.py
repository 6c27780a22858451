"""What a decision costs in history: the door's `decide` update is taken in one workflow task that
records the status and schedules the approved tool, and nothing else (the patches a decided call
checks were checked, and their markers recorded, when it was asked)."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from config.settings import Settings
from core.models import DecisionInput
from doors.control import send_decision
from tests.conftest import HistoryRecorder
from tests.helpers import approval_row, start_and_wait, wait_status, workspace_of
from tests.scripts import ScriptedModel, calls_then_summary
from worker import build_worker
from workflows import patches
from workflows.activity_calls import EXECUTE_TOOL


async def test_the_decision_task_schedules_the_tool_with_no_patch_marker(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "notes.txt", "content": "hello"}))
    async with build_worker(client, settings):
        started = await start_and_wait(client, settings, "write hello to notes.txt", histories, pending=1)
        cid, [row] = started.conversation_id, started.pending
        decision = DecisionInput(request_id=row["request_id"], decision="allow", decided_by="alice")
        await send_decision(client, settings, decision)
        await wait_status(client, cid, "idle")
        history = await client.get_workflow_handle(cid).fetch_history()

    kinds = [event.event_type for event in history.events]
    decided = kinds.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED not in kinds  # the update was taken
    scheduled = next(
        i
        for i, event in enumerate(history.events)
        if i > decided
        and event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and event.activity_task_scheduled_event_attributes.activity_type.name == EXECUTE_TOOL
    )
    # The update's task (handed to the worker at once) then the update's events, in one completion.
    assert [EventType.Name(kinds[i]) for i in range(decided - 3, scheduled)] == [
        "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED",
        "EVENT_TYPE_WORKFLOW_TASK_STARTED",
        "EVENT_TYPE_WORKFLOW_TASK_COMPLETED",
        "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED",
        "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED",
        "EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES",  # the turn's status: running again
    ]
    asked_markers = [
        event.marker_recorded_event_attributes.details["patch-data"].payloads[0].data.decode()
        for event in history.events[:decided]
        if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and event.marker_recorded_event_attributes.marker_name == "core_patch"  # not a local activity's
    ]
    for patch_id in (patches.PATCH_CHECKS_BEFORE_ASKING, *patches.CHECKED_WHEN_DECIDED):
        assert any(f'"{patch_id}"' in marker for marker in asked_markers), patch_id
    assert (workspace_of(settings, cid) / "notes.txt").read_text() == "hello"
    resolved = approval_row(settings.approvals_db, row["request_id"])
    assert (resolved["decision"], resolved["execution_state"]) == ("allow", "done")
