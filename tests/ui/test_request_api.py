"""The requests API (`/api/requests`): asking from anything that speaks HTTP, with an asking token
that may ask and never decide. A real dev server, a real worker, the CLI's `approve`."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, rows, wait_pending
from tests.support.processes import REPO_ROOT, process_env, run_cli
from tests.support.ui_fixtures import add_person, api_client, served_app
from worker import build_worker

POLICY = """
ask = ["run_shell"]
deny = ["run_shell(rm *)"]
allow = ["read_status"]
"""
SHARED = "shared-ui-token"
RUN = uuid.uuid4().hex[:8]  # one dev server serves every test: request ids are the asker's and key's
DEPLOY = {"tool": "run_shell", "arguments": {"command": "make deploy"}, "title": "Deploy", "context": "build 42"}


@pytest.fixture
def gated(settings: Settings, tmp_path: Path) -> Settings:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    return replace(settings, policy_file=str(policy), ui_token=SHARED)


async def add_asker(settings: Settings, name: str) -> dict[str, str]:
    store = ProjectionStore(settings.approvals_db)
    try:
        return {"Authorization": f"Bearer {await store.add_user(name, [], asker=True)}"}
    finally:
        await store.close()


async def workflow_count(client: Client, request_id: str) -> int:
    return len([w async for w in client.list_workflows(f"WorkflowId = '{request_id}'")])


async def test_an_asking_token_asks_once_waits_for_a_person_and_decides_nothing(
    client: Client, gated: Settings, histories: HistoryRecorder
) -> None:
    settings = gated
    ci, other = await add_asker(settings, "ci"), await add_asker(settings, "nightly")
    bob = {"Authorization": f"Bearer {await add_person(settings, 'bob', [])}"}
    async with build_worker(client, settings), api_client(settings, client) as http:
        assert (await http.post("/api/requests", json={**DEPLOY, "key": f"build-42-{RUN}"})).status_code == 401
        first = await http.post("/api/requests", json={**DEPLOY, "key": f"build-42-{RUN}"}, headers=ci)
        assert first.status_code == 201, first.text
        rid = histories.track(first.json()["request_id"])
        assert first.json() == {"request_id": rid, "status": "pending"}
        again = await http.post("/api/requests", json={**DEPLOY, "key": f"build-42-{RUN}"}, headers=ci)
        assert (again.status_code, again.json()) == (200, {"request_id": rid, "status": "pending"})
        [row] = await wait_pending(settings.approvals_db, rid, 1)
        assert json.loads(row["details_json"])["arguments"] == {"command": "make deploy"}
        assert await workflow_count(client, rid) == 1, "the same key, one workflow"
        assert len(rows(settings.approvals_db, "SELECT 1 FROM ui_pending_approvals WHERE request_id = ?", rid)) == 1
        listed = await run_cli(settings, client, "pending", "--json")
        [card] = [r for r in json.loads(listed.stdout) if r["request_id"] == rid]
        assert card["tool"]["origin"] == "ci", "the asker is the requesting agent"

        # An asking token decides nothing, not even its own request; it reads only /api/requests.
        decide = {"decision": "allow"}
        for method, path, body in [
            ("POST", f"/api/approvals/{rid}/decision", decide),
            ("POST", "/api/approvals/decisions", {"decision": "allow", "items": [{"request_id": rid}]}),
            ("POST", f"/api/approvals/{rid}/extend", {"seconds": 60}),
            ("POST", f"/api/approvals/{rid}/undo", {}),
            ("POST", "/api/grants", {"pattern": "run_shell", "scope": "everywhere"}),
            ("GET", "/api/approvals", None),
            ("GET", "/api/events", None),
        ]:
            refused = await http.request(method, path, json=body, headers=ci)
            assert refused.status_code == 403, (path, refused.text)
            assert refused.json()["error"]["type"] == "AskingTokenOnly"
        assert (await http.get(f"/api/requests/{rid}", headers=other)).status_code == 404, "another asker's"
        assert (await http.delete(f"/api/requests/{rid}", headers=other)).status_code == 404
        login = await http.post("/login", data={"token": ci["Authorization"].split()[1]})
        assert "approvals_ui_session" not in login.cookies, "an asking token opens no session"
        as_cli = await run_cli(settings, client, "approve", rid, env_extra={"APPROVER_TOKEN": ci["Authorization"][7:]})
        assert as_cli.returncode == 2 and "asking token" in as_cli.stderr

        # A long poll answers once a person approves from the CLI.
        polling = asyncio.create_task(http.get(f"/api/requests/{rid}?wait=30", headers=ci, timeout=60))
        await asyncio.sleep(0.5)
        assert not polling.done()
        done = await run_cli(settings, client, "approve", rid, "--as", "bob")
        assert done.returncode == 0, done.stderr
        answer = (await polling).json()
        assert answer["status"] == "decided"
        result = answer["result"]
        assert (result["decision"], result["decided_by"], result["door"]) == ("allow", "bob", "cli")
        assert result["arguments"] == {"command": "make deploy"} and result["args_hash"] and result["decided_at"]
        same = await http.post("/api/requests", json={**DEPLOY, "key": f"build-42-{RUN}"}, headers=ci)
        assert (same.status_code, same.json()["result"]) == (200, result), "decided: the same request, not a new one"
        gone = await http.delete(f"/api/requests/{rid}", headers=ci)
        assert gone.status_code == 409 and gone.json()["error"]["result"]["decision"] == "allow"

        # A person's token asks too (named as the asker) and still decides.
        mine = await http.post("/api/requests", json={**DEPLOY, "key": f"bob-1-{RUN}"}, headers=bob)
        bobs = histories.track(mine.json()["request_id"])
        await wait_pending(settings.approvals_db, bobs, 1)
        decided = await http.post(f"/api/approvals/{bobs}/decision", json={"decision": "deny"}, headers=bob)
        assert decided.status_code == 200, decided.text
        assert (await http.get(f"/api/requests/{bobs}?wait=10", headers=bob)).json()["result"]["decision"] == "deny"


async def test_rules_answer_at_once_a_cancel_ends_a_request_and_bad_input_is_refused(
    client: Client, gated: Settings, histories: HistoryRecorder
) -> None:
    settings = gated
    ci = await add_asker(settings, "ci")
    async with build_worker(client, settings), api_client(settings, client) as http:
        rm = {"tool": "run_shell", "arguments": {"command": "rm -rf build"}, "key": f"clean-1-{RUN}"}
        denied = await http.post("/api/requests", json=rm, headers=ci)
        assert denied.status_code == 201, denied.text
        histories.track(denied.json()["request_id"])
        assert denied.json()["status"] == "decided"
        assert (denied.json()["result"]["decision"], denied.json()["result"]["door"]) == ("deny", "policy")
        allowed = await http.post("/api/requests", json={"tool": "read_status", "key": f"r-1-{RUN}"}, headers=ci)
        histories.track(allowed.json()["request_id"])
        assert (allowed.json()["status"], allowed.json()["result"]["decision"]) == ("decided", "allow")

        waiting = await http.post("/api/requests", json={**DEPLOY, "key": f"cancel-me-{RUN}"}, headers=ci)
        rid = histories.track(waiting.json()["request_id"])
        await wait_pending(settings.approvals_db, rid, 1)
        canceled = await http.delete(f"/api/requests/{rid}", headers=ci)
        assert canceled.status_code == 200, canceled.text
        assert canceled.json()["result"]["decision"] == "canceled"
        assert (await http.get(f"/api/requests/{rid}", headers=ci)).json()["result"]["decision"] == "canceled"

        for body in [DEPLOY, {**DEPLOY, "key": ""}, {"key": "k"}, {**DEPLOY, "key": "k", "surprise": 1}]:
            refused = await http.post("/api/requests", json=body, headers=ci)
            assert refused.status_code == 422, (body, refused.text)
            assert "\n" not in refused.json()["error"]["message"]
        assert (await http.get("/api/requests/approval-0000", headers=ci)).status_code == 404
        assert (await http.delete("/api/requests/approval-0000", headers=ci)).status_code == 404
        assert (await http.get(f"/api/requests/{rid}?wait=61", headers=ci)).status_code == 422
        conversation = await http.get(
            "/api/requests/no-such-conversation", headers={"Authorization": f"Bearer {SHARED}"}
        )
        assert conversation.status_code == 404


async def test_the_stdlib_helper_asks_polls_and_exits_by_the_decision(
    client: Client, gated: Settings, histories: HistoryRecorder
) -> None:
    settings = gated
    token = (await add_asker(settings, "ci"))["Authorization"][7:]
    users = await run_cli(settings, client, "users", "list")
    assert "asker" in users.stdout
    async with build_worker(client, settings):
        served = served_app(settings, client.service_client.config.target_host)
        try:
            env = process_env(settings, client.service_client.config.target_host)
            command = [sys.executable, "examples/http_ask.py", "--url", served.url, "--token", token, "--poll", "5"]
            helper = await asyncio.create_subprocess_exec(
                *command, "--key", f"helper-42-{RUN}", "run_shell", '{"command": "make deploy"}',
                cwd=REPO_ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            pending = await eventually(lambda: _one_pending(settings, helper))
            rid = histories.track(pending)
            assert helper.returncode is None, "it waits for a person"
            done = await run_cli(settings, client, "approve", rid, "--as", "bob")
            assert done.returncode == 0, done.stderr
            out, err = await asyncio.wait_for(helper.communicate(), 60)
            assert helper.returncode == 0, err.decode()
            printed = json.loads(out)
            assert (printed["decision"], printed["decided_by"], printed["request_id"]) == ("allow", "bob", rid)

            denied = await asyncio.create_subprocess_exec(
                *command, "--key", f"clean-{RUN}", "run_shell", '{"command": "rm -rf /"}',
                cwd=REPO_ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, err = await asyncio.wait_for(denied.communicate(), 60)
            assert denied.returncode == 1, err.decode()
            assert (json.loads(out)["decision"], json.loads(out)["door"]) == ("deny", "policy")
            histories.track(json.loads(out)["request_id"])
        finally:
            served.stop()


async def _one_pending(settings: Settings, helper: asyncio.subprocess.Process) -> str | None:
    if helper.returncode is not None:
        assert helper.stderr is not None
        raise RuntimeError(f"the helper ended ({helper.returncode}): {(await helper.stderr.read()).decode()}")
    found = rows(settings.approvals_db, "SELECT request_id FROM ui_pending_approvals WHERE resolved_at IS NULL")
    return found[0]["request_id"] if found else None
