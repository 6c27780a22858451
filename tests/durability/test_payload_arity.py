"""Signals, updates and queries sent with the wrong number of payloads never fail a workflow task.

The raw client sends what no door of this project would: two payloads, none, extra query
arguments. Each is logged and changes nothing; a proper decision afterwards completes the turn.
"""

from __future__ import annotations

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from config.settings import Settings
from core.contract import (
    ERROR_INVALID_DECISION,
    QUERY_GET_STATE,
    SIGNAL_APPROVAL_DECISION,
    SIGNAL_CLOSE,
    SIGNAL_SET_AUTO_APPROVE,
    SIGNAL_SUBMIT_MESSAGE,
    UPDATE_DECIDE,
)
from core.conversation_model import ConversationState, DecisionResult
from doors.control import get_state, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import tool_messages, wait_pending, wait_status, workflow_task_failures, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker


async def test_wrong_arities_change_nothing_and_approve_still_completes(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "a.txt", "content": "ok"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write a.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        rid = row["request_id"]
        allow = {"request_id": rid, "decision": "allow"}
        handle = client.get_workflow_handle(cid)

        await handle.signal(SIGNAL_APPROVAL_DECISION, args=[allow, allow])
        await handle.signal(SIGNAL_APPROVAL_DECISION)
        await handle.signal(SIGNAL_SUBMIT_MESSAGE)
        await handle.signal(SIGNAL_SUBMIT_MESSAGE, args=[{"text": "one"}, {"text": "two"}])
        await handle.signal(SIGNAL_SET_AUTO_APPROVE)
        await handle.signal(SIGNAL_SET_AUTO_APPROVE, args=[{"enabled": True}, {"enabled": True}])
        await handle.signal(SIGNAL_CLOSE, args=[{}, {}])
        for args in ([], [allow, allow]):
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(UPDATE_DECIDE, args=args)
            assert isinstance(refused.value.cause, ApplicationError)
            assert refused.value.cause.type == ERROR_INVALID_DECISION
        extra = await handle.query(QUERY_GET_STATE, args=[1, {"x": 2}], result_type=ConversationState)
        assert extra.turn_status == "awaiting_approval"

        state = await get_state(client, cid)
        assert [a.request_id for a in state.pending_approvals] == [rid]
        assert (state.turn_status, state.auto_approve) == ("awaiting_approval", False)
        assert [m.content for m in state.messages if m.role == "user"] == ["write a.txt"]
        assert await workflow_task_failures(handle) == []

        result = await handle.execute_update(UPDATE_DECIDE, allow, result_type=DecisionResult)
        assert result.resolution == "allow"
        state = await wait_status(client, cid, "idle")
        assert tool_messages(state) == ["Wrote 2 bytes to a.txt"]
        assert [m.content for m in state.messages if m.role == "user"] == ["write a.txt"]
    assert (workspace_of(settings, cid) / "a.txt").read_text() == "ok"
    assert await workflow_task_failures(handle) == []


async def test_doubled_signal_then_cli_style_approve_completes_the_turn(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    """The issue's case: a doubled `approval_decision`, then an approve by signal as the CLI sends it."""
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "b.txt", "content": "hi"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write b.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        allow = {"request_id": row["request_id"], "decision": "allow"}
        handle = client.get_workflow_handle(cid)
        await handle.signal(SIGNAL_APPROVAL_DECISION, args=[allow, allow])
        await handle.signal(SIGNAL_APPROVAL_DECISION)
        await handle.signal(SIGNAL_APPROVAL_DECISION, allow)
        state = await wait_status(client, cid, "idle")
        assert tool_messages(state) == ["Wrote 2 bytes to b.txt"]
    assert await workflow_task_failures(handle) == []
