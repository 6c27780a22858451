"""A run of approvals sent from the page faster than anyone reads them: the decision that completes
the run answers with a notice (the page shows it), the audit keeps it once, and the metrics count it."""

from __future__ import annotations

from dataclasses import replace

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from tests.conftest import HistoryRecorder
from tests.support.helpers import start_and_wait, wait_status
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import api_client
from worker import build_worker


async def test_the_approval_completing_a_rapid_run_answers_with_a_notice(
    env: WorkflowEnvironment, client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    settings = replace(settings, rapid_approval_count=3, rapid_approval_seconds=60.0)
    calls = [(f"call_{n}", "write_file", {"path": f"notes/{n}.txt", "content": "x"}) for n in range(4)]
    model.behaviour = calls_then_summary(*calls)
    async with build_worker(client, settings):
        started = await start_and_wait(client, settings, "write four notes", histories, pending=4)
        notices = []
        async with api_client(settings, client) as http:
            for row in started.pending:
                body = {"decision": "allow", "name": "dora"}
                sent = await http.post(f"/api/approvals/{row['request_id']}/decision", json=body)
                assert sent.status_code == 200, sent.text
                notices.append(sent.json().get("notice"))
            await wait_status(client, started.conversation_id, "idle", tool_results=4)
            trail = (await http.get("/api/audit")).json()
            metrics = (await http.get("/metrics")).text

    assert notices[:2] == [None, None] and notices[3] is None
    assert notices[2] is not None and "dora approved 3 requests in a row" in notices[2]
    [kept] = [row for row in trail if row["kind"] == "notice"]
    assert (kept["principal"], kept["approvals"]) == ("dora", 3)
    assert "approvals_rapid_approval_notices_total 1.0" in metrics
