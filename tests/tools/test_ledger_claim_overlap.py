"""The execution ledger's claim is taken while an approved command's sandbox launch is prepared,
and the command starts only once the claim is this attempt's: never when an earlier attempt
started it or finished it, though the launch was prepared."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities import sandbox_run
from activities.ledger import Claim, Ledger
from activities.sandbox import SandboxPolicy
from activities.tools import ToolActivities
from activities.workspaces import workspace_for
from core.tool_run_model import ToolRequest, ToolResult
from storage.store import ProjectionStore

CLAIM_SECONDS = 0.3  # the claim is held this long, so the order of events is plain to see
# The launch's preparation is held this long too: prepared in under a millisecond, it could end
# before the claim's statement was even sent, and the overlap not show.
PREPARE_SECONDS = 0.2


class SlowLedger(Ledger):
    """The real ledger, its claim held CLAIM_SECONDS, with when it started and ended."""

    def __init__(self, location: Path) -> None:
        super().__init__(location)
        self.claims: list[tuple[float, float]] = []

    def begin_at_once(self, request_id: str, tool_name: str, attempt: int) -> Claim | None:
        return None  # a claim that cannot be taken at once (as on PostgreSQL): `begin`, beside the launch

    async def begin(self, request_id: str, tool_name: str, attempt: int) -> Claim:
        started = time.time()
        await asyncio.sleep(CLAIM_SECONDS)
        claim = await super().begin(request_id, tool_name, attempt)
        self.claims.append((started, time.time()))
        return claim


@pytest.fixture
async def tools(tmp_path: Path) -> AsyncIterator[tuple[ToolActivities, SlowLedger, Path]]:
    workspace_dir = tmp_path / "workspace"
    ledger, projection = SlowLedger(tmp_path / "ledger.db"), ProjectionStore(tmp_path / "approvals.db")
    try:
        yield ToolActivities(workspace_dir, ledger, projection, sandbox=SandboxPolicy()), ledger, workspace_dir
    finally:
        await ledger.close()
        await projection.close()


def shell(request_id: str, command: str) -> ToolRequest:
    return ToolRequest(
        conversation_id="c1",
        turn_id="turn_1",
        tool_call_id=f"call_{request_id}",
        request_id=request_id,
        tool_name="run_shell",
        arguments={"command": command},
        workspace="c1",
    )


def recorded_launches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float]]:
    """When each sandbox launch's preparation started and ended (held PREPARE_SECONDS)."""
    prepared: list[tuple[float, float]] = []
    prepare = sandbox_run.counted_launch

    def timed(*args: Any) -> Any:
        started = time.time()
        try:
            time.sleep(PREPARE_SECONDS)
            return prepare(*args)
        finally:
            prepared.append((started, time.time()))

    monkeypatch.setattr(sandbox_run, "counted_launch", timed)
    return prepared


# The preparation runs on the event loop once the launcher is chosen (a quarter of a millisecond),
# on a worker thread when it must first probe the launchers or hand a workspace's tree over.
@pytest.mark.parametrize("on_the_loop", [True, False], ids=["on the loop", "on a thread"])
async def test_the_claim_is_taken_while_the_launch_is_prepared_and_the_command_waits_for_it(
    tools: tuple[ToolActivities, SlowLedger, Path], monkeypatch: pytest.MonkeyPatch, on_the_loop: bool
) -> None:
    activities, ledger, workspace_dir = tools
    prepared = recorded_launches(monkeypatch)
    monkeypatch.setattr(sandbox_run, "quick_to_launch", lambda *_: on_the_loop)
    result = await ActivityEnvironment().run(activities.execute_tool, shell("r1", "date +%s.%N > started"))

    assert result.content.startswith("exit code 0"), result
    ((claim_started, claim_ended),) = ledger.claims
    ((prepare_started, prepare_ended),) = prepared
    command_started = float((workspace_for(workspace_dir, "c1") / "started").read_text())
    assert prepare_started < claim_ended and claim_started < prepare_ended  # the two overlapped
    assert command_started >= claim_ended  # the command waited for the claim
    assert await ledger.claim("r1", "run_shell", 2) == Claim(
        "finished", ToolResult(content=result.content)
    )  # and the ledger holds its result


@pytest.mark.parametrize("earlier", ["started", "finished"])
async def test_a_claim_that_is_not_this_attempts_means_the_prepared_command_never_starts(
    tools: tuple[ToolActivities, SlowLedger, Path], monkeypatch: pytest.MonkeyPatch, earlier: str
) -> None:
    activities, ledger, workspace_dir = tools
    recorded = ToolResult(content="exit code 0\nfrom the first attempt\n")
    assert (await ledger.begin("r2", "run_shell", 1)).verdict == "run"  # an earlier attempt started it
    if earlier == "finished":
        await ledger.finish("r2", recorded)
    prepared = recorded_launches(monkeypatch)
    environment = ActivityEnvironment()
    environment.info = environment.info.__class__(**{**environment.info.__dict__, "attempt": 2})
    result = await environment.run(activities.execute_tool, shell("r2", "echo ran >> ran.log"))

    assert len(prepared) == 1  # the launch was prepared while the claim was taken ...
    assert not (workspace_for(workspace_dir, "c1") / "ran.log").exists()  # ... and never started
    if earlier == "finished":
        assert result == recorded
    else:
        assert "unknown" in result.content.lower(), result


async def test_with_the_sandbox_off_a_write_waits_for_the_claim_too(tmp_path: Path) -> None:
    workspace_dir = tmp_path / "workspace"
    ledger, projection = SlowLedger(tmp_path / "ledger.db"), ProjectionStore(tmp_path / "approvals.db")
    activities = ToolActivities(workspace_dir, ledger, projection, sandbox=SandboxPolicy(enabled=False))
    write = shell("r3", "").model_copy(
        update={"tool_name": "write_file", "arguments": {"path": "notes.txt", "content": "hello"}}
    )
    try:
        assert (await ledger.begin("r3", "write_file", 1)).verdict == "run"  # an earlier attempt started it
        environment = ActivityEnvironment()
        environment.info = environment.info.__class__(**{**environment.info.__dict__, "attempt": 2})
        unknown = await environment.run(activities.execute_tool, write)
        assert not (workspace_for(workspace_dir, "c1") / "notes.txt").exists()  # this attempt wrote nothing
        another = write.model_copy(update={"request_id": "r4"})
        written = await ActivityEnvironment().run(activities.execute_tool, another)
    finally:
        await ledger.close()
        await projection.close()

    assert "unknown" in unknown.content.lower(), unknown
    assert written.content == "Wrote 5 bytes to notes.txt", written
    assert (workspace_for(workspace_dir, "c1") / "notes.txt").read_text() == "hello"
    assert len(ledger.claims) == 3  # each attempt claimed; only r4's was its own, and only it wrote
