"""The `approvals` Nexus service: a pipeline in a second namespace asks through an endpoint; the
request shows in our read model and `pending` with its requester, a CLI approval or a denial with
its reason reaches the caller as the very result the `ApprovalRequest` workflow returned."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from config.settings import Settings
from doors.nexus_endpoint import ensure_endpoint
from durable_approvals import ApprovalResult
from durable_approvals.nexus_caller import nexus_request_id
from tests.agents.nexus_callers import NexusReleasePipeline, NexusWriteJob
from tests.agents.nexus_support import client_on, register_namespace
from tests.conftest import HistoryRecorder
from tests.support.caller_workflows import JobOutcome, write_release_file
from tests.support.helpers import approval_row, eventually, rows, wait_pending
from tests.support.processes import run_cli
from ui.queries import with_requester_link
from worker import build_worker


async def second_namespace(client: Client) -> Client:
    """Another team's namespace, with a client of its own: the plain pydantic converter, no access
    to our payload store."""
    return client_on(client, await register_namespace(client), pydantic_data_converter)


@asynccontextmanager
async def caller_worker(caller: Client) -> AsyncIterator[str]:
    queue = f"nexus-callers-{uuid.uuid4().hex[:8]}"
    async with Worker(caller, task_queue=queue, workflows=[NexusReleasePipeline], activities=[write_release_file]):
        yield queue


async def start_job(
    caller: Client, queue: str, endpoint: str, out: Path, path: str, workflow_id: str | None = None
) -> WorkflowHandle:
    job = NexusWriteJob(path=path, content="v2", out_dir=str(out), approvals_queue="", endpoint=endpoint)
    workflow_id = workflow_id or f"release-{uuid.uuid4().hex[:8]}"
    return await caller.start_workflow(NexusReleasePipeline.run, job, id=workflow_id, task_queue=queue)


async def test_a_pipeline_in_another_namespace_asks_through_nexus_and_gets_the_same_result(
    client: Client, settings: Settings, histories: HistoryRecorder, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    caller = await second_namespace(client)
    endpoint = f"approvals-{uuid.uuid4().hex[:8]}"
    assert await ensure_endpoint(client, client.namespace, settings.task_queue, endpoint) == "created"
    assert await ensure_endpoint(client, client.namespace, settings.task_queue, endpoint) == "unchanged"
    async with build_worker(client, settings), caller_worker(caller) as queue:
        approved = await start_job(caller, queue, endpoint, out, "notes.txt")
        rid = histories.track(nexus_request_id(caller.namespace, approved.id, "write"))
        [row] = await wait_pending(settings.approvals_db, rid, 1)
        assert row["tool_name"] == "write_file"
        listed = await run_cli(settings, client, "pending", "--json")
        [card] = [r for r in json.loads(listed.stdout) if r["request_id"] == rid]
        assert card["tool"]["annotations"]["requester"]["workflow_id"] == approved.id
        assert card["tool"]["annotations"]["context"] == "the release needs its notes"
        link = with_requester_link(settings, card)["requester_url"]
        assert link.endswith(f"/namespaces/{caller.namespace}/workflows/{approved.id}"), "the caller's namespace"

        done = await run_cli(settings, client, "approve", rid, "--as", "bob")
        assert done.returncode == 0, done.stderr
        result = JobOutcome.model_validate(await approved.result())
        assert (result.approval.decision, result.approval.decided_by, result.approval.door) == ("allow", "bob", "cli")
        assert result.approval == await client.get_workflow_handle(rid, result_type=ApprovalResult).result()
        assert result.wrote and (out / "notes.txt").read_text() == "v2", "written once, after the approval"

        denied = await start_job(caller, queue, endpoint, out, "denied.txt")
        denied_id = histories.track(nexus_request_id(caller.namespace, denied.id, "write"))
        await wait_pending(settings.approvals_db, denied_id, 1)
        done = await run_cli(settings, client, "deny", denied_id, "--reason", "not in the freeze", "--as", "bob")
        assert done.returncode == 0, done.stderr
        result = JobOutcome.model_validate(await denied.result())
        assert (result.approval.decision, result.approval.reason, result.wrote) == ("deny", "not in the freeze", False)
        assert result.approval.decided_by == "bob"

    assert approval_row(settings.approvals_db, rid)["decision"] == "allow"
    assert approval_row(settings.approvals_db, denied_id)["reason"] == "not in the freeze"
    assert not (out / "denied.txt").exists()


async def test_a_retried_caller_is_not_asked_again_and_a_canceled_caller_cancels_its_request(
    client: Client, settings: Settings, histories: HistoryRecorder, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    caller = await second_namespace(client)
    endpoint = f"approvals-{uuid.uuid4().hex[:8]}"
    assert await ensure_endpoint(client, client.namespace, "elsewhere", endpoint) == "created"
    assert await ensure_endpoint(client, client.namespace, settings.task_queue, endpoint) == "retargeted"
    async with build_worker(client, settings), caller_worker(caller) as queue:
        first = await start_job(caller, queue, endpoint, out, "notes.txt")
        rid = histories.track(nexus_request_id(caller.namespace, first.id, "write"))
        await wait_pending(settings.approvals_db, rid, 1)
        done = await run_cli(settings, client, "approve", rid, "--as", "bob")
        assert done.returncode == 0, done.stderr
        assert JobOutcome.model_validate(await first.result()).wrote

        # The same pipeline run again under its id names the same request: decided, never reopened.
        retried = await start_job(caller, queue, endpoint, out, "notes.txt", workflow_id=first.id)
        with pytest.raises(WorkflowFailureError) as failed:
            await retried.result()
        assert f"approval request {rid} was already decided" in causes(failed.value)
        assert (out / "notes.txt").read_text() == "v2", "the write ran once"
        decisions = rows(settings.approvals_db, "SELECT decision FROM ui_pending_approvals WHERE request_id = ?", rid)
        assert decisions == [{"decision": "allow"}], "one request, still decided as it was"

        canceled = await start_job(caller, queue, endpoint, out, "gone.txt")
        canceled_id = histories.track(nexus_request_id(caller.namespace, canceled.id, "write"))
        await wait_pending(settings.approvals_db, canceled_id, 1)
        await canceled.cancel()
        with pytest.raises(WorkflowFailureError):
            await canceled.result()

        async def canceled_in_the_read_model() -> bool:
            return approval_row(settings.approvals_db, canceled_id)["decision"] == "canceled"

        await eventually(canceled_in_the_read_model)
    assert not (out / "gone.txt").exists()


def causes(err: BaseException | None) -> str:
    found = []
    while err is not None:
        found.append(str(err))
        err = err.__cause__
    return " <- ".join(found)
