"""Expiry on the time-skipping test server: a request nobody answers resolves as a denial."""

from __future__ import annotations

import uuid
from pathlib import Path

from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from core.contract import QUERY_GET_STATE
from core.conversation_model import ConversationState
from doors.control import start_conversation
from tests.support.helpers import approval_row, eventually, tool_messages, wait_pending, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker, replayer


async def test_unanswered_request_expires_as_denial_and_the_model_is_told(
    skipping_env: WorkflowEnvironment, tmp_path: Path, model: ScriptedModel
) -> None:
    assert model.server is not None
    settings = Settings(
        task_queue=f"tq-{uuid.uuid4().hex[:8]}",
        approvals_db=tmp_path / "approvals.db",
        workspace_dir=tmp_path / "workspace",
        openai_base_url=model.server.base_url,
        llm_model="scripted-test",
        approval_timeout=3600.0,
    )
    model.behaviour = calls_then_summary(("call_1", "run_shell", {"command": "echo ran > ran.txt"}))
    client = skipping_env.client
    async with build_worker(client, settings):
        cid = await start_conversation(client, settings, "run it")
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        handle: WorkflowHandle = client.get_workflow_handle(cid)
        await skipping_env.sleep(3601)

        async def idle() -> ConversationState | None:
            state = await handle.query(QUERY_GET_STATE, result_type=ConversationState)
            return state if state.turn_status == "idle" else None

        state = await eventually(idle)
        history = await handle.fetch_history()

    expired = approval_row(settings.approvals_db, row["request_id"])
    assert (expired["decision"], expired["decided_by"]) == ("expired", "timeout")
    assert not (workspace_of(settings, cid) / "ran.txt").exists()
    [result] = tool_messages(state)
    assert "expired" in result and "counts as a denial" in result
    assert "expired" in str(model.requests[-1]["messages"][-1]["content"])
    await replayer(client.data_converter).replay_workflow(history)
