"""Edit before approving: a decision `edit` carries new arguments, the workflow checks them (schema,
deny rules, who may decide the edited call) at every door, the tool runs with them, the model is
told, and the projection and audit keep both the original and the edited arguments."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from config.settings import Settings
from core.contract import SIGNAL_APPROVAL_DECISION, UPDATE_DECIDE
from core.conversation_model import DecisionInput, DecisionResult, arguments_hash
from doors.control import get_state, start_conversation
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, rows, tool_messages, wait_pending, wait_status, workspace_of
from tests.support.postgres import on_both_backends
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.stack import one_line
from tests.support.ui_fixtures import add_person, api_client
from worker import build_worker

ARGS = {"path": "notes.txt", "content": "hello"}
EDITED = {"path": "safe/notes.txt", "content": "hello"}


async def audit_rows(settings: Settings) -> list[dict]:
    store = ProjectionStore(settings.approvals_db)
    try:
        return await store.audit()
    finally:
        await store.close()


async def refused_update(client: Client, cid: str, decision: DecisionInput) -> ApplicationError:
    with pytest.raises(WorkflowUpdateFailedError) as failure:
        await client.get_workflow_handle(cid).execute_update(UPDATE_DECIDE, decision, result_type=DecisionResult)
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    return cause


@on_both_backends
async def test_an_edit_runs_the_edited_call_only_and_the_model_is_told(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", ARGS))
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "write notes"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        rid = row["request_id"]
        answer = await http.post(
            f"/api/approvals/{rid}/decision",
            json={"decision": "edit", "arguments": EDITED, "args_hash": arguments_hash(ARGS), "reason": "keep it safe"},
        )
        assert answer.status_code == 200, answer.text
        state = await wait_status(client, cid, "idle")
        [card] = (await http.get("/api/approvals", params={"status": "resolved", "conversation_id": cid})).json()
        [audited] = [r for r in (await http.get("/api/audit")).json() if r["request_id"] == rid]

    assert (workspace_of(settings, cid) / "safe/notes.txt").read_text() == "hello"
    assert not (workspace_of(settings, cid) / "notes.txt").exists()
    [told] = tool_messages(state)
    assert 'path: "notes.txt" → "safe/notes.txt"' in told and "changed the arguments" in told
    assert "Reason: keep it safe" in told
    # The model read it: its next request carries the note as the call's result.
    last = model.reply_requests[-1]["messages"][-1]
    assert last["role"] == "tool" and "changed the arguments" in last["content"]
    # The transcript keeps what the model proposed; the projection and audit keep both.
    [assistant] = [m for m in state.messages if m.tool_calls]
    assert '"notes.txt"' in assistant.tool_calls[0].arguments
    for shown in (card, audited):
        assert (shown["decision"], shown["arguments"], shown["edited_arguments"]) == ("edit", ARGS, EDITED)
        assert shown["decided_args_hash"] == arguments_hash(ARGS) and shown["outcome"] == "ran"
    assert state.resolutions == {rid: "edit"}


EDIT_RULES = """
ask = ["write_file"]
deny = ["write_file(.git/**)"]

[[approvers]]
match = ["write_file(deploy/**)"]
approvers = ["group:sre"]

[[approvers]]
match = ["write_file(shared/**)"]
approvers = ["group:dev"]
required = 2
"""


@on_both_backends
async def test_the_workflow_refuses_edits_the_rules_or_the_schema_do_not_allow(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    policy = tmp_path / "edits.toml"
    policy.write_text(EDIT_RULES)
    settings = replace(settings, policy_file=str(policy))
    caplog.set_level(logging.WARNING)
    model.behaviour = calls_then_summary(("call_1", "write_file", ARGS))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write notes"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        rid, shown = row["request_id"], arguments_hash(ARGS)

        def edit(arguments: dict, **extra: object) -> DecisionInput:
            fields = {"principal": "olly", "groups": ["dev"], "args_hash": shown, **extra}
            return DecisionInput(request_id=rid, decision="edit", arguments=arguments, **fields)  # type: ignore[arg-type]

        cases = [
            (edit({"path": "notes.txt"}), "InvalidEdit", "missing required argument"),
            (edit({**ARGS, "mode": "x"}), "InvalidEdit", "unexpected argument"),
            (edit({**ARGS, "path": "../outside.txt"}), "InvalidEdit", "outside the workspace"),
            (edit({**ARGS, "path": "./notes.txt"}), "InvalidEdit", "the call's own"),
            (edit({**ARGS, "path": ".git/config"}), "EditDenied", "deny rule"),
            (edit({**ARGS, "path": "deploy/app.yaml"}), "NotAnApprover", "as edited"),
            (edit({**ARGS, "path": "shared/x.txt"}), "InvalidEdit", "needs 2 approvers"),
            (edit(EDITED, args_hash="0123456789abcdef"), "StaleApproval", "stale"),
            (DecisionInput(request_id=rid, decision="allow", arguments=EDITED), "InvalidEdit", "edit only"),
        ]
        for decision, error_type, words in cases:
            cause = await refused_update(client, cid, decision)
            assert (cause.type, words in cause.message) == (error_type, True), cause.message
        # The same refused edits by raw signal change nothing, and each refusal is logged.
        for decision, _, _ in cases:
            await client.get_workflow_handle(cid).signal(SIGNAL_APPROVAL_DECISION, decision)
        sre = edit({**ARGS, "path": "deploy/app.yaml"}, principal="sam", groups=["sre"])
        result = await client.get_workflow_handle(cid).execute_update(UPDATE_DECIDE, sre, result_type=DecisionResult)
        assert result.resolution == "edit"
        await wait_status(client, cid, "idle")
        state = await get_state(client, cid)

    assert sorted(
        p.relative_to(workspace_of(settings, cid)).as_posix() for p in workspace_of(settings, cid).rglob("*.*")
    ) == ["deploy/app.yaml"]
    assert "deploy/app.yaml" in tool_messages(state)[0]
    [audited] = [r for r in await audit_rows(settings) if r["request_id"] == rid]
    assert (audited["decided_by"], audited["decided_groups"], audited["decision"]) == ("sam", ["sre"], "edit")
    ignored = [r.getMessage() for r in caplog.records if "decision ignored" in r.getMessage()]
    assert len(ignored) >= len(cases) and any("deny rule" in m for m in ignored)


async def test_the_cli_edits_with_set_and_a_refused_edit_changes_nothing(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", ARGS))
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "write notes"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        rid = row["request_id"]

        usage = await run_cli(settings, client, "edit", rid, "--args", "{not json")
        assert usage.returncode == 2 and "--args" in one_line(usage.stderr)
        denied = await run_cli(settings, client, "edit", rid, "--set", "path=.git/hooks/x")
        assert denied.returncode == 3 and "deny rule" in one_line(denied.stderr), denied.stderr
        invalid = await http.post(f"/api/approvals/{rid}/decision", json={"decision": "edit", "arguments": {"x": 1}})
        assert invalid.status_code == 422 and invalid.json()["error"]["type"] == "InvalidEdit"
        api_denied = await http.post(
            f"/api/approvals/{rid}/decision", json={"decision": "edit", "arguments": {**ARGS, "path": ".git/x"}}
        )
        assert api_denied.status_code == 403 and api_denied.json()["error"]["type"] == "EditDenied"
        assert rows(settings.approvals_db, "SELECT * FROM ui_decision_claims") == [], "a refused edit claims nothing"
        assert approval_row(settings.approvals_db, rid)["decision"] is None

        done = await run_cli(settings, client, "edit", rid, "--set", "path=elsewhere.txt", "--as", "bob")
        assert done.returncode == 0, done.stderr
        assert 'path: "notes.txt" → "elsewhere.txt"' in done.stdout
        second = await run_cli(settings, client, "edit", rid, "--set", "path=third.txt")
        assert second.returncode == 3 and "already resolved" in one_line(second.stderr)
        await wait_status(client, cid, "idle")

    assert (workspace_of(settings, cid) / "elsewhere.txt").read_text() == "hello"
    assert not (workspace_of(settings, cid) / "notes.txt").exists()
    decided = approval_row(settings.approvals_db, rid)
    assert (decided["decision"], decided["decided_by"]) == ("edit", "bob")


async def test_an_edit_by_a_person_outside_the_edited_calls_approvers_is_403(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    policy = tmp_path / "edits.toml"
    policy.write_text(EDIT_RULES)
    settings = replace(settings, policy_file=str(policy))
    olly = await add_person(settings, "olly", ["dev"])
    model.behaviour = calls_then_summary(("call_1", "write_file", ARGS))
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "write notes"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        widened = await http.post(
            f"/api/approvals/{row['request_id']}/decision",
            json={"decision": "edit", "arguments": {**ARGS, "path": "deploy/x.yaml"}},
            headers={"Authorization": f"Bearer {olly}"},
        )
        assert widened.status_code == 403 and widened.json()["error"]["type"] == "NotAnApprover"
        assert approval_row(settings.approvals_db, row["request_id"])["decision"] is None
        await client.get_workflow_handle(cid).terminate("done")


async def test_an_edit_with_no_worker_is_refused_as_unchecked_and_sends_nothing(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", ARGS))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write notes"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
    rid = row["request_id"]
    async with api_client(settings, client) as http:
        answer = await http.post(f"/api/approvals/{rid}/decision", json={"decision": "edit", "arguments": EDITED})
        assert answer.status_code == 503 and answer.json()["error"]["type"] == "EditUnchecked"
        assert rows(settings.approvals_db, "SELECT * FROM ui_decision_claims") == []
    by_cli = await run_cli(settings, client, "edit", rid, "--set", "path=safe/notes.txt")
    assert by_cli.returncode == 1 and "no worker answered" in one_line(by_cli.stderr)
    # Nothing was left behind to land later: with a worker back, a plain approval runs the call as asked.
    async with build_worker(client, settings):
        done = await run_cli(settings, client, "approve", rid)
        assert done.returncode == 0, done.stderr
        state = await wait_status(client, cid, "idle")
    assert state.resolutions == {rid: "allow"}
    assert (workspace_of(settings, cid) / "notes.txt").exists() and not (workspace_of(settings, cid) / "safe").exists()
