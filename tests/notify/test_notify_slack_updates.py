"""A Slack message posted through Slack's Web API is updated (chat.update, with the channel and ts
Slack answered) when its request is decided through any door, not only through Slack's buttons."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, wait_pending, wait_status
from tests.support.notify_support import Delivery, Receiver, write_policy
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import api_client
from worker import build_worker

TOKEN = "xoxb-test-token"


def web_api_policy(port: int) -> str:
    return f"""
ask = ["write_file"]

[channels.ops-slack]
kind = "slack"
url = "http://127.0.0.1:{port}/api"
token_env = "OPS_SLACK_TOKEN"
slack_channel = "C0OPS"
groups = ["*"]
"""


def slack_web_api(delivery: Delivery) -> bytes:
    """Slack's answer: chat.postMessage names the channel and the message's ts (unique per post)."""
    if delivery.path.endswith("/chat.postMessage"):
        return json.dumps({"ok": True, "channel": "C0OPS", "ts": f"1700000000.{len(delivery.body):06d}"}).encode()
    return json.dumps({"ok": True}).encode()


async def test_a_decision_from_the_cli_or_the_api_updates_the_slack_message_once(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    tmp_path: Path,
    histories: HistoryRecorder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPS_SLACK_TOKEN", TOKEN)
    receiver = Receiver(answer=slack_web_api).start()
    settings = replace(settings, policy_file=write_policy(tmp_path / "policy.toml", web_api_policy(receiver.port)))
    model.behaviour = calls_then_summary(
        ("c1", "write_file", {"path": "one.txt", "content": "1"}),
        ("c2", "write_file", {"path": "two-longer-name.txt", "content": "2"}),
    )
    try:
        async with build_worker(client, settings), api_client(settings, client) as http:
            cid = histories.track(await start_conversation(client, settings, "two files"))
            await wait_pending(settings.approvals_db, cid, 2)
            by_cli, by_api = f"perm_{cid}_c1", f"perm_{cid}_c2"
            posts = await eventually(lambda: receiver.count(2, "/api/chat.postMessage"))
            approved = await run_cli(settings, client, "approve", by_cli, "--as", "carol")
            assert approved.returncode == 0, approved.stderr
            card = (await http.get(f"/api/approvals/{by_api}")).json()
            body = {"decision": "deny", "name": "dave", "args_hash": card["args_hash"]}
            assert (await http.post(f"/api/approvals/{by_api}/decision", json=body)).status_code == 200
            await wait_status(client, cid, "idle")
            updates = await eventually(lambda: receiver.count(2, "/api/chat.update"))
    finally:
        receiver.stop()

    assert len(receiver.at("/api/chat.postMessage")) == 2 and len(updates) == 2, "exactly one update per message"
    assert all(d.headers["authorization"] == f"Bearer {TOKEN}" for d in posts + updates)
    ts_of = {}
    for post, answer in ((p, json.loads(slack_web_api(p))) for p in posts):
        request_id = by_cli if by_cli in post.json()["text"] else by_api
        ts_of[request_id] = answer["ts"]
    sent = {u.json()["ts"]: u.json() for u in updates}
    assert set(sent) == set(ts_of.values()), "each update names a posted message's ts"
    cli_update, api_update = sent[ts_of[by_cli]], sent[ts_of[by_api]]
    assert cli_update["channel"] == api_update["channel"] == "C0OPS"
    assert "Allowed by carol via cli" in cli_update["text"] and by_cli in cli_update["text"]
    assert "Denied by dave via ui" in api_update["text"] and by_api in api_update["text"]
    assert cli_update["blocks"] and not any(b["type"] == "actions" for b in cli_update["blocks"]), "no buttons left"
