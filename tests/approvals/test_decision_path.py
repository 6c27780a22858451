"""What a decision costs in history: the door's `decide` update is taken in one workflow task that
schedules the approved tool, and nothing else (the patches a decided call checks were checked,
and their markers recorded, when it was asked). The turn's status in Temporal follows with the
tool's result, or within STATUS_CATCH_UP of the decision while a long tool runs (its activity
signals); the expiry's timer is cancelled by the task of the tool's result."""

from __future__ import annotations

import asyncio
import json
import time

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from config.settings import Settings
from core.contract import SIGNAL_TOOL_STILL_RUNNING
from core.conversation_model import DecisionInput
from doors.control import send_decision
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, start_and_wait, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker
from workflows import patches
from workflows.activity_calls import EXECUTE_TOOL
from workflows.status import STATUS_CATCH_UP, TURN_STATUS_KEY


async def timers_started(client: Client, conversation_id: str, count: int) -> bool:
    """The request's expiry timers have started. Its row shows a task earlier: a decision sent as
    soon as the row shows can land in the same task as the row's write, before any timer."""
    events = (await client.get_workflow_handle(conversation_id).fetch_history()).events
    return sum(e.event_type == EventType.EVENT_TYPE_TIMER_STARTED for e in events) == count


async def test_the_decision_task_schedules_the_tool_with_no_patch_marker(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "notes.txt", "content": "hello"}))
    async with build_worker(client, settings):
        started = await start_and_wait(client, settings, "write hello to notes.txt", histories, pending=1)
        cid, [row] = started.conversation_id, started.pending
        await eventually(lambda: timers_started(client, cid, 1))  # a task after the row shows
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
    ]
    # The turn's status ("running", no approval pending) is published by the task of the tool's result.
    tool_done = kinds.index(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, scheduled)
    next_task_done = kinds.index(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, tool_done)
    # No timer is started or cancelled by the decision's task: the expiry's timer is cancelled by
    # the task of the tool's result, and no catch-up timer is started (the tool would signal).
    timers = (EventType.EVENT_TYPE_TIMER_STARTED, EventType.EVENT_TYPE_TIMER_CANCELED)
    assert not [EventType.Name(kinds[i]) for i in range(decided, tool_done) if kinds[i] in timers]
    after_result = kinds[next_task_done : kinds.index(EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, next_task_done)]
    assert after_result.count(EventType.EVENT_TYPE_TIMER_CANCELED) == 1
    assert EventType.EVENT_TYPE_TIMER_STARTED not in kinds[decided:]
    first_after = next(entry for entry in published_statuses(history) if entry[0] > decided)
    assert first_after[1:] == ("running", 0)
    assert next_task_done < first_after[0] < kinds.index(EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, next_task_done)
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


async def test_a_long_tool_has_its_status_published_while_it_runs(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    seconds = STATUS_CATCH_UP.total_seconds() + 2
    model.behaviour = calls_then_summary(("call_1", "run_shell", {"command": f"sleep {seconds:g}; echo slept"}))
    async with build_worker(client, settings):
        started = await start_and_wait(client, settings, "sleep a while", histories, pending=1)
        cid, [row] = started.conversation_id, started.pending
        handle = client.get_workflow_handle(cid)
        assert (await handle.describe()).typed_search_attributes.get(TURN_STATUS_KEY) == "awaiting_approval"
        decided_at = time.monotonic()
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        while (await handle.describe()).typed_search_attributes.get(TURN_STATUS_KEY) != "running":
            assert time.monotonic() - decided_at < seconds - 0.5, "the status waited for the tool's end"
            await asyncio.sleep(0.1)
        assert approval_row(settings.approvals_db, row["request_id"])["execution_state"] == "running"
        await wait_status(client, cid, "idle")
        history = await handle.fetch_history()

    kinds = [event.event_type for event in history.events]
    decided = kinds.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)
    # The tool's activity told the workflow it still ran; no timer of the decision's did.
    told = [
        i
        for i, event in enumerate(history.events)
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        and event.workflow_execution_signaled_event_attributes.signal_name == SIGNAL_TOOL_STILL_RUNNING
    ]
    assert len(told) == 1 and decided < told[0] < kinds.index(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, decided)
    assert EventType.EVENT_TYPE_TIMER_STARTED not in kinds[decided:]
    after = [entry[1:] for entry in published_statuses(history) if entry[0] > decided]
    assert after[:2] == [("running", 0), ("idle", 0)]  # once each: the tool's end publishes nothing more


async def test_a_denied_call_ends_its_timer_in_the_deciding_task(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(
        ("call_1", "write_file", {"path": "a.txt", "content": "a"}),
        ("call_2", "write_file", {"path": "b.txt", "content": "b"}),
    )
    async with build_worker(client, settings):
        started = await start_and_wait(client, settings, "write two files", histories, pending=2)
        cid, rows = started.conversation_id, started.pending

        await eventually(lambda: timers_started(client, cid, 2))  # rows show a task before their timers
        await send_decision(client, settings, DecisionInput(request_id=rows[0]["request_id"], decision="deny"))
        await send_decision(client, settings, DecisionInput(request_id=rows[1]["request_id"], decision="deny"))
        await wait_status(client, cid, "idle")
        history = await client.get_workflow_handle(cid).fetch_history()

    kinds = [event.event_type for event in history.events]
    assert kinds.count(EventType.EVENT_TYPE_TIMER_STARTED) == 2
    # Each denial's task cancels its request's timer: nothing runs, so nothing waits for it.
    for accepted in [
        i for i, kind in enumerate(kinds) if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]:
        task_end = kinds.index(EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, accepted)
        assert EventType.EVENT_TYPE_TIMER_CANCELED in kinds[accepted:task_end]
    assert kinds.count(EventType.EVENT_TYPE_TIMER_CANCELED) == 2
    assert not (workspace_of(settings, cid) / "a.txt").exists()


def published_statuses(history: WorkflowHistory) -> list[tuple[int, str, int]]:
    """(event index, TurnStatus, PendingApprovals) of every search attribute update that sets the status."""
    found = []
    for i, event in enumerate(history.events):
        if event.event_type != EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            continue
        fields = event.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
        if "TurnStatus" in fields:
            status = json.loads(fields["TurnStatus"].data)
            found.append((i, status, json.loads(fields["PendingApprovals"].data)))
    return found
