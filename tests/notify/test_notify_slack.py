"""Slack: the incoming-webhook message a request sends, and its buttons deciding through the UI's door.

Signed with a test signing secret, a press approves the call; a bad or old signature is refused
with 401 and changes nothing; a Slack user the approver rules do not allow is refused."""

from __future__ import annotations

import html
import json
import time
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, rows, wait_pending, wait_status, workspace_of
from tests.support.notify_support import SLACK_SIGNING_SECRET, Receiver, slack_form, slack_headers, write_policy
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import add_person, api_client
from worker import build_worker


def slack_policy(port: int) -> str:
    return f"""
ask = ["write_file", "run_shell"]

[channels.ops-slack]
kind = "slack"
url = "http://127.0.0.1:{port}/slack"
groups = ["ops"]

[slack]
users = {{ U_ALICE = "alice", U_BOB = "bob" }}

[[approvers]]
match = ["run_shell"]
approvers = ["group:ops"]
"""


async def test_slack_message_and_buttons_decide_through_the_same_door(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    tmp_path: Path,
    histories: HistoryRecorder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SLACK_SIGNING_SECRET)
    receiver = Receiver().start()
    settings = replace(settings, policy_file=write_policy(tmp_path / "policy.toml", slack_policy(receiver.port)))
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "echo 'from slack' > s.txt"}))
    await add_person(settings, "alice", ["ops"])
    await add_person(settings, "bob", ["dev"])
    respond = receiver.url("/respond")
    try:
        async with build_worker(client, settings), api_client(settings, client) as http:
            cid = histories.track(await start_conversation(client, settings, "from slack"))
            [row] = await wait_pending(settings.approvals_db, cid, 1)
            request_id = row["request_id"]
            [message] = await eventually(lambda: receiver.count(1, "/slack"))

            async def press(user: str, action: str = "approve", **signing: object) -> tuple[int, dict]:
                body = slack_form(user, action, request_id, respond)
                answer = await http.post("/slack/actions", content=body, headers=slack_headers(body, **signing))  # type: ignore[arg-type]
                return answer.status_code, answer.json()

            assert (await press("U_ALICE", secret="not the secret"))[0] == 401
            assert (await press("U_ALICE", at=time.time() - 600))[0] == 401
            assert (await press("U_ALICE", at=time.time() + 600))[0] == 401
            assert approval_row(settings.approvals_db, request_id)["decision"] is None
            assert rows(settings.approvals_db, "SELECT * FROM ui_decision_claims") == []

            status, bob = await press("U_BOB")
            assert (status, bob["ok"], bob["error"]["type"]) == (200, False, "NotAnApprover")
            status, eve = await press("U_EVE", action="deny")
            assert (status, eve["ok"]) == (200, False) and "not mapped" in eve["error"]["message"]
            assert approval_row(settings.approvals_db, request_id)["decision"] is None

            status, alice = await press("U_ALICE")
            assert (status, alice["ok"], alice["decided_by"]) == (200, True, "alice")
            await wait_status(client, cid, "idle")
            _, again = await press("U_ALICE", action="deny")
            assert again["error"]["type"] == "ApprovalAlreadyResolved"
            updates = await eventually(lambda: receiver.count(4, "/respond"))
    finally:
        receiver.stop()

    decided = approval_row(settings.approvals_db, request_id)
    assert (decided["decision"], decided["decided_by"]) == ("allow", "alice")
    assert (workspace_of(settings, cid) / "s.txt").read_text().strip() == "from slack"
    [replaced] = [u.json() for u in updates if u.json().get("replace_original")]
    assert replaced["text"].startswith("Allowed by alice in Slack") and request_id in replaced["text"]
    refusals = [u.json()["text"] for u in updates if u.json().get("response_type") == "ephemeral"]
    assert len(refusals) == 3 and all(text.startswith("Not decided") for text in refusals)

    sent = message.json()
    code = sent["blocks"][1]["text"]["text"]
    shown = html.unescape(code.strip("`"))  # Slack's entities for & < >
    assert code.startswith("```") and json.loads(shown) == {"command": "echo 'from slack' > s.txt"}
    assert "run_shell" in sent["text"] and "May approve: group:ops" in sent["blocks"][2]["elements"][0]["text"]
    [actions] = [b for b in sent["blocks"] if b["type"] == "actions"]
    assert [(e["action_id"], e["value"]) for e in actions["elements"][:2]] == [
        ("approve", request_id),
        ("deny", request_id),
    ]
    assert actions["elements"][2]["url"].endswith(f"/approvals/{request_id}")
