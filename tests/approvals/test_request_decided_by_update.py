"""A door's decision reaches an `ApprovalRequest` by the `decide` update: the request applies it,
writes its resolution and ends in that one workflow task. With no worker to answer the update,
the same decision goes as a signal and is kept: a worker started later decides the request once,
whichever copy it sees first."""

from __future__ import annotations

import uuid

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision
from tests.approvals.test_request_by_type_name import ask
from tests.conftest import HistoryRecorder
from tests.support.helpers import rows, wait_pending
from worker import build_worker

DECISION_EVENTS = (
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
)


async def kinds_after_the_ask(handle: WorkflowHandle) -> list[int]:
    """The event types from the decision on: how it arrived, and what the request did after."""
    events = (await handle.fetch_history()).events
    first = next(i for i, e in enumerate(events) if e.event_type in DECISION_EVENTS)
    started = max(i for i, e in enumerate(events[:first]) if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)
    return [e.event_type for e in events[started:]]


async def test_a_decision_ends_the_request_in_the_workflow_task_that_takes_it(
    client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    rid = histories.track(f"approval-{uuid.uuid4().hex[:20]}")
    async with build_worker(client, settings):
        handle = await ask(client, settings, rid)
        await wait_pending(settings.approvals_db, rid, 1)
        decision = DecisionInput(request_id=rid, decision="allow", decided_by="bob", door="cli", reason="ok")
        assert await send_decision(client, settings, decision) == rid
        result = await handle.result()
    assert (result["decision"], result["decided_by"], result["door"]) == ("allow", "bob", "cli")
    kinds = await kinds_after_the_ask(handle)
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED not in kinds, "the decision went by update"
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED in kinds
    assert kinds.count(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) == 1, "decided, mirrored and ended in one task"
    assert kinds[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    [row] = rows(
        settings.approvals_db, "SELECT decision, decided_by FROM ui_pending_approvals WHERE request_id = ?", rid
    )
    assert (row["decision"], row["decided_by"]) == ("allow", "bob")


async def test_with_no_worker_the_decision_is_kept_as_a_signal_and_lands_once(
    client: Client, settings: Settings
) -> None:
    rid = f"approval-{uuid.uuid4().hex[:20]}"
    async with build_worker(client, settings):
        handle = await ask(client, settings, rid)
        await wait_pending(settings.approvals_db, rid, 1)
    decision = DecisionInput(request_id=rid, decision="deny", decided_by="bob", door="cli", reason="not today")
    assert await send_decision(client, settings, decision) == rid, "sent with no worker up"
    async with build_worker(client, settings):
        result = await handle.result()
    assert (result["decision"], result["decided_by"], result["reason"]) == ("deny", "bob", "not today")
    kinds = await kinds_after_the_ask(handle)
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED in kinds, "kept as a signal while no worker answered"
    decided = rows(settings.approvals_db, "SELECT decision FROM ui_pending_approvals WHERE request_id = ?", rid)
    assert decided == [{"decision": "deny"}]
