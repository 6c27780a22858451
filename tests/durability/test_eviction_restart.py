"""Waiting survives eviction and worker replacement; the model is asked once per assistant message."""

from __future__ import annotations

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import tool_messages, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker

WRITE = ("call_w", "write_file", {"path": "kept.txt", "content": "survived"})


async def test_no_cache_replays_every_task_without_asking_the_model_again(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(WRITE, ("call_r", "read_file", {"path": "kept.txt"}))
    async with build_worker(client, settings, max_cached_workflows=0):
        cid = histories.track(await start_conversation(client, settings, "evict me"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        state = await wait_status(client, cid, "idle")
    assert tool_messages(state) == ["Wrote 8 bytes to kept.txt", "survived"], "calls ran in the model's order"
    assert (workspace_of(settings, cid) / "kept.txt").read_text() == "survived"
    assert len(model.requests) == 2


async def test_decision_sent_with_no_worker_resumes_on_a_new_worker(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(WRITE)
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "restart me"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
    # No worker runs now: the signal is kept by the server alone.
    await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
    assert not (workspace_of(settings, cid) / "kept.txt").exists()
    async with build_worker(client, settings):
        state = await wait_status(client, cid, "idle")
    assert (workspace_of(settings, cid) / "kept.txt").read_text() == "survived"
    assert tool_messages(state) == ["Wrote 8 bytes to kept.txt"]
    assert len(model.requests) == 2
