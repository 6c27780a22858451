"""An approval request is a workflow: a plain workflow of another team asks for a write through
`request_approval`, the request shows in the read model and `pending` with its requester, and
every door's decision (approve, deny with a reason, edit, expiry, the caller's cancel) reaches
the caller as a typed result, once."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.worker import Worker

from config.settings import Settings
from durable_approvals import derived_request_id
from tests.conftest import HistoryRecorder
from tests.support.caller_workflows import JobOutcome, ReleasePipeline, WriteJob, write_release_file
from tests.support.helpers import approval_row, eventually, rows, wait_pending
from tests.support.processes import run_cli
from tests.support.stack import one_line
from tests.support.ui_fixtures import add_person, api_client
from worker import build_worker

GATED = """
ask = ["write_file"]
deny = ["write_file(.git/**)"]

[[approvers]]
match = ["write_file(deploy/**)"]
approvers = ["alice"]
"""


@pytest.fixture
def gated(settings: Settings, tmp_path: Path) -> Settings:
    policy = tmp_path / "policy.toml"
    policy.write_text(GATED)
    return replace(settings, policy_file=str(policy))


@asynccontextmanager
async def callers(client: Client) -> AsyncIterator[str]:
    """The other team's worker, on its own task queue, running only its pipeline."""
    queue = f"callers-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[ReleasePipeline], activities=[write_release_file]):
        yield queue


async def start_job(client: Client, queue: str, settings: Settings, out: Path, **job: object) -> WorkflowHandle:
    job_id = str(job.pop("job_id", f"release-{uuid.uuid4().hex[:8]}"))
    spec = WriteJob(
        path=str(job.pop("path", "notes.txt")),
        content=str(job.pop("content", "v2")),
        out_dir=str(out),
        approvals_queue=settings.task_queue,
        **job,  # type: ignore[arg-type]
    )
    return await client.start_workflow(ReleasePipeline.run, spec, id=job_id, task_queue=queue)


async def outcome(handle: WorkflowHandle) -> JobOutcome:
    return JobOutcome.model_validate(await handle.result())


async def test_a_plain_workflow_asks_and_each_door_decides_once(
    client: Client, gated: Settings, histories: HistoryRecorder, tmp_path: Path
) -> None:
    settings, out = gated, tmp_path / "out"
    out.mkdir()
    async with build_worker(client, settings), callers(client) as queue, api_client(settings, client) as http:
        approved = await start_job(client, queue, settings, out, path="notes.txt", content="v2")
        rid = histories.track(derived_request_id(approved.id, "write"))
        [row] = await wait_pending(settings.approvals_db, rid, 1)
        assert (row["tool_name"], json.loads(row["details_json"])["arguments"]) == (
            "write_file",
            {"path": "notes.txt", "content": "v2"},
        )
        listed = await run_cli(settings, client, "pending", "--json")
        [card] = [r for r in json.loads(listed.stdout) if r["request_id"] == rid]
        assert card["tool"]["annotations"]["requester"]["workflow_id"] == approved.id
        assert card["tool"]["annotations"]["context"] == "the release needs its notes"
        assert card["tool"]["source"] == "external" and card["tool"]["origin"] == "release-pipeline"
        shown = (await http.get(f"/api/approvals/{rid}")).json()
        assert shown["requester_url"].endswith(f"/workflows/{approved.id}"), "a link to the asking workflow"

        done = await run_cli(settings, client, "approve", rid, "--as", "bob")
        assert done.returncode == 0, done.stderr
        result = await outcome(approved)
        assert (result.approval.decision, result.approval.decided_by, result.approval.door) == ("allow", "bob", "cli")
        assert result.wrote and (out / "notes.txt").read_text() == "v2", "written once, after the approval"
        assert (result.effect.state, result.effect.result) == ("ran", 2)
        again = await run_cli(settings, client, "deny", rid, "--reason", "late", "--as", "bob")
        assert again.returncode == 3 and "already resolved: allow by bob" in one_line(again.stderr)

        # The caller runs again under the same id (a retry): the same request, decided, and the
        # effect the ledger recorded, not a second write.
        retried = await outcome(await start_job(client, queue, settings, out, job_id=approved.id))
        assert retried.approval == result.approval, "the decided request, not a new one"
        assert (retried.effect.state, retried.effect.result) == ("already_ran", 2)
        assert (out / "notes.txt").read_text() == "v2", "written once"
        assert len(rows(settings.approvals_db, "SELECT 1 FROM ui_pending_approvals WHERE request_id = ?", rid)) == 1

        denied = await start_job(client, queue, settings, out, path="denied.txt")
        denied_id = histories.track(derived_request_id(denied.id, "write"))
        await wait_pending(settings.approvals_db, denied_id, 1)
        answer = await http.post(
            f"/api/approvals/{denied_id}/decision", json={"decision": "deny", "reason": "not in the freeze"}
        )
        assert answer.status_code == 200, answer.text
        result = await outcome(denied)
        assert (result.approval.decision, result.approval.reason, result.wrote) == ("deny", "not in the freeze", False)

        edited = await start_job(client, queue, settings, out, path="edit.txt", content="draft")
        edited_id = histories.track(derived_request_id(edited.id, "write"))
        await wait_pending(settings.approvals_db, edited_id, 1)
        done = await run_cli(settings, client, "edit", edited_id, "--set", "content=final", "--as", "bob")
        assert done.returncode == 0, done.stderr
        result = await outcome(edited)
        assert result.approval.decision == "edit"
        assert result.approval.arguments == {"path": "edit.txt", "content": "final"}
        assert (out / "edit.txt").read_text() == "final", "the edited arguments ran, not the proposed ones"

        gated_job = await start_job(client, queue, settings, out, path="deploy/app.yaml", content="x")
        gated_id = histories.track(derived_request_id(gated_job.id, "write"))
        (out / "deploy").mkdir()
        await wait_pending(settings.approvals_db, gated_id, 1)
        await add_person(settings, "alice", [])
        refused = await run_cli(settings, client, "approve", gated_id, "--as", "mallory")
        assert refused.returncode == 3 and "may not decide" in one_line(refused.stderr)
        allowed = await run_cli(settings, client, "approve", gated_id, "--as", "alice")
        assert allowed.returncode == 0, allowed.stderr
        assert (await outcome(gated_job)).approval.decided_by == "alice"

        forbidden = await start_job(client, queue, settings, out, path=".git/config")
        result = await outcome(forbidden)
        assert (result.approval.decision, result.approval.door, result.wrote) == ("deny", "policy", False)

    assert approval_row(settings.approvals_db, rid)["decision"] == "allow"
    assert approval_row(settings.approvals_db, denied_id)["reason"] == "not in the freeze"
    assert not (out / "denied.txt").exists() and not (out / ".git").exists()


async def test_a_request_expires_and_one_whose_caller_is_canceled_is_canceled(
    client: Client, settings: Settings, histories: HistoryRecorder, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    async with build_worker(client, settings), callers(client) as queue:
        expiring = await start_job(client, queue, settings, out, path="late.txt", timeout_seconds=2)
        expiring_id = histories.track(derived_request_id(expiring.id, "write"))
        result = await outcome(expiring)
        assert (result.approval.decision, result.approval.decided_by, result.wrote) == ("expired", "timeout", False)

        canceled = await start_job(client, queue, settings, out, path="gone.txt")
        canceled_id = histories.track(derived_request_id(canceled.id, "write"))
        await wait_pending(settings.approvals_db, canceled_id, 1)
        await canceled.cancel()
        with pytest.raises(WorkflowFailureError):
            await canceled.result()

        async def canceled_in_the_read_model() -> bool:
            return approval_row(settings.approvals_db, canceled_id)["decision"] == "canceled"

        await eventually(canceled_in_the_read_model)

    assert approval_row(settings.approvals_db, expiring_id)["decision"] == "expired"
    assert not (out / "late.txt").exists() and not (out / "gone.txt").exists()


TWO_PERSON = """
ask = ["write_file"]

[[approvers]]
match = ["write_file(prod/**)"]
approvers = ["group:sre"]
required = 2
"""


async def test_a_two_person_rule_holds_and_two_doors_at_once_give_one_winner(
    client: Client, settings: Settings, histories: HistoryRecorder, tmp_path: Path
) -> None:
    policy = tmp_path / "two.toml"
    policy.write_text(TWO_PERSON)
    settings = replace(settings, policy_file=str(policy))
    out = tmp_path / "out"
    (out / "prod").mkdir(parents=True)
    for name in ("sam", "sid"):
        await add_person(settings, name, ["sre"])
    async with build_worker(client, settings), callers(client) as queue:
        job = await start_job(client, queue, settings, out, path="prod/app.yaml", content="v3")
        rid = histories.track(derived_request_id(job.id, "write"))
        await wait_pending(settings.approvals_db, rid, 1)
        first = await run_cli(settings, client, "approve", rid, "--as", "sam")
        assert first.returncode == 0, first.stderr
        twice = await run_cli(settings, client, "approve", rid, "--as", "sam")
        assert twice.returncode == 3 and "sam already approved" in one_line(twice.stderr)
        assert approval_row(settings.approvals_db, rid)["decision"] is None, "one approval of two: it waits"
        # The second approver and a deny, at the same moment, from two processes.
        approve, deny = await asyncio.gather(
            run_cli(settings, client, "approve", rid, "--as", "sid"),
            run_cli(settings, client, "deny", rid, "--reason", "hold the release", "--as", "sam"),
        )
        assert sorted([approve.returncode, deny.returncode]) == [0, 3], (approve.stderr, deny.stderr)
        result = await outcome(job)

    if approve.returncode == 0:
        assert (result.approval.decision, result.approval.decided_by) == ("allow", "sam, sid")
        assert (out / "prod" / "app.yaml").read_text() == "v3"
    else:
        assert (result.approval.decision, result.approval.reason) == ("deny", "hold the release")
        assert not (out / "prod" / "app.yaml").exists()
    assert approval_row(settings.approvals_db, rid)["decision"] == result.approval.decision
