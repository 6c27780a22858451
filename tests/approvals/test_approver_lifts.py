"""Approver rules outrank auto-approve and always-allow: a call an approver rule covers still
waits for the people it names, in auto-approve mode (the conversation's switch or the policy's
mode) and after someone always-allowed its tool; other calls are lifted as before."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from temporalio.client import Client

from config.settings import Settings
from core.approvers import keeps_asking
from core.policy_rules import PolicyRules
from core.tool_specs import TOOL_SPECS
from doors.control import get_state, set_auto_approve, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, pending_rows, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import add_person, api_client
from worker import build_worker

POLICY = """
ask = ["run_shell", "write_file"]
[[approvers]]
match = ["run_shell(kubectl *)"]
approvers = ["group:sre"]
"""


def test_only_lifted_asks_under_an_approver_rule_keep_asking() -> None:
    rules = PolicyRules.model_validate(
        {"mode": "auto_approve", "allow": ["run_shell(kubectl get *)"], "ask": [], "approvers": [
            {"match": ["run_shell(kubectl *)"], "approvers": ["group:sre"]}
        ]}
    )  # fmt: skip
    shell = TOOL_SPECS["run_shell"]

    def asks(command: str) -> bool:
        return keeps_asking(rules, shell, {"command": command}, command)

    assert asks("kubectl delete pod x") and asks("ls; kubectl apply -f y")
    assert not asks("ls"), "no approver rule covers it: auto-approve lifts it"
    assert not asks("kubectl get pods"), "an allow rule allows it outright, not a lift"


async def test_auto_approve_and_always_allow_do_not_get_round_the_approvers(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    settings = replace(settings, policy_file=str(policy))
    sam = await add_person(settings, "sam", ["sre"])
    model.behaviour = calls_then_summary(
        ("c1", "run_shell", {"command": "echo lifted > echo.txt"}),
        ("c2", "run_shell", {"command": "kubectl version > kube.txt"}),
    )
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "first"))
        # Always-allow run_shell on the call no approver rule covers.
        await wait_pending(settings.approvals_db, cid, 2)
        first = await http.post(f"/api/approvals/perm_{cid}_c1/decision", json={"decision": "always_allow"})
        assert first.status_code == 200, first.text
        # The always-allow freed nothing the approvers must decide: kubectl still waits for sre.
        [waiting] = await eventually(lambda: _only_pending(settings, cid, f"perm_{cid}_c2"))
        assert waiting["request_id"] == f"perm_{cid}_c2"
        second = await http.post(
            f"/api/approvals/perm_{cid}_c2/decision",
            json={"decision": "allow"},
            headers={"Authorization": f"Bearer {sam}"},
        )
        assert second.status_code == 200, second.text
        await wait_status(client, cid, "idle")

        # A later turn with auto-approve on as well: the plain command runs, kubectl is asked again.
        await set_auto_approve(client, cid, True)
        await client.get_workflow_handle(cid).signal("submit_message", {"text": "again"})
        [again] = await wait_pending(settings.approvals_db, cid, 1)
        assert again["request_id"].startswith(f"perm_{cid}_c2_")
        state = await get_state(client, cid)
        assert state.auto_approve and "run_shell" in state.always_allow
        await client.get_workflow_handle(cid).terminate("done")

    assert (workspace_of(settings, cid) / "echo.txt").exists() and (workspace_of(settings, cid) / "kube.txt").exists()


async def _only_pending(settings: Settings, cid: str, request_id: str) -> list[dict] | None:
    found = pending_rows(settings.approvals_db, cid)
    return found if [row["request_id"] for row in found] == [request_id] else None
