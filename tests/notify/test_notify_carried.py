"""A notification still retrying when its conversation continues as new is started again in the
next run, so a receiver that comes back after the hand-over still gets it (once, by its key)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from config.settings import Settings
from core.contract import WORKFLOW_TYPE
from core.conversation_model import ConversationInput, DecisionInput
from doors.control import send_decision
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, wait_pending, wait_status, workspace_of
from tests.support.notify_support import WEBHOOK_SECRET, Receiver, verify_webhook, write_policy
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker


def hook_policy(port: int) -> str:
    return f"""
ask = ["run_shell"]

[channels.ops-hook]
kind = "webhook"
url = "http://127.0.0.1:{port}/hook"
secret_env = "OPS_HOOK_SECRET"
groups = ["*"]
"""


async def continued(client: Client, conversation_id: str) -> list[str] | None:
    """The conversation's runs, once it has continued as new."""
    found = [execution.run_id async for execution in client.list_workflows(f"WorkflowId = '{conversation_id}'")]
    return found if len(found) >= 2 else None


async def test_a_notification_retrying_at_continue_as_new_is_delivered_by_the_next_run(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    tmp_path: Path,
    histories: HistoryRecorder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPS_HOOK_SECRET", WEBHOOK_SECRET)
    receiver = Receiver()  # its port is chosen, but nothing listens yet
    settings = replace(settings, policy_file=write_policy(tmp_path / "policy.toml", hook_policy(receiver.port)))
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "echo ran > ran.txt"}))
    cid = histories.track("conv-notify-carried")
    start = ConversationInput(
        conversation_id=cid,
        policy=settings.load_policy(),
        approval_timeout_seconds=3600,
        inbox=["one command"],
        continue_as_new_after_events=10,  # the first turn's end hands over to a new run
    )
    try:
        async with build_worker(client, settings):
            await client.start_workflow(WORKFLOW_TYPE, start, id=cid, task_queue=settings.task_queue)
            [row] = await wait_pending(settings.approvals_db, cid, 1)
            await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
            await eventually(lambda: continued(client, cid))
            await wait_status(client, cid, "idle")
            assert receiver.deliveries == []  # the first run ended while the receiver was down

            receiver.start()
            await eventually(lambda: receiver.count(1), timeout=60)
            [delivery] = receiver.deliveries
    finally:
        receiver.stop()
    assert verify_webhook(delivery, WEBHOOK_SECRET)
    assert delivery.json()["request_id"] == row["request_id"]
    assert (workspace_of(settings, cid) / "ran.txt").exists()  # the conversation's own workspace
