"""A decision binds to the arguments the person saw: a decision carrying another arguments hash is
refused as stale at the API (409), the CLI (exit 3) and the workflow's update validator, and a raw
signal carrying one changes nothing."""

from __future__ import annotations

import logging

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from config.settings import Settings
from core.contract import SIGNAL_APPROVAL_DECISION, UPDATE_DECIDE
from core.conversation_model import DecisionInput, DecisionResult, arguments_hash
from doors.control import get_state, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, rows, wait_pending, wait_status, workspace_of
from tests.support.postgres import on_both_backends
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.stack import one_line
from tests.support.ui_fixtures import api_client
from worker import build_worker

ARGS = {"path": "bound.txt", "content": "exactly this"}
STALE = "0123456789abcdef"


def facts(settings: Settings, request_id: str) -> dict:
    [row] = rows(settings.approvals_db, "SELECT * FROM ui_decision_facts WHERE request_id = ?", request_id)
    return row


def test_the_hash_is_of_the_canonical_json_whatever_the_key_order() -> None:
    assert arguments_hash({"a": 1, "b": [1, 2]}) == arguments_hash({"b": [1, 2], "a": 1})
    assert arguments_hash({"a": 1}) != arguments_hash({"a": "1"})
    assert len(arguments_hash(ARGS)) == 16


@on_both_backends
async def test_update_validator_refuses_a_stale_hash_and_a_stale_signal_changes_nothing(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", ARGS))
    caplog.set_level(logging.WARNING)
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write bound.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        request_id = row["request_id"]
        handle = client.get_workflow_handle(cid)

        stale = DecisionInput(request_id=request_id, decision="allow", decided_by="mallory", args_hash=STALE)
        with pytest.raises(WorkflowUpdateFailedError) as failure:
            await handle.execute_update(UPDATE_DECIDE, stale, result_type=DecisionResult)
        cause = failure.value.cause
        assert isinstance(cause, ApplicationError) and cause.type == "StaleApproval"
        assert STALE in cause.message and arguments_hash(ARGS) in cause.message

        # A stale deny by raw signal is ignored: the right-hash allow after it is still the first decision.
        await handle.signal(SIGNAL_APPROVAL_DECISION, stale.model_copy(update={"decision": "deny"}))
        good = DecisionInput(
            request_id=request_id, decision="allow", decided_by="alice", args_hash=arguments_hash(ARGS)
        )
        result = await handle.execute_update(UPDATE_DECIDE, good, result_type=DecisionResult)
        assert result.resolution == "allow"
        state = await wait_status(client, cid, "idle")

    assert (workspace_of(settings, cid) / "bound.txt").read_text() == "exactly this"
    assert state.resolutions == {request_id: "allow"}
    assert any("decision ignored" in r.getMessage() and "stale" in r.getMessage() for r in caplog.records)
    assert facts(settings, request_id) == {
        "request_id": request_id,
        "decided_via": "signal",
        "decided_args_hash": arguments_hash(ARGS),
        "decided_groups_json": "[]",
        "supplied_json": None,  # no argument of this call is supplied by a person
    }


@on_both_backends
async def test_api_refuses_a_stale_hash_with_409_and_accepts_the_shown_one(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", ARGS))
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "write bound.txt"))
        await wait_pending(settings.approvals_db, cid, 1)
        [card] = (await http.get("/api/approvals", params={"conversation_id": cid})).json()
        assert card["args_hash"] == arguments_hash(ARGS)
        path = f"/api/approvals/{card['request_id']}/decision"

        stale = await http.post(path, json={"decision": "allow", "args_hash": STALE, "name": "mallory"})
        assert stale.status_code == 409
        assert stale.json()["error"]["type"] == "StaleApproval"
        assert approval_row(settings.approvals_db, card["request_id"])["decision"] is None
        assert rows(settings.approvals_db, "SELECT * FROM ui_decision_claims") == [], "a stale decision claims nothing"

        shown = await http.post(path, json={"decision": "deny", "args_hash": card["args_hash"], "name": "alice"})
        assert shown.status_code == 200, shown.text
        await wait_status(client, cid, "idle")
        [decided] = (await http.get("/api/approvals", params={"status": "resolved", "conversation_id": cid})).json()

    assert not (workspace_of(settings, cid) / "bound.txt").exists()
    assert (decided["decision"], decided["decided_by"], decided["decided_via"]) == ("deny", "alice", "ui")
    assert decided["decided_args_hash"] == arguments_hash(ARGS)
    assert decided["outcome"] == "not run"


@on_both_backends
async def test_cli_refuses_a_stale_hash_with_exit_3_and_binds_to_what_it_read(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", ARGS))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write bound.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        listed = await run_cli(settings, client, "pending", "--conversation", cid)
        assert arguments_hash(ARGS) in listed.stdout

        stale = await run_cli(settings, client, "approve", row["request_id"], "--args-hash", STALE)
        assert stale.returncode == 3, stale.stderr
        assert "stale" in one_line(stale.stderr)
        assert approval_row(settings.approvals_db, row["request_id"])["decision"] is None

        done = await run_cli(settings, client, "approve", row["request_id"], "--as", "bob")
        assert done.returncode == 0, done.stderr
        await wait_status(client, cid, "idle")
        state = await get_state(client, cid)

    assert (workspace_of(settings, cid) / "bound.txt").read_text() == "exactly this"
    assert state.resolutions == {row["request_id"]: "allow"}
    assert facts(settings, row["request_id"])["decided_via"] == "cli"
    assert facts(settings, row["request_id"])["decided_args_hash"] == arguments_hash(ARGS)
    assert approval_row(settings.approvals_db, row["request_id"])["execution_state"] == "done"
