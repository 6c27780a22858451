"""Where an approval's time goes, phase by phase, read from each workflow's history.

From the decision being sent (client clock) to the approved activity's result, split at the
history's own events: the signal recorded, the workflow task that reacts to it started and
completed, the activity scheduled, started and completed. Ours and the floor are split the same
way, so the phase whose median differs is where our bookkeeping costs.
"""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from bench.stats import median

PHASES = (
    "send_to_signaled",  # the door's claim and the signal RPC
    "signaled_to_task_started",  # the server hands the workflow task to the worker
    "task_started_to_completed",  # the worker runs the workflow code, its local activities
    "task_completed_to_scheduled",  # any further workflow tasks before the tool is scheduled
    "scheduled_to_started",  # the activity task reaches the worker
    "started_to_completed",  # the activity itself
)


def split(history: WorkflowHistory, sent: float, activity_type: str) -> dict[str, float] | None:
    """Seconds per phase for the one approval whose decision was sent at `sent` (epoch seconds)."""
    scheduled_type: dict[int, str] = {}
    at: dict[str, float] = {}
    for event in history.events:
        when = event.event_time.ToMicroseconds() / 1e6
        kind = event.event_type
        if when < sent - 0.001:
            continue
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED and "signaled" not in at:
            at["signaled"] = when
        elif "signaled" not in at:
            continue
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED and "task_started" not in at:
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
    at["sent"] = sent
    if any(mark not in at for mark in marks):
        return None
    return {phase: at[marks[i + 1]] - at[marks[i]] for i, phase in enumerate(PHASES)}


async def medians(client: Client, ids: list[str], sent: dict[str, float], activity_type: str) -> dict[str, Any]:
    """The median of each phase over these workflows, in milliseconds."""
    splits = []
    for wid in ids:
        found = split(await client.get_workflow_handle(wid).fetch_history(), sent[wid], activity_type)
        if found is not None:
            splits.append(found)
    out: dict[str, Any] = {phase: round(median([s[phase] for s in splits]) * 1000, 2) for phase in PHASES}
    return out | {"n": len(splits)}
