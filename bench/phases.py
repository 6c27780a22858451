"""Where an approval's time goes, phase by phase, read from each workflow's history.

From the decision being sent (client clock) to the approved activity's result, split at the
history's own events: the decision recorded (its signal, or the task its update came in with),
the workflow task that reacts to it started and completed, the activity scheduled, started and
completed. Ours and the floor are split the same way, so the phase whose median differs is where
our bookkeeping costs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from bench.stats import median

PHASES = (
    "send_to_signaled",  # the door's claim and the decision's RPC, until the server has it
    "signaled_to_task_started",  # the server hands the workflow task to the worker
    "task_started_to_completed",  # the worker runs the workflow code, its local activities
    "task_completed_to_scheduled",  # any further workflow tasks before the tool is scheduled
    "scheduled_to_started",  # the activity task reaches the worker
    "started_to_completed",  # the activity itself
)
_SIGNALED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
_UPDATE_ACCEPTED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
_TASK_SCHEDULED = EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED


def decision_start(events: Sequence[Any], signal: str, update: str | None) -> int | None:
    """The index of the event where the last decision's work starts: its signal, or, for a decision
    by update, the scheduling of the workflow task the update came in with (an update is recorded
    only once that task accepts it, so the task's scheduling is when the server had it)."""
    starts = []
    for i, event in enumerate(events):
        kind = event.event_type
        if kind == _SIGNALED and event.workflow_execution_signaled_event_attributes.signal_name == signal:
            starts.append(i)
        elif (
            kind == _UPDATE_ACCEPTED
            and event.workflow_execution_update_accepted_event_attributes.accepted_request.input.name == update
        ):
            starts.append(max(j for j in range(i) if events[j].event_type == _TASK_SCHEDULED))
    return starts[-1] if starts else None


def _seconds(event: Any) -> float:
    return float(event.event_time.ToMicroseconds()) / 1e6


def split(
    history: WorkflowHistory, sent: float, activity_type: str, signal: str, update: str | None = None
) -> dict[str, float] | None:
    """Seconds per phase for the one approval whose decision was sent at `sent` (epoch seconds), by
    the signal `signal` or the update `update`."""
    events = [event for event in history.events if _seconds(event) >= sent - 0.001]
    start = decision_start(events, signal, update)
    if start is None:
        return None
    scheduled_type: dict[int, str] = {}
    at: dict[str, float] = {"sent": sent, "signaled": _seconds(events[start])}
    for event in events[start + 1 :]:
        when = _seconds(event)
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED and "task_started" not in at:
            at["task_started"] = when
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED and "task_completed" not in at:
            at["task_completed"] = when
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled_type[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
            if scheduled_type[event.event_id] == activity_type and "scheduled" not in at:
                at["scheduled"] = when
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs = event.activity_task_started_event_attributes
            if scheduled_type.get(attrs.scheduled_event_id) == activity_type:
                at["started"] = when
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs_done = event.activity_task_completed_event_attributes
            if scheduled_type.get(attrs_done.scheduled_event_id) == activity_type:
                at["completed"] = when
                break
    marks = ["sent", "signaled", "task_started", "task_completed", "scheduled", "started", "completed"]
    if any(mark not in at for mark in marks):
        return None
    return {phase: at[marks[i + 1]] - at[marks[i]] for i, phase in enumerate(PHASES)}


async def medians(
    client: Client,
    ids: list[str],
    sent: dict[str, float],
    activity_type: str,
    signal: str,
    update: str | None = None,
) -> dict[str, Any]:
    """The median of each phase over these workflows, in milliseconds."""
    splits = []
    for wid in ids:
        history = await client.get_workflow_handle(wid).fetch_history()
        found = split(history, sent[wid], activity_type, signal, update)
        if found is not None:
            splits.append(found)
    out: dict[str, Any] = {phase: round(median([s[phase] for s in splits]) * 1000, 2) for phase in PHASES}
    return out | {"n": len(splits)}
