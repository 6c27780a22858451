"""A child `ApprovalRequest` decided by a door's `decide` update hands its resolution back in the
update's result, and the door writes it: the request's deciding task runs no local activity, and
the inbox, `pending` and the API show it decided as soon as the door answers. A decision by
signal, or by a raw update that does not ask for it, is written by the request itself, as before.
A door that dies before it writes leaves the row pending only until the failure watch writes it
from the request's history."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from config.settings import Settings
from core.contract import SIGNAL_APPROVAL_DECISION, UPDATE_DECIDE
from core.conversation_model import DecisionInput, DecisionResult
from core.projection_model import ApprovalResolvedProjection
from doors.control import send_decision
from durable_approvals import derived_request_id
from maintenance.failure_watch import FailureWatch
from storage.store import ProjectionStore
from tests.approvals.test_approval_request import callers, outcome, start_job
from tests.approvals.test_request_by_type_name import ask
from tests.approvals.test_request_decided_by_update import kinds_after_the_ask
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, rows, wait_pending
from tests.support.processes import run_cli
from tests.support.ui_fixtures import api_client
from worker import build_worker
from workflows.request_healing import handed_resolution

DECIDED = "SELECT decision, decided_by, reason, resolved_at FROM ui_pending_approvals WHERE request_id = ?"


def conversation_status(settings: Settings, request_id: str) -> str:
    [row] = rows(
        settings.approvals_db, "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?", request_id
    )
    return str(row["turn_status"])


async def test_a_decision_by_update_is_written_by_the_door_and_shown_decided_everywhere(
    client: Client, settings: Settings, histories: HistoryRecorder, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    async with build_worker(client, settings), callers(client) as queue, api_client(settings, client) as http:
        job = await start_job(client, queue, settings, out, path="notes.txt", content="v2")
        rid = histories.track(derived_request_id(job.id, "write"))
        await wait_pending(settings.approvals_db, rid, 1)
        decision = DecisionInput(request_id=rid, decision="allow", decided_by="bob", door="cli", reason="looks right")
        assert await send_decision(client, settings, decision) == rid
        # Written by the door before it answered: no wait for the request's own write.
        [row] = rows(settings.approvals_db, DECIDED, rid)
        assert (row["decision"], row["decided_by"], row["reason"]) == ("allow", "bob", "looks right")
        assert row["resolved_at"] is not None and conversation_status(settings, rid) == "closed"
        listed = await run_cli(settings, client, "pending", "--json")
        assert listed.returncode == 0, listed.stderr
        assert rid not in [card["request_id"] for card in json.loads(listed.stdout)]
        assert rid not in [a["request_id"] for a in (await http.get("/api/approvals?status=pending")).json()]
        [shown] = [a for a in (await http.get("/api/approvals?status=resolved")).json() if a["request_id"] == rid]
        assert (shown["decision"], shown["decided_by"]) == ("allow", "bob")
        result = await outcome(job)
    assert (result.approval.decision, result.approval.decided_by, result.wrote) == ("allow", "bob", True)
    request = client.get_workflow_handle(rid)
    kinds = await kinds_after_the_ask(request)
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED in kinds
    assert EventType.EVENT_TYPE_MARKER_RECORDED not in kinds, "no local activity, no patch check, in the deciding task"
    assert kinds.count(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) == 1
    handed = await handed_resolution(client, rid, (await request.describe()).run_id)
    assert handed is not None and handed.resolved is not None, "the update's result carries the resolution"
    resolved = ApprovalResolvedProjection.model_validate(handed.resolved)
    assert (resolved.approval.resolution, resolved.conversation.turn_status) == ("allow", "closed")


@pytest.mark.parametrize("how", ["signal", "raw update"])
async def test_a_decision_by_signal_or_raw_update_is_still_written_by_the_request(
    client: Client, settings: Settings, tmp_path: Path, how: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    async with build_worker(client, settings), callers(client) as queue:
        job = await start_job(client, queue, settings, out, path="notes.txt", content="v2")
        rid = derived_request_id(job.id, "write")
        await wait_pending(settings.approvals_db, rid, 1)
        decision = DecisionInput(request_id=rid, decision="deny", decided_by="carol", reason="not now")
        request = client.get_workflow_handle(rid)
        if how == "signal":
            await request.signal(SIGNAL_APPROVAL_DECISION, decision)
        else:  # another program's update: it asks for nothing back, so the request writes its own
            answer = await request.execute_update(UPDATE_DECIDE, decision, result_type=DecisionResult)
            assert (answer.resolution, answer.resolved) == ("deny", None)
        result = await outcome(job)
    assert (result.approval.decision, result.wrote) == ("deny", False)
    # The request wrote it before it ended, so before its caller heard.
    [row] = rows(settings.approvals_db, DECIDED, rid)
    assert (row["decision"], row["decided_by"], row["reason"]) == ("deny", "carol", "not now")
    assert conversation_status(settings, rid) == "closed"
    kinds = await kinds_after_the_ask(request)
    assert EventType.EVENT_TYPE_MARKER_RECORDED in kinds, "the resolution's local activity"


@contextlib.asynccontextmanager
async def dying_door(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ProjectionStore]:
    """A door's open store whose process is killed right after the update answered, before it wrote."""
    door = ProjectionStore(settings.approvals_db)

    async def dies(_payload: Any) -> None:
        raise RuntimeError("the door's process was killed here")

    monkeypatch.setattr(door, "project_approval_resolved", dies)
    try:
        yield door
    finally:
        await door.close()


async def test_a_door_that_dies_before_it_writes_is_healed_by_the_failure_watch(
    client: Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    rid = f"approval-{uuid.uuid4().hex[:20]}"
    async with build_worker(client, settings), dying_door(settings, monkeypatch) as door:
        request = await ask(client, settings, rid)
        await wait_pending(settings.approvals_db, rid, 1)
        decision = DecisionInput(request_id=rid, decision="allow", decided_by="bob", door="ui")
        assert await send_decision(client, settings, decision, door) == rid, "decided; only the write was lost"
        assert (await request.result())["decision"] == "allow", "the request has ended"
    assert approval_row(settings.approvals_db, rid)["decision"] is None, "pending in the read model"
    assert conversation_status(settings, rid) == "awaiting_approval"

    # No worker runs now: the watch reads the resolution from Temporal's history alone.
    watch_store = ProjectionStore(settings.approvals_db)
    try:
        await FailureWatch(client, watch_store, interval=0.5).check_once()
        await FailureWatch(client, watch_store, interval=0.5).check_once()  # closed now: nothing more
    finally:
        await watch_store.close()
    [row] = rows(settings.approvals_db, DECIDED, rid)
    assert (row["decision"], row["decided_by"]) == ("allow", "bob")
    assert conversation_status(settings, rid) == "closed"
    resolved = "SELECT 1 FROM ui_events WHERE conversation_id = ? AND event_type = 'permission.resolved'"
    assert len(rows(settings.approvals_db, resolved, rid)) == 1


async def test_a_callers_approved_effect_does_not_wait_for_a_door_that_has_not_written(
    client: Client, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger lets an effect run only on an approval the read model shows: a row its door has not
    written yet is healed from the request's history first, so the caller runs its effect once."""
    out = tmp_path / "out"
    out.mkdir()
    async with build_worker(client, settings), callers(client) as queue, dying_door(settings, monkeypatch) as door:
        job = await start_job(client, queue, settings, out, path="notes.txt", content="v2")
        rid = derived_request_id(job.id, "write")
        await wait_pending(settings.approvals_db, rid, 1)
        decision = DecisionInput(request_id=rid, decision="allow", decided_by="bob", door="ui")
        assert await send_decision(client, settings, decision, door) == rid
        result = await outcome(job)
    assert (result.approval.decision, result.wrote, result.effect.state) == ("allow", True, "ran")
    assert (out / "notes.txt").read_text() == "v2"
    [row] = rows(settings.approvals_db, DECIDED, rid)
    assert (row["decision"], row["decided_by"]) == ("allow", "bob")
