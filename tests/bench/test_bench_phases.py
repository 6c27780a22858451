"""The latency phase split starts where the decision reached the server, by signal or by update.

Ours are decided by update: the update is recorded only when the task it came in with accepts
it, so a split that waited for a signal found none and every phase read nan.
"""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHistory

from bench import phases

T0 = 1_700_000_000.0
SENT = T0 + 0.010
TOOL = "execute_tool"


def _event(event_id: int, at: float, kind: EventType.ValueType, **attributes: Any) -> HistoryEvent:
    event = HistoryEvent(event_id=event_id, event_type=kind, **attributes)
    event.event_time.FromMicroseconds(round(at * 1e6))
    return event


def _tail(first_id: int, at: float) -> list[HistoryEvent]:
    """The tool scheduled at +5 ms after `at`, started at +8, completed at +20."""
    scheduled = {"activity_task_scheduled_event_attributes": {"activity_type": {"name": TOOL}}}
    return [
        _event(first_id, at + 0.005, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, **scheduled),
        _event(
            first_id + 1,
            at + 0.008,
            EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
            activity_task_started_event_attributes={"scheduled_event_id": first_id},
        ),
        _event(
            first_id + 2,
            at + 0.020,
            EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
            activity_task_completed_event_attributes={"scheduled_event_id": first_id},
        ),
    ]


def _before() -> list[HistoryEvent]:
    """An earlier task, before the decision was sent: not part of the split."""
    return [
        _event(1, T0, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
        _event(2, T0 + 0.001, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED),
        _event(3, T0 + 0.002, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
    ]


def test_a_decision_by_update_is_split_from_the_task_it_came_in_with() -> None:
    accepted = {
        "workflow_execution_update_accepted_event_attributes": {"accepted_request": {"input": {"name": "decide"}}}
    }
    events = [
        *_before(),
        _event(4, SENT + 0.002, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
        _event(5, SENT + 0.003, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED),
        _event(6, SENT + 0.006, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
        _event(7, SENT + 0.006, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, **accepted),
        *_tail(8, SENT + 0.006),
    ]
    split = phases.split(WorkflowHistory("wf", events), SENT, TOOL, "approval_decision", "decide")
    assert split is not None
    assert {phase: round(seconds * 1000, 3) for phase, seconds in split.items()} == {
        "send_to_signaled": 2.0,
        "signaled_to_task_started": 1.0,
        "task_started_to_completed": 3.0,
        "task_completed_to_scheduled": 5.0,
        "scheduled_to_started": 3.0,
        "started_to_completed": 12.0,
    }


def test_a_decision_by_signal_is_split_from_its_signal_and_another_name_is_not_it() -> None:
    signaled = {"workflow_execution_signaled_event_attributes": {"signal_name": "approve"}}
    events = [
        *_before(),
        _event(4, SENT + 0.001, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, **signaled),
        _event(5, SENT + 0.001, EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED),
        _event(6, SENT + 0.004, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED),
        _event(7, SENT + 0.005, EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
        *_tail(8, SENT + 0.005),
    ]
    history = WorkflowHistory("wf", events)
    split = phases.split(history, SENT, TOOL, "approve")
    assert split is not None
    assert round(split["send_to_signaled"] * 1000, 3) == 1.0
    assert round(split["signaled_to_task_started"] * 1000, 3) == 3.0
    assert phases.split(history, SENT, TOOL, "another_signal", "decide") is None
