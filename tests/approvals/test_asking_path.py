"""What asking costs in history: the task that takes the model's reply schedules the host's pick
and the asked call's judgement together (`host-beside-judging`), so the two run at once and a person
sees the request one activity's round trip sooner. (Their results end in one workflow task when they
arrive together, else in one each, as before.)"""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, scheduled_activities, start_and_wait, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker
from workflows.activity_calls import EXECUTE_TOOL, JUDGE_CALL, PICK_TOOL_HOST


async def test_the_host_is_picked_in_the_task_that_judges_the_asked_call(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "notes.txt", "content": "hello"}))
    async with build_worker(client, settings):
        asked = await start_and_wait(client, settings, "write hello to notes.txt", histories, pending=1)
        cid, [row] = asked.conversation_id, asked.pending
        history = await client.get_workflow_handle(cid).fetch_history()
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        await wait_status(client, cid, "idle", tool_results=1)
        after = await client.get_workflow_handle(cid).fetch_history()

    task_of: dict[str, int] = {}  # activity -> how many workflow tasks had completed when it was scheduled
    completed_tasks = 0
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            completed_tasks += 1
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            task_of.setdefault(event.activity_task_scheduled_event_attributes.activity_type.name, completed_tasks)
    assert task_of[PICK_TOOL_HOST] == task_of[JUDGE_CALL]
    scheduled = scheduled_activities(after)
    assert scheduled.count(PICK_TOOL_HOST) == 1 and scheduled.count(EXECUTE_TOOL) == 1
    assert (workspace_of(settings, cid) / "notes.txt").read_text() == "hello"
    assert approval_row(settings.approvals_db, row["request_id"])["execution_state"] == "done"
