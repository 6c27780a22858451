"""The caller's worker and ours are SIGKILLed while a Nexus request waits: new ones take over, and
the decision reaches the caller once (its write runs once)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from config.settings import Settings
from doors.nexus_endpoint import ensure_endpoint
from durable_approvals import nexus_request_id
from tests.agents.nexus_caller_worker import CallerWorker
from tests.agents.nexus_callers import NexusReleasePipeline, NexusWriteJob
from tests.agents.nexus_support import client_on, register_namespace
from tests.support.caller_workflows import JobOutcome
from tests.support.helpers import rows, wait_pending
from tests.support.processes import WorkerProcess, process_env, run_cli

# Two workers killed and restarted around a waiting request: in `make test-scale`.
pytestmark = pytest.mark.long


async def test_both_workers_killed_while_a_nexus_request_waits(
    client: Client, settings: Settings, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    address = client.service_client.config.target_host
    caller = client_on(client, await register_namespace(client), pydantic_data_converter)
    endpoint = f"approvals-{uuid.uuid4().hex[:8]}"
    await ensure_endpoint(client, client.namespace, settings.task_queue, endpoint)
    queue = f"nexus-callers-{uuid.uuid4().hex[:8]}"
    started: list[WorkerProcess | CallerWorker] = []

    def ours(n: int) -> WorkerProcess:
        worker = WorkerProcess(process_env(settings, address), tmp_path / f"ours-{n}.log").start()
        started.append(worker)
        return worker.wait_ready()

    def theirs(n: int) -> CallerWorker:
        worker = CallerWorker(address, caller.namespace, queue, tmp_path / f"theirs-{n}.log")
        started.append(worker)
        return worker.start()

    try:
        first: list[WorkerProcess | CallerWorker] = [ours(1), theirs(1)]
        job = NexusWriteJob(path="notes.txt", content="v2", out_dir=str(out), approvals_queue="", endpoint=endpoint)
        handle = await caller.start_workflow(
            NexusReleasePipeline.run, job, id=f"release-{uuid.uuid4().hex[:8]}", task_queue=queue
        )
        rid = nexus_request_id(caller.namespace, handle.id, "write")
        await wait_pending(settings.approvals_db, rid, 1)
        for worker in first:
            worker.kill()

        ours(2)
        theirs(2)
        done = await run_cli(settings, client, "approve", rid, "--as", "bob")
        assert done.returncode == 0, done.stderr
        result = JobOutcome.model_validate(await handle.result())
        assert (result.approval.decision, result.approval.decided_by, result.wrote) == ("allow", "bob", True)
    finally:
        for worker in started:
            worker.kill()
    assert (out / "notes.txt").read_text() == "v2", "the approved write ran once"
    decided = rows(settings.approvals_db, "SELECT decision FROM ui_pending_approvals WHERE request_id = ?", rid)
    assert decided == [{"decision": "allow"}]
