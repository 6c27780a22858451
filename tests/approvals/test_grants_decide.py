"""A person's grant decides the calls it covers, under the rules, made and revoked from the CLI:
`approve REQ --grant 'run_shell(echo *)' --for 1h --everywhere` lets a matching call in another
conversation run without asking (door `grant`, the grant's id in the audit), a call it does not
cover still asks, `grants revoke` and a `--for 3s` that ran out approve nothing after that moment,
a conversation's grant stays in its conversation, and no grant outranks a deny rule."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from core.grants import Grant
from doors.control import send_message, start_conversation
from durable_approvals.types import APPROVAL_REQUEST_WORKFLOW, ApprovalRequestInput, ApprovalResult
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import pending_rows, rows, tool_messages, wait_pending, wait_status
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, run_each_message
from worker import build_worker

POLICY = 'allow = ["read_file", "list_dir"]\ndeny = ["run_shell(echo secret*)"]\n'


def grant(pattern: str, *, minutes: float | None = None, conversation: str | None = None) -> Grant:
    now = datetime.now(UTC)
    return Grant(
        grant_id=f"gr_{uuid.uuid4().hex[:10]}",
        pattern=pattern,
        scope="conversation" if conversation else "everywhere",
        conversation_id=conversation,
        made_by="alice",
        door="cli",
        created_at=now,
        expires_at=None if minutes is None else now + timedelta(minutes=minutes),
    )


async def grants_listed(settings: Settings, client: Client) -> list[dict[str, Any]]:
    listed = await run_cli(settings, client, "grants", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    found: list[dict[str, Any]] = json.loads(listed.stdout)
    return found


async def ran_without_asking(client: Client, settings: Settings, conversation_id: str, runs: int) -> str:
    """The turn ends with `runs` tool results and no request waiting; the last result."""
    state = await wait_status(client, conversation_id, "idle", tool_results=runs)
    assert pending_rows(settings.approvals_db, conversation_id) == []
    return tool_messages(state)[-1]


async def test_a_grant_decides_what_it_covers_until_revoked_or_expired_and_never_beats_a_deny_rule(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    model.behaviour = run_each_message
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    settings = replace(settings, policy_file=str(policy))
    db = settings.approvals_db
    async with build_worker(client, settings):
        first = histories.track(await start_conversation(client, settings, "run echo first"))
        [asked] = await wait_pending(db, first, 1)
        made = await run_cli(
            settings,
            client,
            "approve",
            asked["request_id"],
            "--grant",
            "run_shell(echo *)",
            "--for",
            "1h",
            "--everywhere",
        )
        assert made.returncode == 0, made.stderr
        [everywhere] = await grants_listed(settings, client)
        assert everywhere["pattern"] == "run_shell(echo *)" and everywhere["expires_at"] is not None

        other = histories.track(await start_conversation(client, settings, "run echo granted"))
        assert "granted" in await ran_without_asking(client, settings, other, 1)
        decided = "SELECT decision, decided_by, reason FROM ui_pending_approvals WHERE conversation_id = ?"
        [row] = rows(db, decided, other)
        assert row["decision"] == "allow" and everywhere["grant_id"] in row["reason"]
        audit = await run_cli(settings, client, "audit", "--json")
        assert everywhere["grant_id"] in audit.stdout

        await send_message(client, other, "run ls")  # not covered: a person is asked
        [asked] = await wait_pending(db, other, 1)
        assert asked["tool_name"] == "run_shell"

        denied = histories.track(await start_conversation(client, settings, "run echo secret"))
        state = await wait_status(client, denied, "idle", tool_results=1)
        assert "deny rule" in tool_messages(state)[0], "a deny rule outranks every grant"

        revoked = await run_cli(settings, client, "grants", "revoke", everywhere["grant_id"])
        assert revoked.returncode == 0, revoked.stderr
        after = histories.track(await start_conversation(client, settings, "run echo after the revoke"))
        await wait_pending(db, after, 1)

        brief = await run_cli(settings, client, "grants", "add", "run_shell(printf *)", "--everywhere", "--for", "3s")
        assert brief.returncode == 0, brief.stderr
        within = histories.track(await start_conversation(client, settings, "run printf within"))
        await ran_without_asking(client, settings, within, 1)
        [short] = [g for g in await grants_listed(settings, client) if g["pattern"] == "run_shell(printf *)"]
        ends = datetime.fromisoformat(short["expires_at"])
        await asyncio.sleep(max(0.0, (ends - datetime.now(UTC)).total_seconds()) + 0.5)
        expired = histories.track(await start_conversation(client, settings, "run printf expired"))
        await wait_pending(db, expired, 1)

        store = ProjectionStore(db)
        scoped = f"conv-{uuid.uuid4().hex[:12]}"
        try:
            await store.add_grant(grant("run_shell(uname*)", conversation=scoped))
        finally:
            await store.close()
        histories.track(await start_conversation(client, settings, "run uname -a", scoped))
        await ran_without_asking(client, settings, scoped, 1)
        outside = histories.track(await start_conversation(client, settings, "run uname"))
        await wait_pending(db, outside, 1)  # another conversation: out of the grant's scope
    vias = rows(db, "SELECT f.decided_via FROM ui_decision_facts f WHERE f.request_id LIKE ?", f"perm_{other}_%")
    assert {"decided_via": "grant"} in vias


async def test_a_grant_decides_an_approval_request_of_any_workflow(
    client: Client, settings: Settings, histories: HistoryRecorder, tmp_path: Path
) -> None:
    """`ApprovalRequest` (a request from any workflow, or from outside Temporal) is judged the same way."""
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    settings = replace(settings, policy_file=str(policy))
    store = ProjectionStore(settings.approvals_db)
    everywhere = grant("run_shell(echo *)")
    try:
        await store.add_grant(everywhere)
    finally:
        await store.close()
    async with build_worker(client, settings):
        covered = await client.execute_workflow(
            APPROVAL_REQUEST_WORKFLOW,
            ApprovalRequestInput(tool="run_shell", arguments={"command": "echo from a pipeline"}, key="k1"),
            id=histories.track(f"approval-{uuid.uuid4().hex[:12]}"),
            task_queue=settings.task_queue,
            result_type=ApprovalResult,
        )
        asked_id = f"approval-{uuid.uuid4().hex[:12]}"
        await client.start_workflow(
            APPROVAL_REQUEST_WORKFLOW,
            ApprovalRequestInput(tool="run_shell", arguments={"command": "make deploy"}, key="k2"),
            id=asked_id,
            task_queue=settings.task_queue,
        )
        await wait_pending(settings.approvals_db, asked_id, 1)  # not covered: a person is asked
    assert (covered.decision, covered.door, covered.decided_by) == ("allow", "grant", "alice")
    assert everywhere.grant_id in (covered.reason or "")
