"""Where the time of one approval goes, phase by phase: each step's event, read from the histories,
as milliseconds after the decision was sent.

A step is the first event of its kind recorded after the decision in one history: the request's
(the door's signal landing, its workflow task, its close) and the caller's (hearing of it, its
workflow task, the floor's activity). The median of each step over all approvals is what the
table shows, so two columns side by side say which step costs what.
"""

from __future__ import annotations

from collections.abc import Iterable

from temporalio.api.enums.v1 import EventType, TaskQueueKind
from temporalio.client import WorkflowHistory

from bench.stats import median

# The events that mark a step, by the name the table gives it.
STEPS: dict[EventType.ValueType, str] = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: "decision recorded",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: "decision recorded",
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED: "heard",
    EventType.EVENT_TYPE_NEXUS_OPERATION_COMPLETED: "heard",
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED: "task scheduled",
    EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED: "task started",
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED: "task completed",
    EventType.EVENT_TYPE_MARKER_RECORDED: "local activity recorded",
    EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: "activity scheduled",
    EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED: "activity started",
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "activity completed",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: "closed",
}


COUNTS = ("tasks", "sticky")  # not times: workflow tasks run, whether the first one was sticky


def steps_after(history: WorkflowHistory, sent: float) -> dict[str, float]:
    """Seconds from `sent` to the first event of each step recorded after it (with the number of
    workflow tasks the history ran after it, under "tasks", and 1.0 under "sticky" when the first
    of them went to the worker's sticky queue)."""
    found: dict[str, float] = {}
    tasks = 0
    for event in history.events:
        at = event.event_time.ToMicroseconds() / 1e6
        name = STEPS.get(event.event_type)
        if at < sent or name is None:
            continue
        if name == "task scheduled" and name not in found:
            kind = event.workflow_task_scheduled_event_attributes.task_queue.kind
            found["sticky"] = float(kind == TaskQueueKind.TASK_QUEUE_KIND_STICKY)
        found.setdefault(name, at - sent)
        tasks += event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    found["tasks"] = float(tasks)
    return found


def median_steps(runs: Iterable[dict[str, float]], prefix: str = "") -> dict[str, float]:
    """Each step's median (ms; counts stay counts), in the order the steps first came."""
    gathered: dict[str, list[float]] = {}
    for run in runs:
        for name, value in run.items():
            gathered.setdefault(name, []).append(value)
    out: dict[str, float] = {}
    for name, values in gathered.items():
        scale = 1.0 if name in COUNTS else 1000.0
        out[prefix + name] = round(median(values) * scale, 1)
    return out
