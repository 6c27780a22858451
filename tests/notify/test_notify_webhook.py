"""Webhook notifications against a real HTTP receiver: one signed delivery per request, a receiver that is
down never holds the turn back, and the delivery arrives once it is back."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, wait_pending, wait_status, workspace_of
from tests.support.notify_support import WEBHOOK_SECRET, Receiver, verify_webhook, write_policy
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import add_person, api_client
from worker import build_worker


def hook_policy(port: int) -> str:
    return f"""
ask = ["write_file", "run_shell"]

[channels.ops-hook]
kind = "webhook"
url = "http://127.0.0.1:{port}/hook"
secret_env = "OPS_HOOK_SECRET"

[[approvers]]
match = ["run_shell"]
approvers = ["alice"]
notify = ["ops-hook"]
"""


@pytest.fixture
def hook_settings(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("OPS_HOOK_SECRET", WEBHOOK_SECRET)
    return settings


async def test_each_request_gets_exactly_one_signed_webhook_the_receiver_verifies(
    client: Client, hook_settings: Settings, model: ScriptedModel, tmp_path: Path, histories: HistoryRecorder
) -> None:
    receiver = Receiver().start()
    settings = replace(hook_settings, policy_file=write_policy(tmp_path / "policy.toml", hook_policy(receiver.port)))
    model.behaviour = calls_then_summary(
        ("c1", "run_shell", {"command": "echo one > one.txt"}),
        ("c2", "run_shell", {"command": "echo two > two.txt"}),
        ("c3", "write_file", {"path": "plain.txt", "content": "no rule, no channel"}),
    )
    token = await add_person(settings, "alice", [])
    try:
        async with build_worker(client, settings), api_client(settings, client) as http:
            cid = histories.track(await start_conversation(client, settings, "two commands"))
            await wait_pending(settings.approvals_db, cid, 3)
            await eventually(lambda: receiver.count(2))
            for call in ("c1", "c2", "c3"):
                body = {"decision": "allow"}
                sent = await http.post(
                    f"/api/approvals/perm_{cid}_{call}/decision",
                    json=body,
                    headers={"Authorization": f"Bearer {token}"},
                )
                assert sent.status_code == 200, sent.text
            await wait_status(client, cid, "idle")
    finally:
        receiver.stop()

    assert len(receiver.deliveries) == 2, [d.json()["request_id"] for d in receiver.deliveries]
    by_request = {d.json()["request_id"]: d for d in receiver.deliveries}
    assert set(by_request) == {f"perm_{cid}_c1", f"perm_{cid}_c2"}
    for request_id, delivery in by_request.items():
        assert verify_webhook(delivery, WEBHOOK_SECRET)
        assert not verify_webhook(delivery, "another secret")
        assert delivery.headers["idempotency-key"] == f"{request_id}:ops-hook:request"
        body = delivery.json()
        assert body["type"] == "approval.request" and body["tool"] == "run_shell"
        assert body["approvers"] == ["alice"]
        assert body["url"].endswith(f"/approvals/{request_id}")
    assert by_request[f"perm_{cid}_c1"].json()["arguments"] == {"command": "echo one > one.txt"}
    assert (workspace_of(settings, cid) / "one.txt").read_text().strip() == "one"


async def test_a_receiver_that_is_down_holds_nothing_back_and_gets_the_webhook_once_it_is_up(
    client: Client, hook_settings: Settings, model: ScriptedModel, tmp_path: Path, histories: HistoryRecorder
) -> None:
    receiver = Receiver()  # its port is chosen, but nothing listens yet
    settings = replace(hook_settings, policy_file=write_policy(tmp_path / "policy.toml", hook_policy(receiver.port)))
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "echo ran > ran.txt"}))
    token = await add_person(settings, "alice", [])
    try:
        async with build_worker(client, settings), api_client(settings, client) as http:
            cid = histories.track(await start_conversation(client, settings, "one command"))
            [row] = await wait_pending(settings.approvals_db, cid, 1)
            sent = await http.post(
                f"/api/approvals/{row['request_id']}/decision",
                json={"decision": "allow"},
                headers={"Authorization": f"Bearer {token}"},
            )
            assert sent.status_code == 200, sent.text
            await wait_status(client, cid, "idle")
            assert (workspace_of(settings, cid) / "ran.txt").exists()
            assert receiver.deliveries == []  # the turn ended while the receiver was still down

            receiver.start()
            await eventually(lambda: receiver.count(1), timeout=90)
            [delivery] = receiver.deliveries
            assert verify_webhook(delivery, WEBHOOK_SECRET)
            assert delivery.json()["request_id"] == row["request_id"]
    finally:
        receiver.stop()
    assert approval_row(settings.approvals_db, row["request_id"])["decided_by"] == "alice"
