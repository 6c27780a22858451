"""Who may approve what: approver rules in the policy file, people with their own tokens, enforced
at the API (403), the CLI (exit 3) and again in the workflow, where a raw signal or update carrying
a principal the rules do not allow changes nothing."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from config.settings import Settings
from core.approvers import approvers_for, may_decide
from core.contract import SIGNAL_APPROVAL_DECISION, UPDATE_DECIDE
from core.conversation_model import DecisionInput, DecisionResult
from core.policy_rules import PolicyRules
from core.tool_specs import TOOL_SPECS
from doors.control import get_state, start_conversation
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, execute, rows, wait_pending, wait_status, workspace_of
from tests.support.postgres import on_both_backends
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.stack import one_line
from tests.support.ui_fixtures import add_person, api_client
from worker import build_worker

POLICY = """
ask = ["write_file", "run_shell"]
deny = ["run_shell(sudo *)"]

[[approvers]]
match = ["run_shell(kubectl *)", "write_file(deploy/**)"]
approvers = ["group:sre", "alice"]
"""


def test_rules_name_people_and_groups_and_match_any_part_of_a_shell_command() -> None:
    rules = PolicyRules.model_validate(
        {"approvers": [{"match": ["run_shell(kubectl *)"], "approvers": ["group:sre", "alice"]}]}
    )
    shell = TOOL_SPECS["run_shell"]
    assert approvers_for(rules, shell, {"command": "kubectl apply -f x"}) == ["group:sre", "alice"]
    assert approvers_for(rules, shell, {"command": "ls; kubectl delete pod x"}) == ["group:sre", "alice"]
    assert approvers_for(rules, shell, {"command": "ls"}) is None
    assert may_decide(None, None, [])
    assert may_decide(["group:sre", "alice"], "alice", [])
    assert may_decide(["group:sre", "alice"], "sam", ["sre"])
    assert not may_decide(["group:sre", "alice"], "olly", ["dev"])
    assert not may_decide(["group:sre", "alice"], None, ["sre"])


@on_both_backends
async def test_a_token_is_stored_only_as_a_salted_hash(settings: Settings) -> None:
    token = await add_person(settings, "sam", ["sre"])
    [stored] = rows(settings.approvals_db, "SELECT * FROM ui_users")
    assert token not in json.dumps(stored) and token.split("-")[2] not in json.dumps(stored)
    store = ProjectionStore(settings.approvals_db)
    try:
        found = await store.verify_token(token)
        assert found is not None and (found.name, found.groups) == ("sam", ["sre"])
        assert await store.verify_token(token[:-1] + ("0" if token[-1] != "0" else "1")) is None
        assert await store.verify_token("apr-nothing-here") is None
    finally:
        await store.close()


@pytest.fixture
def gated(settings: Settings, tmp_path: Path) -> Settings:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    return replace(settings, policy_file=str(policy))


@on_both_backends
async def test_only_named_approvers_decide_at_every_door_and_in_the_workflow(
    client: Client, gated: Settings, model: ScriptedModel, histories: HistoryRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    settings = gated
    caplog.set_level(logging.WARNING)
    model.behaviour = calls_then_summary(
        ("c1", "run_shell", {"command": "kubectl version > one.txt"}),
        ("c2", "run_shell", {"command": "kubectl version > two.txt"}),
        ("c3", "write_file", {"path": "notes.txt", "content": "anyone may"}),
    )
    added = await run_cli(settings, client, "users", "add", "sam", "--group", "sre")
    assert added.returncode == 0, added.stderr
    sam_token = added.stdout.strip()
    olly_token = await add_person(settings, "olly", ["dev"])
    again = await run_cli(settings, client, "users", "add", "sam")
    assert again.returncode == 3 and "already a user" in one_line(again.stderr)
    listed = await run_cli(settings, client, "users", "list", "--json")
    assert [(u["name"], u["groups"]) for u in json.loads(listed.stdout)] == [("olly", ["dev"]), ("sam", ["sre"])]
    assert sam_token not in listed.stdout

    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "deploy"))
        await wait_pending(settings.approvals_db, cid, 3)
        c1, c2, c3 = (f"perm_{cid}_{call}" for call in ("c1", "c2", "c3"))
        card = (await http.get(f"/api/approvals/{c1}")).json()
        assert card["approvers"] == ["group:sre", "alice"]
        assert (await http.get(f"/api/approvals/{c3}")).json()["approvers"] is None

        def as_(token: str) -> dict[str, str]:
            return {"Authorization": f"Bearer {token}"}

        me = (await http.get("/api/session", headers=as_(olly_token))).json()
        assert me["principal"] == {"name": "olly", "groups": ["dev"]}
        allow = {"decision": "allow"}
        forbidden = await http.post(f"/api/approvals/{c1}/decision", json=allow, headers=as_(olly_token))
        assert forbidden.status_code == 403 and forbidden.json()["error"]["type"] == "NotAnApprover"
        anonymous = await http.post(f"/api/approvals/{c1}/decision", json={"decision": "allow", "name": "alice"})
        assert anonymous.status_code == 403, "a typed name is not a verified principal"
        assert rows(settings.approvals_db, "SELECT * FROM ui_decision_claims") == []

        handle = client.get_workflow_handle(cid)
        with pytest.raises(WorkflowUpdateFailedError) as failure:
            raw = DecisionInput(request_id=c1, decision="allow", principal="olly", groups=["dev"])
            await handle.execute_update(UPDATE_DECIDE, raw, result_type=DecisionResult)
        assert isinstance(failure.value.cause, ApplicationError) and failure.value.cause.type == "NotAnApprover"
        # Raw signals the rules do not allow are ignored: the deny below would otherwise win.
        await handle.signal(SIGNAL_APPROVAL_DECISION, DecisionInput(request_id=c1, decision="deny", principal="eve"))
        await handle.signal(SIGNAL_APPROVAL_DECISION, DecisionInput(request_id=c1, decision="deny"))

        allowed = await http.post(f"/api/approvals/{c1}/decision", json=allow, headers=as_(sam_token))
        assert allowed.status_code == 200, allowed.text

        bob = await run_cli(settings, client, "approve", c2, "--as", "bob")
        assert bob.returncode == 3 and "may not decide" in one_line(bob.stderr)
        bad_token = await run_cli(settings, client, "approve", c2, env_extra={"APPROVER_TOKEN": "apr-x-y"})
        assert bad_token.returncode == 2
        by_token = await run_cli(settings, client, "approve", c2, env_extra={"APPROVER_TOKEN": sam_token})
        assert by_token.returncode == 0, by_token.stderr
        assert "decided by sam (APPROVER_TOKEN; groups: sre)" in by_token.stdout
        anyone = await run_cli(settings, client, "approve", c3)
        assert anyone.returncode == 0, anyone.stderr
        await wait_status(client, cid, "idle")

    assert [approval_row(settings.approvals_db, r)["decided_by"] for r in (c1, c2)] == ["sam", "sam"]
    assert [approval_row(settings.approvals_db, r)["decision"] for r in (c1, c2, c3)] == ["allow"] * 3
    assert (workspace_of(settings, cid) / "one.txt").exists() and (workspace_of(settings, cid) / "two.txt").exists()
    ignored = [r.getMessage() for r in caplog.records if "decision ignored" in r.getMessage()]
    assert any("eve" in m and "may not decide" in m for m in ignored)
    assert any("no verified principal" in m for m in ignored)


TWO_PERSON = """
ask = ["write_file", "run_shell"]

[[approvers]]
match = ["run_shell(kubectl *)"]
approvers = ["group:sre"]
required = 2
"""


@on_both_backends
async def test_a_two_person_rule_needs_two_distinct_approvers_and_one_deny_ends_it(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    policy = tmp_path / "two.toml"
    policy.write_text(TWO_PERSON)
    settings = replace(settings, policy_file=str(policy))
    model.behaviour = calls_then_summary(
        ("c1", "run_shell", {"command": "kubectl version; echo ran >> twice.txt"}),
        ("c2", "run_shell", {"command": "kubectl version > denied.txt"}),
    )
    tokens = {name: await add_person(settings, name, ["sre"]) for name in ("sam", "sid")}

    def as_(name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {tokens[name]}"}

    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "two-person deploy"))
        await wait_pending(settings.approvals_db, cid, 2)
        c1, c2 = f"perm_{cid}_c1", f"perm_{cid}_c2"
        path = f"/api/approvals/{c1}/decision"

        first = await http.post(path, json={"decision": "allow"}, headers=as_("sam"))
        assert first.status_code == 200, first.text
        card = (await http.get(f"/api/approvals/{c1}")).json()
        assert (card["required"], card["approved_by"], card["status"]) == (2, ["sam"], "pending")

        async def partial_in_workflow() -> bool:
            [record] = [r for r in (await get_state(client, cid)).pending_approvals if r.request_id == c1]
            return record.approved_by == ["sam"] and record.resolution is None

        await eventually(partial_in_workflow)
        twice = await http.post(path, json={"decision": "allow"}, headers=as_("sam"))
        assert twice.status_code == 409 and "already approved" in twice.json()["error"]["message"]
        with pytest.raises(WorkflowUpdateFailedError) as failure:
            raw = DecisionInput(request_id=c1, decision="allow", principal="sam", groups=["sre"])
            await client.get_workflow_handle(cid).execute_update(UPDATE_DECIDE, raw, result_type=DecisionResult)
        assert "already approved" in str(failure.value.cause)

        second = await http.post(path, json={"decision": "allow"}, headers=as_("sid"))
        assert second.status_code == 200, second.text
        denied = await http.post(f"/api/approvals/{c2}/decision", json={"decision": "deny"}, headers=as_("sid"))
        assert denied.status_code == 200
        await wait_status(client, cid, "idle")

    ran = approval_row(settings.approvals_db, c1)
    assert (ran["decision"], ran["decided_by"], ran["execution_state"]) == ("allow", "sam, sid", "done")
    assert (workspace_of(settings, cid) / "twice.txt").read_text() == "ran\n", "it ran once, after the second approval"
    assert approval_row(settings.approvals_db, c2)["decision"] == "deny"
    assert not (workspace_of(settings, cid) / "denied.txt").exists()


@on_both_backends
async def test_a_lost_signal_is_redelivered_with_its_principal(
    client: Client, gated: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    settings = gated
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "kubectl version > lost.txt"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "deploy"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        # sam's door claims the call and dies before its signal leaves.
        store = ProjectionStore(settings.approvals_db)
        try:
            lost = DecisionInput(
                request_id=row["request_id"], decision="allow", decided_by="sam", principal="sam", groups=["sre"]
            )
            await store.claim_decision(lost)
        finally:
            await store.close()
        long_ago = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
        execute(settings.approvals_db, "UPDATE ui_decision_claims SET claimed_at = ?", long_ago)
        # The next decider is refused, and delivers sam's decision, principal and all.
        late = await run_cli(settings, client, "deny", row["request_id"], "--as", "alice")
        assert late.returncode == 3 and "already decided: allow by sam" in one_line(late.stderr)
        await wait_status(client, cid, "idle")

    resolved = approval_row(settings.approvals_db, row["request_id"])
    assert (resolved["decision"], resolved["decided_by"]) == ("allow", "sam")
    assert (workspace_of(settings, cid) / "lost.txt").exists()


NO_SELF_APPROVAL = """
ask = ["write_file", "run_shell"]

[[approvers]]
match = ["run_shell(kubectl *)"]
approvers = ["group:sre"]
self_approval = false
"""


@on_both_backends
async def test_whoever_started_the_conversation_may_not_approve_its_calls_when_a_rule_says_so(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    policy = tmp_path / "self.toml"
    policy.write_text(NO_SELF_APPROVAL)
    settings = replace(settings, policy_file=str(policy))
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "kubectl version > mine.txt"}))
    sam, sid = await add_person(settings, "sam", ["sre"]), await add_person(settings, "sid", ["sre"])
    async with build_worker(client, settings), api_client(settings, client) as http:
        started = await http.post(
            "/api/conversations", json={"message": "deploy"}, headers={"Authorization": f"Bearer {sam}"}
        )
        assert started.status_code == 201, started.text
        cid = histories.track(started.json()["conversation_id"])
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        path = f"/api/approvals/{row['request_id']}/decision"
        assert (await http.get(f"/api/approvals/{row['request_id']}")).json()["not_by"] == "sam"

        own = await http.post(path, json={"decision": "allow"}, headers={"Authorization": f"Bearer {sam}"})
        assert own.status_code == 403 and "may not approve its own call" in own.json()["error"]["message"]
        with pytest.raises(WorkflowUpdateFailedError) as failure:
            raw = DecisionInput(request_id=row["request_id"], decision="allow", principal="sam", groups=["sre"])
            await client.get_workflow_handle(cid).execute_update(UPDATE_DECIDE, raw, result_type=DecisionResult)
        assert isinstance(failure.value.cause, ApplicationError) and failure.value.cause.type == "NotAnApprover"
        other = await http.post(path, json={"decision": "allow"}, headers={"Authorization": f"Bearer {sid}"})
        assert other.status_code == 200, other.text
        await wait_status(client, cid, "idle")

    assert approval_row(settings.approvals_db, row["request_id"])["decided_by"] == "sid"
    assert (workspace_of(settings, cid) / "mine.txt").exists()
