"""The data directory's disk fills while decisions and tools are in flight, and gets room again: the
CLI says in one line why it could not record a decision, no tool runs while the ledger cannot
record it, a tool that was running keeps its result, and everything goes on by itself once there
is room (tests/faults/disk_faults.py)."""

from __future__ import annotations

import os
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from cli.errors import EXIT_FAILED, EXIT_OK
from config.settings import Settings
from storage.store import ProjectionStore
from tests.faults.disk_faults import DiskFullSeen, run_disk_full
from tests.support.small_volume import SmallVolume
from tests.support.ui_fixtures import api_client, seed_pending


def address(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


async def test_a_full_data_directory_refuses_decisions_in_one_line_and_loses_nothing(
    env: WorkflowEnvironment, tmp_path: Path
) -> None:
    seen = DiskFullSeen()
    # A tmpfs of the test's own where mount is allowed; else a file size limit on the worker and CLI.
    outcome = await run_disk_full(tmp_path, address(env), conversations=2, stores="data_dir", seen=seen)
    outcome.assert_clean()
    assert seen.cli_during is not None
    # Each decision the CLI could not record: one line naming the full store, and nothing decided.
    assert seen.cli_during.returncode == EXIT_FAILED, seen.cli_during
    errors = seen.cli_during.stderr.splitlines()
    assert len(errors) == len(seen.decided_during_fault), errors
    for request_id, line in zip(seen.decided_during_fault, errors, strict=True):
        assert line.startswith(f"error: {request_id}: not decided: the read model (APPROVALS_DB) at "), line
        assert "cannot be written: " in line
        assert seen.volume_kind != "tmpfs" or line.endswith("its disk is full"), line
    assert seen.ran_during_fault == 0  # nothing decided while the disk was full ran
    # The tool that was running when the disk filled ran once, and its result waited for room.
    assert "ran: its result is kept once the ledger records it: the ledger (LEDGER_DB) at " in seen.worker_log
    assert "stored after" in seen.worker_log
    assert all(messages == ["exit code 0\n"] for messages in seen.tool_messages.values()), seen.tool_messages


async def test_a_ledger_that_cannot_be_written_holds_its_tools_until_it_can(
    env: WorkflowEnvironment, tmp_path: Path
) -> None:
    seen = DiskFullSeen()
    # The fallback where mount is refused, made here on purpose: a file size limit on the worker.
    outcome = await run_disk_full(tmp_path, address(env), conversations=2, stores="ledger", how="rlimit", seen=seen)
    outcome.assert_clean()
    assert seen.volume_kind == "rlimit"
    assert seen.cli_during is not None
    assert seen.cli_during.returncode == EXIT_OK, seen.cli_during  # the read model took the decisions
    # Fails closed: the decided tools did not start while the ledger could not record them, and said so.
    assert seen.ran_during_fault == 0
    for request_id in seen.decided_during_fault:
        line = f"not running {request_id} until the ledger records it: the ledger (LEDGER_DB) at "
        assert line in seen.worker_log, seen.worker_log[-3000:]


async def test_the_inbox_says_on_the_card_that_a_decision_could_not_be_recorded(
    env: WorkflowEnvironment, tmp_path: Path
) -> None:
    with SmallVolume(tmp_path / "volume") as volume:
        settings = Settings(
            approvals_db=volume.path / "approvals.db", workspace_dir=tmp_path / "workspace", payload_store=str(tmp_path)
        )
        request_id = await seed_pending(settings, "conv-full-disk")
        worker = ProjectionStore(settings.approvals_db)  # holds its writer open, as a running worker does
        await worker.backend.run(lambda tx: tx.execute("SELECT 1"))
        volume.limit(os.getpid())  # without a mount, this process's own writes meet the limit
        async with api_client(settings, env.client) as http:
            volume.fill()
            try:
                refused = await http.post(f"/api/approvals/{request_id}/decision", json={"decision": "allow"})
            finally:
                volume.free()
            listed = await http.get("/api/approvals?status=pending")
        await worker.close()
    error = refused.json()["error"]
    assert refused.status_code == 503 and error["type"] == "StoreFull", refused.text
    assert error["message"].startswith("the read model (APPROVALS_DB) at "), error  # what the card shows
    assert "cannot be written: " in error["message"]
    assert [row["request_id"] for row in listed.json()] == [request_id]  # nothing was decided
