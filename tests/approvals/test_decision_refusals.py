"""A decision binds to one request of one conversation; anything else is refused by name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from config.settings import Settings
from core.contract import UPDATE_DECIDE
from core.conversation_model import DecisionInput, DecisionResult
from core.refusals import DecisionRefused
from doors.control import get_state, send_decision, start_conversation
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, execute, tool_messages, wait_pending, wait_status, workspace_of
from tests.support.postgres import on_both_backends
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker

pytestmark = on_both_backends


async def decide(client: Client, conversation_id: str, request_id: str, decision: str = "allow") -> DecisionResult:
    handle = client.get_workflow_handle(conversation_id)
    return await handle.execute_update(
        UPDATE_DECIDE,
        DecisionInput(request_id=request_id, decision=decision, decided_by="tester"),  # type: ignore[arg-type]
        result_type=DecisionResult,
    )


async def refused_type(client: Client, conversation_id: str, request_id: str) -> tuple[str | None, str]:
    with pytest.raises(WorkflowUpdateFailedError) as failure:
        await decide(client, conversation_id, request_id, "deny")
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    return cause.type, cause.message


async def test_update_refuses_unknown_foreign_and_second_decisions(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "f.txt", "content": "x"}))
    async with build_worker(client, settings):
        mine = histories.track(await start_conversation(client, settings, "first conversation"))
        other = histories.track(await start_conversation(client, settings, "second conversation"))
        [row] = await wait_pending(settings.approvals_db, mine, 1)
        [other_row] = await wait_pending(settings.approvals_db, other, 1)
        before = await get_state(client, mine)

        assert await refused_type(client, mine, f"perm_{mine}_nope") == (
            "UnknownApproval",
            f"no approval request perm_{mine}_nope",
        )
        kind, message = await refused_type(client, mine, other_row["request_id"])
        assert (kind, message) == ("UnknownApproval", f"no approval request {other_row['request_id']}")
        assert (await get_state(client, mine)).model_dump() == before.model_dump(), "refusals change nothing"
        assert (await get_state(client, other)).pending_approvals[0].resolution is None

        result = await decide(client, mine, row["request_id"], "allow")
        assert result == DecisionResult(request_id=row["request_id"], resolution="allow")
        kind, message = await refused_type(client, mine, row["request_id"])
        assert kind == "ApprovalAlreadyResolved" and "already resolved: allow" in message
        await wait_status(client, mine, "idle")

        with pytest.raises(DecisionRefused) as refused:
            await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="deny"))
        assert refused.value.error_type == "ApprovalAlreadyResolved"
        with pytest.raises(DecisionRefused) as refused:
            await send_decision(client, settings, DecisionInput(request_id="perm_ghost_call_9", decision="deny"))
        assert refused.value.error_type == "UnknownApproval"

        await send_decision(client, settings, DecisionInput(request_id=other_row["request_id"], decision="deny"))
        with pytest.raises(DecisionRefused) as refused:
            # Sent right after the first, before the workflow recorded it: the claim refuses it at once.
            await send_decision(client, settings, DecisionInput(request_id=other_row["request_id"], decision="allow"))
        assert refused.value.error_type == "ApprovalAlreadyResolved"
        await wait_status(client, other, "idle")

    assert (workspace_of(settings, mine) / "f.txt").read_text() == "x"
    assert approval_row(settings.approvals_db, row["request_id"])["decided_by"] == "tester"
    assert approval_row(settings.approvals_db, other_row["request_id"])["decision"] == "deny"


async def test_a_claim_whose_sender_died_before_signalling_is_delivered_by_the_next_decider(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "g.txt", "content": "x"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write g.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        # The first decider claims the request and dies before its signal leaves.
        first = DecisionInput(request_id=row["request_id"], decision="deny", reason="too late", decided_by="gone")
        store = ProjectionStore(settings.approvals_db)
        await store.claim_decision(first)
        await store.close()
        aged = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
        execute(settings.approvals_db, "UPDATE ui_decision_claims SET claimed_at = ?", aged)
        with pytest.raises(DecisionRefused, match="already decided: deny by gone"):
            await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        state = await wait_status(client, cid, "idle")

    assert not (workspace_of(settings, cid) / "g.txt").exists(), "the first decision, not the second, was applied"
    assert "too late" in tool_messages(state)[0]
    resolved = approval_row(settings.approvals_db, row["request_id"])
    assert (resolved["decision"], resolved["decided_by"]) == ("deny", "gone")
