"""Malformed signals and updates, sent with the raw client, never fail the workflow task.

A bad signal payload is dropped (and logged) and a refused decision is ignored; a bad update is
rejected before it is accepted. Afterwards the approval still waits and the turn still completes.
"""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from config.settings import Settings
from core.contract import (
    ERROR_ALREADY_RESOLVED,
    ERROR_INVALID_DECISION,
    ERROR_UNKNOWN_APPROVAL,
    SIGNAL_APPROVAL_DECISION,
    SIGNAL_SET_AUTO_APPROVE,
    SIGNAL_SUBMIT_MESSAGE,
    UPDATE_DECIDE,
)
from core.conversation_model import DecisionResult
from demo_model.server import text_reply
from doors.control import get_state, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import tool_messages, wait_pending, wait_reply, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker


def bad_decisions(request_id: str) -> list[Any]:
    return [
        {"request_id": request_id, "decision": "maybe"},
        {"decision": "allow"},
        {"request_id": 123, "decision": "allow"},
        {"request_id": request_id, "decision": ["allow"]},
        {"request_id": request_id},
        "allow",
        ["not", "an", "object"],
        None,
        7,
    ]


async def test_bad_signals_and_updates_leave_the_workflow_working(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "a.txt", "content": "ok"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write a.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        rid = row["request_id"]
        handle = client.get_workflow_handle(cid)

        for payload in bad_decisions(rid):
            await handle.signal(SIGNAL_APPROVAL_DECISION, payload)
        for payload in [{"text": None}, {}, 42, {"words": "hi"}]:
            await handle.signal(SIGNAL_SUBMIT_MESSAGE, payload)
        await handle.signal(SIGNAL_SET_AUTO_APPROVE, {"enabled": {"x": 1}})
        await handle.signal(SIGNAL_SET_AUTO_APPROVE, {"enabled": "yes"})
        # Well-formed but refused: another conversation's request, an unknown one.
        await handle.signal(SIGNAL_APPROVAL_DECISION, {"request_id": "perm_conv-other_call_1", "decision": "allow"})
        await handle.signal(SIGNAL_APPROVAL_DECISION, {"request_id": f"perm_{cid}_nope", "decision": "allow"})

        for payload in bad_decisions(rid):
            with pytest.raises(WorkflowUpdateFailedError):
                await handle.execute_update(UPDATE_DECIDE, payload)
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(UPDATE_DECIDE)
        with pytest.raises(WorkflowUpdateFailedError) as null_payload:
            await handle.execute_update(UPDATE_DECIDE, None)
        assert isinstance(null_payload.value.cause, ApplicationError)
        assert null_payload.value.cause.type == ERROR_INVALID_DECISION
        for other, error_type in [("perm_conv-other_call_1", ERROR_UNKNOWN_APPROVAL), (f"perm_{cid}_x", None)]:
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(UPDATE_DECIDE, {"request_id": other, "decision": "allow"})
            assert isinstance(refused.value.cause, ApplicationError)
            assert refused.value.cause.type == (error_type or ERROR_UNKNOWN_APPROVAL)

        # Nothing changed: still waiting, nothing ran, no message slipped in, no auto-approve.
        state = await get_state(client, cid)
        assert [a.request_id for a in state.pending_approvals] == [rid]
        assert (state.turn_status, state.auto_approve) == ("awaiting_approval", False)
        assert [m.content for m in state.messages if m.role == "user"] == ["write a.txt"]
        assert not (workspace_of(settings, cid) / "a.txt").exists()

        result = await handle.execute_update(
            UPDATE_DECIDE, {"request_id": rid, "decision": "allow"}, result_type=DecisionResult
        )
        assert result.resolution == "allow"
        with pytest.raises(WorkflowUpdateFailedError) as again:
            await handle.execute_update(UPDATE_DECIDE, {"request_id": rid, "decision": "deny"})
        assert isinstance(again.value.cause, ApplicationError)
        assert again.value.cause.type == ERROR_ALREADY_RESOLVED
        state = await wait_status(client, cid, "idle")
        assert tool_messages(state) == ["Wrote 2 bytes to a.txt"]

        model.behaviour = lambda messages: text_reply("yes")
        await send_message(client, cid, "still there?")
        state = await wait_reply(client, cid, "yes")
        assert [m.content for m in state.messages if m.role == "user"] == ["write a.txt", "still there?"]

    assert (workspace_of(settings, cid) / "a.txt").read_text() == "ok"
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.RUNNING
    history = await handle.fetch_history()
    failed = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    assert failed == []
