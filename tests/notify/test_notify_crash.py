"""A worker SIGKILLed right after a notification left it: the webhook comes again only with the same
idempotency key (the receiver drops it), and the Slack message is not posted twice."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.failure_support import holds, worker_process
from tests.support.helpers import eventually, wait_pending
from tests.support.notify_support import WEBHOOK_SECRET, Receiver, verify_webhook, write_policy
from tests.support.scripts import ScriptedModel, calls_then_summary


def crash_policy(port: int) -> str:
    return f"""
ask = ["run_shell"]

[channels.ops-hook]
kind = "webhook"
url = "http://127.0.0.1:{port}/hook"
secret_env = "OPS_HOOK_SECRET"
groups = ["*"]

[channels.ops-slack]
kind = "slack"
url = "http://127.0.0.1:{port}/slack"
groups = ["*"]
"""


async def test_a_worker_killed_mid_send_repeats_a_webhook_with_its_key_and_never_a_slack_message(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    tmp_path: Path,
    histories: HistoryRecorder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPS_HOOK_SECRET", WEBHOOK_SECRET)
    receiver = Receiver(hold=threading.Event()).start()  # takes each message, answers only when released
    settings = replace(settings, policy_file=write_policy(tmp_path / "policy.toml", crash_policy(receiver.port)))
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "echo once > once.txt"}))
    try:
        with worker_process(settings, client, tmp_path / "worker-1.log") as first:
            first.wait_ready()
            cid = histories.track(await start_conversation(client, settings, "notify then die"))
            [row] = await wait_pending(settings.approvals_db, cid, 1)
            await eventually(lambda: receiver.count(1, "/hook"))
            await eventually(lambda: receiver.count(1, "/slack"))
            first.kill()  # both sends reached the receiver; neither attempt reported back
        assert receiver.hold is not None
        receiver.hold.set()

        with worker_process(settings, client, tmp_path / "worker-2.log") as second:
            second.wait_ready()
            handle = client.get_workflow_handle(cid)

            async def both_done() -> bool:
                history = await handle.fetch_history()
                done = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
                results = [
                    e.activity_task_completed_event_attributes.result.payloads[0].data.decode()
                    for e in history.events
                    if e.event_type == done
                ]
                return sum(row["request_id"] in r and ":request" in r for r in results) == 2

            # The killed attempts time out (start_to_close) before the retries run.
            await eventually(both_done, timeout=120)
            await holds(lambda: len(receiver.at("/hook")) == 2)
    finally:
        receiver.stop()

    hooks = receiver.at("/hook")
    assert {h.headers["idempotency-key"] for h in hooks} == {f"{row['request_id']}:ops-hook:request"}
    assert all(verify_webhook(h, WEBHOOK_SECRET) for h in hooks)
    assert len({h.json()["idempotency_key"] for h in hooks}) == 1
    assert len(receiver.at("/slack")) == 1
