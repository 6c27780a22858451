"""A caller in any SDK: it starts `ApprovalRequest` by its type name with plain JSON and an id of
its own, and reads plain JSON back. Started again under the same id after it was decided (an id
reuse policy that allows it, or the id's retention passed), the request is not asked again: the
new run returns the decision that stands, and the inbox keeps one row."""

from __future__ import annotations

import json
import uuid
from typing import Any

from temporalio.client import Client
from temporalio.common import WorkflowIDReusePolicy

from config.settings import Settings
from tests.conftest import HistoryRecorder
from tests.support.helpers import rows, wait_pending
from tests.support.processes import run_cli
from worker import build_worker

REQUEST = {
    "tool": "deploy",
    "arguments": {"service": "billing", "version": "2.4.1"},
    "key": "deploy-billing",
    "title": "deploy billing 2.4.1",
    "context": "the release train leaves at noon",
    "requester": {"workflow_id": "pipeline-42", "agent": "release-train"},
    "timeout_seconds": 3600,
}


async def ask(client: Client, settings: Settings, request_id: str) -> Any:
    return await client.start_workflow(
        "ApprovalRequest",
        REQUEST,
        id=request_id,
        task_queue=settings.task_queue,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
    )


async def test_a_request_by_type_name_is_decided_once_and_a_second_start_gets_that_decision(
    client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    rid = histories.track(f"deploy-{uuid.uuid4().hex[:8]}")
    async with build_worker(client, settings):
        first = await ask(client, settings, rid)
        [row] = await wait_pending(settings.approvals_db, rid, 1)
        assert (row["tool_name"], json.loads(row["details_json"])["arguments"]) == ("deploy", REQUEST["arguments"])
        done = await run_cli(settings, client, "approve", rid, "--as", "bob", "--reason", "train is green")
        assert done.returncode == 0, done.stderr
        decided = await first.result()
        assert isinstance(decided, dict), "a caller in another SDK reads plain JSON"
        assert (decided["decision"], decided["decided_by"], decided["door"]) == ("allow", "bob", "cli")
        assert decided["arguments"] == REQUEST["arguments"] and decided["reason"] == "train is green"

        again = await ask(client, settings, rid)
        assert again.result_run_id != first.result_run_id, "a second run of the same request id"
        assert await again.result() == decided, "the decision that stands, not a new question"
    assert len(rows(settings.approvals_db, "SELECT 1 FROM ui_pending_approvals WHERE request_id = ?", rid)) == 1
    history = await client.get_workflow_handle(rid, run_id=again.result_run_id).fetch_history()
    timers = [e for e in history.events if e.HasField("timer_started_event_attributes")]
    assert timers == [], "the second run asked nobody and set no deadline"
