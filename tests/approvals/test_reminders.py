"""Reminders, escalation, expiry warnings and extensions on the time-skipping test server.

Each fires at its configured time (not before), survives a worker restart, and stops the moment a
decision lands; an extension by someone allowed moves the expiry and re-arms the warning."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors import control
from doors.control import start_conversation
from tests.conftest import save_and_replay
from tests.support.helpers import approval_row, eventually, wait_pending, wait_status, workspace_of
from tests.support.notify_support import WEBHOOK_SECRET, Receiver, verify_webhook, write_policy
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import add_person, api_client
from worker import build_worker

TIMEOUT = 3600.0


def reminder_policy(port: int) -> str:
    return f"""
ask = ["run_shell"]

[channels.ops-hook]
kind = "webhook"
url = "http://127.0.0.1:{port}/ops"
secret_env = "OPS_HOOK_SECRET"

[channels.leads-hook]
kind = "webhook"
url = "http://127.0.0.1:{port}/leads"
secret_env = "OPS_HOOK_SECRET"

[[approvers]]
match = ["run_shell"]
approvers = ["alice"]
notify = ["ops-hook"]
remind_after = 600
reminders = 2
escalate_after = 1500
escalate_to = ["leads-hook", "group:leads"]
warn_before_expiry = 600
"""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.stop()


@pytest.fixture
def timed_settings(
    tmp_path: Path, model: ScriptedModel, receiver: Receiver, payload_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    assert model.server is not None
    monkeypatch.setenv("OPS_HOOK_SECRET", WEBHOOK_SECRET)
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "echo late > late.txt"}))
    return Settings(
        payload_store=str(payload_dir),
        task_queue=f"tq-{uuid.uuid4().hex[:8]}",
        approvals_db=tmp_path / "approvals.db",
        workspace_dir=tmp_path / "workspace",
        openai_base_url=model.server.base_url,
        llm_model="scripted-test",
        approval_timeout=TIMEOUT,
        policy_file=write_policy(tmp_path / "policy.toml", reminder_policy(receiver.port)),
    )


def kinds(receiver: Receiver, path: str) -> list[str]:
    """What arrived at one channel, by the kind part of each idempotency key, in order."""
    found = receiver.at(path)
    assert all(verify_webhook(d, WEBHOOK_SECRET) for d in found)
    return [d.headers["idempotency-key"].rsplit(":", 1)[1] for d in found]


async def arrived(receiver: Receiver, path: str, expected: list[str]) -> None:
    async def check() -> bool:
        return kinds(receiver, path) == expected

    await eventually(check)


def timer_summaries(history: WorkflowHistory) -> list[str]:
    started = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED]
    return [e.user_metadata.summary.data.decode().strip('"') for e in started]


async def test_reminders_and_escalation_fire_on_time_survive_a_restart_and_stop_at_the_decision(
    skipping_env: WorkflowEnvironment, timed_settings: Settings, receiver: Receiver
) -> None:
    client, settings = skipping_env.client, timed_settings
    await add_person(settings, "lee", ["leads"])
    async with build_worker(client, settings, max_cached_workflows=0):
        cid = await start_conversation(client, settings, "run it")
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        await arrived(receiver, "/ops", ["request"])
        await skipping_env.sleep(590)
        assert kinds(receiver, "/ops") == ["request"]  # not before its time
        await skipping_env.sleep(20)
        await arrived(receiver, "/ops", ["request", "reminder"])

    # A new worker replays the waiting conversation. No cache, so no sticky queue: the test server
    # would keep the first worker's sticky queue and its tasks away from the new worker.
    async with build_worker(client, settings, max_cached_workflows=0):
        await skipping_env.sleep(600)
        await arrived(receiver, "/ops", ["request", "reminder", "reminder-2"])
        assert kinds(receiver, "/leads") == []
        await skipping_env.sleep(300)
        await arrived(receiver, "/leads", ["escalation"])

        async def escalated() -> bool:
            return "group:leads" in approval_row(settings.approvals_db, row["request_id"])["details_json"]

        await eventually(escalated)
        lee = DecisionInput(request_id=row["request_id"], decision="deny", principal="lee", groups=["leads"])
        await control.send_decision(client, settings, lee.model_copy(update={"decided_by": "lee", "door": "cli"}))
        await wait_status(client, cid, "idle")
        await skipping_env.sleep(TIMEOUT)  # past the warning, the reminders and the expiry
        handle = client.get_workflow_handle(cid)
        history = await handle.fetch_history()

    assert kinds(receiver, "/ops") == ["request", "reminder", "reminder-2"]
    assert kinds(receiver, "/leads") == ["escalation"]
    decided = approval_row(settings.approvals_db, row["request_id"])
    assert (decided["decision"], decided["decided_by"]) == ("deny", "lee")
    summaries = timer_summaries(history)
    rid = row["request_id"]
    assert f"approval {rid}: reminder 1" in summaries and f"approval {rid}: escalate" in summaries
    assert f"approval {rid}: warn 1" in summaries  # armed, then canceled by the decision
    await save_and_replay(client, history, "reminders_escalation_then_decided")


async def test_an_extension_moves_the_expiry_and_re_arms_the_warning(
    skipping_env: WorkflowEnvironment, timed_settings: Settings, receiver: Receiver
) -> None:
    client, settings = skipping_env.client, timed_settings
    alice = await add_person(settings, "alice", [])
    async with build_worker(client, settings, max_cached_workflows=0), api_client(settings, client) as http:
        cid = await start_conversation(client, settings, "run it")
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        rid = row["request_id"]
        await skipping_env.sleep(3010)
        await arrived(receiver, "/leads", ["escalation", "expiry_warning"])

        bob = await run_cli(settings, client, "extend", rid, "--by", "1h", "--as", "bob")
        assert bob.returncode == 3 and "may not extend" in bob.stderr, bob.stderr
        answer = await http.post(
            f"/api/approvals/{rid}/extend",
            json={"seconds": 3600, "reason": "on holiday"},
            headers={"Authorization": f"Bearer {alice}"},
        )
        assert answer.status_code == 200, answer.text

        async def moved() -> bool:
            return approval_row(settings.approvals_db, rid)["expires_at"] != row["expires_at"]

        await eventually(moved)
        [recorded] = (await http.get(f"/api/approvals/{rid}")).json()["extensions"]
        assert (recorded["by"], recorded["seconds"], recorded["reason"]) == ("alice", 3600, "on holiday")
        await skipping_env.sleep(600)  # past the first deadline
        assert approval_row(settings.approvals_db, rid)["decision"] is None
        await skipping_env.sleep(3000)
        await arrived(receiver, "/ops", ["request", "reminder", "reminder-2", "expiry_warning", "expiry_warning-2"])
        await skipping_env.sleep(600)
        await wait_status(client, cid, "idle")
        history = await client.get_workflow_handle(cid).fetch_history()

    expired = approval_row(settings.approvals_db, rid)
    assert (expired["decision"], expired["decided_by"]) == ("expired", "timeout")
    assert '"by": "alice"' in expired["details_json"] and "on holiday" in expired["details_json"]
    assert answer.json()["expires_at"] > row["expires_at"]
    assert not (workspace_of(settings, cid) / "late.txt").exists()
    await save_and_replay(client, history, "extension_then_expired")


async def test_a_request_with_no_channel_and_no_timer_waits_as_before(
    skipping_env: WorkflowEnvironment, timed_settings: Settings, tmp_path: Path
) -> None:
    """No marker, one expiry timer: conversations of earlier releases see the same commands."""
    client = skipping_env.client
    settings = replace(timed_settings, policy_file=write_policy(tmp_path / "plain.toml", 'ask = ["run_shell"]\n'))
    async with build_worker(client, settings, max_cached_workflows=0):
        cid = await start_conversation(client, settings, "run it")
        await wait_pending(settings.approvals_db, cid, 1)
        await skipping_env.sleep(TIMEOUT + 1)
        await wait_status(client, cid, "idle")
        history = await client.get_workflow_handle(cid).fetch_history()
    markers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    assert not any(b"approval-notifications" in bytes(e.SerializeToString()) for e in markers)
    assert [s for s in timer_summaries(history) if "approval" in s] == [f"approval perm_{cid}_c1 expires"]
